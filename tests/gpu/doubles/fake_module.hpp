// A kernel<F> for tests that run on every device: registered as a host
// function on sim and cpu; on cuda and levelzero (the drivers' doubles in
// the tests) loaded from a module of the doubles' format that names the
// same host function by address, so the double runs it as GPU code.
#pragma once

#include <adsm.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace adsm_test {

// ADSM_DEVICE lists devices of one back-end alone (cuda, cuda,cuda).
inline bool lists_only(const char *backend) {
    const char *d = getenv("ADSM_DEVICE");
    const size_t n = strlen(backend);
    if (!d || !*d) return false;
    for (const char *p = d; *p;) {
        if (strncmp(p, backend, n) != 0 || (p[n] != ',' && p[n] != 0)) return false;
        p += p[n] ? n + 1 : n;
    }
    return true;
}
inline bool on_cuda() { return lists_only("cuda"); }
inline bool on_levelzero() { return lists_only("levelzero"); }

// A GPU back-end: kernels are GPU code from modules.
inline bool on_gpu() { return on_cuda() || on_levelzero(); }

template <auto F>
adsm::kernel<F> device_kernel(const char *name) {
    if (!on_gpu()) return adsm::kernel<F>(name);
    using sig = adsm::detail::kernel_signature<decltype(F)>;
    std::size_t sizes[sig::arity + 1] = {};
    sig::sizes(sizes, std::make_index_sequence<sig::arity>{});
    char image[512];
    int at = snprintf(image, sizeof image, "fake-module:%s@%p:", name,
                      reinterpret_cast<void *>(&adsm::kernel<F>::host_function));
    for (std::size_t i = 0; i < sig::arity; ++i)
        at += snprintf(image + at, sizeof image - static_cast<std::size_t>(at), "%s%zu", i ? "," : "", sizes[i]);
    adsm::module m(image, strlen(image) + 1);
    adsmKernel_t k;
    // Level Zero reports no parameter sizes: they are stated, and checked
    // against the driver's where it reports them (cuda).
    adsm::check(adsmModuleGetKernelWithParams(m.handle(), name, static_cast<unsigned>(sig::arity), sizes, &k));
    return adsm::kernel<F>(k);
}

}  // namespace adsm_test
