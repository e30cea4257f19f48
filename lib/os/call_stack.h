// The program's call stack at a point where it entered the runtime (a fault,
// an API call, an interposed call), and names for its code addresses.  The
// runtime's own frames are left out, so the innermost frame is the
// program's code that caused the work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace adsm::os {

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

}  // namespace adsm::os
