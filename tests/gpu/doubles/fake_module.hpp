// A kernel<F> for tests that run on every device: registered as a host
// function on sim and cpu; on cuda (the CUDA driver double in the tests)
// loaded from a module of the double's format that names the same host
// function by address, so the double runs it as GPU code.
#pragma once

#include <adsm.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace adsm_test {

inline bool on_cuda() {
    const char *d = getenv("ADSM_DEVICE");
    return d && strcmp(d, "cuda") == 0;
}

template <auto F>
adsm::kernel<F> device_kernel(const char *name) {
    if (!on_cuda()) return adsm::kernel<F>(name);
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
    adsm::check(adsmModuleGetKernel(m.handle(), name, &k));
    return adsm::kernel<F>(k);
}

}  // namespace adsm_test
