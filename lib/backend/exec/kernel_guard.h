// Lets a device survive a kernel that crashes.  A thread about to run
// kernel code arms a guard; a fault signal on that thread (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL) unwinds to the guard instead of killing the process, and
// the launch is reported as failed.  Faults on unguarded threads go on to
// the application's handlers untouched.
#pragma once

#include <setjmp.h>

#include <cstdint>

#include "adsm.h"

namespace adsm::exec {

struct GuardFrame {
    sigjmp_buf env;
    volatile int signo = 0;
    volatile uintptr_t addr = 0;
    // Where the kernel was when it faulted, for the error report.
    volatile unsigned bx = 0, by = 0, bz = 0, tx = 0, ty = 0, tz = 0;
    // How deep in the fault handler the thread was when it armed the guard,
    // and is again after the jump (os::fault_handler_depth).
    int handler_depth = 0;
};

// Installs the fault handlers and the guard hook (idempotent).
void install_kernel_guard();

void arm_guard(GuardFrame *frame);
void disarm_guard();

}  // namespace adsm::exec
