// How many times this thread has switched stacks with setcontext or
// swapcontext (interpose/signals.cpp counts them).  Code that judges which
// of its frames are gone by their place on the stack (interpose/staging.cpp)
// cannot across a switch: the new stack may lie anywhere.
#pragma once

#include <cstdint>

namespace adsm::os {

inline __attribute__((tls_model("initial-exec"))) thread_local uint64_t tls_stack_switches = 0;

inline void note_stack_switch() { ++tls_stack_switches; }
inline uint64_t stack_switches() { return tls_stack_switches; }

}  // namespace adsm::os
