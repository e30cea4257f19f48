#include "os/driver_objects.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <mutex>

namespace adsm::os {
namespace {

// A driver is a few objects (libcuda, or the loader with its driver and
// that one's helpers): room for several drivers.
constexpr unsigned kMaxDriverObjects = 64;
uintptr_t g_objects[kMaxDriverObjects];
std::atomic<unsigned> g_count{0};
std::mutex g_noting;  // two back-ends may start at once

void note(uintptr_t load_address) {
    std::lock_guard<std::mutex> hold(g_noting);
    if (load_address == 0 || is_driver_object(load_address)) return;  // (0: a program linked at 0, never a driver)
    unsigned i = g_count.load(std::memory_order_relaxed);
    if (i == kMaxDriverObjects) return;  // scanned as any other: kept objects, no harm
    g_objects[i] = load_address;
    g_count.store(i + 1, std::memory_order_release);
}

// Each loaded object's load address, under the loader's lock (another
// thread's dlclose cannot free an entry meanwhile).
template <class F>
void for_each_object(F f) {
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *arg) {
            (*static_cast<F *>(arg))(static_cast<uintptr_t>(info->dlpi_addr));
            return 0;
        },
        &f);
}

}  // namespace

DriverLoading::DriverLoading() {
    for_each_object([&](uintptr_t at) {
        if (nbefore_ < kBefore) before_[nbefore_++] = at;
        else complete_ = false;
    });
}

DriverLoading::~DriverLoading() {
    if (!complete_) return;  // what is new cannot be told
    for_each_object([&](uintptr_t at) {
        for (unsigned i = 0; i < nbefore_; ++i)
            if (before_[i] == at) return;
        note(at);
    });
}

void DriverLoading::opened(void *handle) {
    link_map *m = nullptr;
    if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &m) == 0 && m) note(m->l_addr);
}

bool is_driver_object(uintptr_t load_address) {
    const unsigned n = g_count.load(std::memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
        if (g_objects[i] == load_address) return true;
    return false;
}

}  // namespace adsm::os
