// How every interposed C library function is written, in the manner of the
// sanitizers' interceptors: INTERCEPTOR defines the exported replacement
// (exported through lib/adsm.map), and REAL(name) calls the definition that
// follows ours in lookup order, the C library's, resolved once per call site.
#pragma once

#include "os/next_symbol.h"

#define INTERCEPTOR(ret, name, ...) extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__)

#define REAL(name)                                                                                   \
    ([]() -> decltype(&::name) {                                                                     \
        static const auto fn = reinterpret_cast<decltype(&::name)>(::adsm::os::next_symbol(#name)); \
        return fn;                                                                                   \
    }())
