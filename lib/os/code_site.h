// Names code for people: "function+0x1c (module)" for an address, and a
// short call chain for the code that took a fault, unwound with libunwind
// from the signal's context (it reads the modules' full symbol tables, so
// functions of executables built without -rdynamic get their names too).
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::os {

// Writes up to `frames` frames of the faulting code's call chain into buf,
// innermost first, separated by " <- ".
void describe_fault_site(void *ucontext, int frames, char *buf, size_t len);

}  // namespace adsm::os
