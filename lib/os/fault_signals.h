// The runtime's one handler for synchronous fault signals (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL).  Layers register hooks that claim the faults they own (a
// kernel that crashed on the device, a protected shared page); every other
// fault goes to the handler the application had installed, or gets the
// default action, exactly as if the runtime were not there.
//
// Everything reachable from the handler is async-signal-safe: hooks live in a
// fixed array and are read with atomic loads.
#pragma once

#include <signal.h>

namespace adsm::os {

// Returns true if it dealt with the fault and execution may resume.
using FaultHook = bool (*)(int sig, siginfo_t *info, void *ucontext);

// Installs the handler for sig (idempotent), remembering the one it displaces
// as the chain target.  Returns 0 or -errno.
int install_fault_handler(int sig);

// Adds a hook; hooks run in the order added.  Returns false if full.
bool add_fault_hook(FaultHook hook);

// Passes a fault on to the application's handler or the default action.
void chain_fault(int sig, siginfo_t *info, void *ucontext);

// Gives the calling thread an alternate signal stack, so that a stack
// overflow still reaches the handler.  Idempotent per thread.
void ensure_alt_stack();

}  // namespace adsm::os
