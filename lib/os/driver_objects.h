// The loaded objects a device's driver consists of: the library the
// runtime opens for it (libcuda, the Level Zero loader) and whatever that
// loads while it starts (the loader's GPU driver).  Their data is the
// driver's bookkeeping, not the program's: it holds the host ranges the
// runtime pinned for copies, so the collector, scanning it as a root,
// kept every collected object ever pinned alive for good.  The collector
// leaves these objects out (gc/roots.cpp).  Libraries a driver loads later,
// at its first use of something, are not known here.
#pragma once

#include <cstdint>

namespace adsm::os {

// Notes, from construction to destruction, every object loaded meanwhile
// as a driver's.  Not in a signal handler: it walks the loader's lists.
class DriverLoading {
public:
    DriverLoading();
    ~DriverLoading();
    DriverLoading(const DriverLoading &) = delete;
    DriverLoading &operator=(const DriverLoading &) = delete;

    // The object dlopen() returned for the driver: a driver's even when the
    // program had loaded it before.
    void opened(void *handle);

private:
    static constexpr unsigned kBefore = 1024;
    uintptr_t before_[kBefore];  // the load addresses of the objects loaded before
    unsigned nbefore_ = 0;
    bool complete_ = true;  // all of them fit
};

// Whether the object loaded at this address (dl_phdr_info's dlpi_addr) is
// a driver's.  Lock-free: read with the world stopped.
bool is_driver_object(uintptr_t load_address);

}  // namespace adsm::os
