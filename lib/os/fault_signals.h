// The runtime's one handler for synchronous fault signals (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL).  Layers register hooks that claim the faults they own (a
// kernel that crashed on the device, a protected shared page); every other
// fault goes to the handler the application installed, or gets the default
// action, exactly as if the runtime were not there.
//
// The application keeps installing its own handlers: the interposed
// sigaction and signal record them here as the chain target (see
// app_sigaction) instead of displacing the runtime's handler.
//
// Everything reachable from the handler is async-signal-safe: hooks live in a
// fixed array read with atomic loads; chain targets are double-buffered.
#pragma once

#include <signal.h>

namespace adsm::os {

// Returns true if it dealt with the fault and execution may resume.
using FaultHook = bool (*)(int sig, siginfo_t *info, void *ucontext);

// How deep the calling thread is in the runtime's fault handler (a fault
// handled inside another counts twice): code that may run there and must
// not call what is not async-signal-safe (a GPU driver) asks.
inline thread_local int fault_handler_depth __attribute__((tls_model("initial-exec"))) = 0;
inline bool in_fault_handler() { return fault_handler_depth > 0; }

// Installs the handler for sig (idempotent), remembering the one it displaces
// as the chain target.  on_alt_stack makes it run on the thread's alternate
// signal stack, which only threads that run kernels need (to report a
// kernel's stack overflow); other threads' handlers run on their own stack,
// whatever small alternate stack the application (or a sanitizer) set up.
// Returns 0 or -errno.
int install_fault_handler(int sig, bool on_alt_stack = false);

// Adds a hook; hooks run in the order added.  Returns false if full.
bool add_fault_hook(FaultHook hook);

// Passes a fault on to the application's handler or the default action.
void chain_fault(int sig, siginfo_t *info, void *ucontext);

// From a fault handler: the access at addr cannot be satisfied.  Runs the
// program's SIGBUS handler as the kernel would (the access is retried if it
// returns), or ends the process with SIGBUS.
void deliver_bus_error(void *addr, void *ucontext);

// sigaction as the application sees it for a signal whose handler the
// runtime owns: reports and replaces the chain target.  Returns false (and
// does nothing) for signals the runtime does not own.
bool app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

// Runs the program's handler in `act`, if it has one, as the kernel would;
// false if it has none (the default action or ignored).
bool run_program_handler(const struct sigaction &act, int sig, siginfo_t *info, void *ucontext);

// Gives the calling thread an alternate signal stack, so that a stack
// overflow still reaches the handler.  Idempotent per thread.
void ensure_alt_stack();

}  // namespace adsm::os
