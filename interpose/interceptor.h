// How every interposed C library function is written, in the manner of the
// sanitizers' interceptors: INTERCEPTOR(ret, name, args) defines the
// exported replacement (exported through lib/adsm.map) together with its
// entry in the table of real functions (os/real_table.h), which is resolved
// at load to the definition that follows libadsm in lookup order: the C
// library's, or another preloaded library's (an allocator's).  REAL(name)
// calls that definition.  DECLARE_REAL(name) lets REAL be used above the
// INTERCEPTOR.
//
// GPU driver functions are the other kind of real function (gpu_symbols.h):
// a driver is loaded, if ever, after the runtime, so they are found on
// first use, through the same dlsym.
#pragma once

#include "os/real_table.h"

#define DECLARE_REAL(name)                        \
    namespace adsm::interpose::real {             \
    extern ::adsm::os::RealFunction name;         \
    }

#define INTERCEPTOR(ret, name, ...)                \
    namespace adsm::interpose::real {              \
    ADSM_REAL_FUNCTION(name, #name);               \
    }                                              \
    extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__)

#define REAL(name) reinterpret_cast<decltype(&::name)>(::adsm::os::real(::adsm::interpose::real::name))
