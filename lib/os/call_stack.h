// The program's call stack at a point where it entered the runtime (a fault,
// an API call, an interposed call), and names for its code addresses: the
// runtime's own frames are left out, so the innermost frame is the
// program's code that caused the work.  And a short call chain named on the
// spot, for warnings about a fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace adsm::os {

// Loads libunwind, which program_stack and describe_fault_site unwind with
// (without it they find no frames).  The runtime's start calls it, outside
// any signal handler; false when the library cannot be loaded.
bool load_unwinder();

// Finds the runtime's own code (the loaded module holding this function),
// to be skipped by program_stack.  Call once before program_stack.
void find_runtime_code();

// Writes up to `max` code addresses of the program's frames, innermost
// first, unwound from a signal's context (`ucontext`) or from the caller
// (nullptr).  Return addresses are moved back into their call instruction so
// that they name the line of the call.  Async-signal-safe.
int program_stack(void *ucontext, uintptr_t *ips, int max);

// Names each address for a person: "function at file:line" where debug
// information and addr2line are available, else "function+0x1c (module)".
std::vector<std::string> describe_code(const std::vector<uintptr_t> &ips);

// Writes up to `frames` frames of the faulting code's call chain into buf,
// innermost first, separated by " <- ", as "function+0x1c (module)": named
// from the modules' full symbol tables (os/safe_symbolize.h), so functions
// of executables built without -rdynamic get their names too.  For the
// fault handler: C++ names stay mangled (demangling allocates), and nothing
// but libunwind's signal-safe local unwinding and system calls run.
void describe_fault_site(void *ucontext, int frames, char *buf, size_t len);

}  // namespace adsm::os
