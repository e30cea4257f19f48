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

#include <cstdint>

namespace adsm::os {

// Returns true if it dealt with the fault and execution may resume.
using FaultHook = bool (*)(int sig, siginfo_t *info, void *ucontext);

// How deep the calling thread is in the runtime's fault handler (a fault
// handled inside another counts twice): code that may run there and must
// not call what is not async-signal-safe (a GPU driver) asks.
inline thread_local int fault_handler_depth __attribute__((tls_model("initial-exec"))) = 0;
inline bool in_fault_handler() { return fault_handler_depth > 0; }

// Installs the handler for sig (idempotent), remembering the one it displaces
// as the chain target.  It runs on the thread's alternate signal stack, if
// the thread has one, where the program's own handler expects to run (to
// report the program's stack overflow); the runtime's work on a fault it
// owns leaves that stack (run_off_alt_stack).  Where that cannot be done
// (kLeavesAltStack false), only on_alt_stack asks for the alternate stack:
// threads that run kernels, which have the runtime's own (ensure_alt_stack).
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

#if defined(__x86_64__)
inline constexpr bool kLeavesAltStack = true;
#else
inline constexpr bool kLeavesAltStack = false;
#endif

// From a fault handler: runs fn(arg) on the stack the fault interrupted
// (below its red zone) when the handler runs on the thread's alternate
// stack, which stays disabled until fn returns; else runs it here.  fn must
// return (not jump away).  For the runtime's work on a fault it owns,
// which a program's small alternate stack cannot hold.
void run_off_alt_stack(void *ucontext, void (*fn)(void *), void *arg);

// While run_off_alt_stack runs fn on another stack: the signal frame of the
// fault, on the alternate stack, where the program's registers at the fault
// are (the collector scans it).  Zero otherwise.
struct FaultFrame {
    uintptr_t lo, hi;
};
inline thread_local FaultFrame switched_fault_frame __attribute__((tls_model("initial-exec"))) = {0, 0};

}  // namespace adsm::os
