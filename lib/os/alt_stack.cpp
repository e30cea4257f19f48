// Alternate signal stacks: the runtime's own, for threads that run kernels,
// and the program's, on which a fault the runtime handles must not run.
//
// The runtime's fault handler is installed with SA_ONSTACK, so that a
// program whose handler expects its alternate stack (to report its own
// stack overflow: Rust, Go, the JVM, Python's faulthandler) gets it.  Those
// stacks are small (8 to 64 KiB, the kernel's signal frame taking up to 3.5
// KiB of it), and the runtime's work on a fault can need far more than its
// usual few hundred bytes (a race report with its call stack, profiling's
// unwinding, a GPU driver's call): a fault on shared memory taken there is
// handled on the stack the fault interrupted, as without SA_ONSTACK, and
// the alternate stack stays disabled meanwhile, so that a fault nested in
// that work is delivered where it is and not over the frames waiting on
// the alternate stack.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>

#include "os/fault_signals.h"

namespace adsm::os {

void ensure_alt_stack() {
    stack_t cur;
    if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return;
    const size_t size = 64 * 1024;
    void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    stack_t ss;
    ss.ss_sp = mem;
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, nullptr) != 0) munmap(mem, size);
    // The stack lives as long as the thread; threads that get one run kernels
    // and live as long as the device.
}

#if defined(__x86_64__)

// adsm_call_on_stack(fn, arg, top): fn(arg) with the stack pointer at top
// (16-byte aligned), back on the caller's stack when it returns.  The frame
// pointer links the two stacks for unwinders.
extern "C" void adsm_call_on_stack(void (*fn)(void *), void *arg, uintptr_t top);
asm(R"(
    .text
    .p2align 4
    .type adsm_call_on_stack, @function
adsm_call_on_stack:
    .cfi_startproc
    push %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    mov %rsp, %rbp
    .cfi_def_cfa_register %rbp
    mov %rdx, %rsp
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    mov %rbp, %rsp
    pop %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size adsm_call_on_stack, .-adsm_call_on_stack
)");

namespace {

constexpr uintptr_t kRedZone = 128;
// Linux's flag (linux/signal.h), which the C library may not name: the
// kernel disarms the stack while a handler runs on it.
constexpr int kAutoDisarm = static_cast<int>(1u << 31);

struct OffAltStack {
    void (*fn)(void *);
    void *arg;
    stack_t alt;
};

void run_with_alt_stack_disabled(void *p) {
    auto *o = static_cast<OffAltStack *>(p);
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    o->fn(o->arg);
    sigaltstack(&o->alt, nullptr);
}

}  // namespace

void run_off_alt_stack(void *uctx, void (*fn)(void *), void *arg) {
    auto *uc = static_cast<ucontext_t *>(uctx);
    if (!uc) return fn(arg);
    // The signal frame records the thread's alternate stack as it was at
    // the fault, and whether the fault was taken on it already.
    const stack_t &alt = uc->uc_stack;
    const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    const auto lo = reinterpret_cast<uintptr_t>(alt.ss_sp);
    if ((alt.ss_flags & (SS_DISABLE | SS_ONSTACK)) || here - lo >= alt.ss_size) return fn(arg);
    const auto sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
    // The program's registers at the fault are in the signal frame up there,
    // and nowhere else while fn runs: the collector scans it.
    const auto frame = reinterpret_cast<uintptr_t>(uc);
    switched_fault_frame = {frame, frame - lo < alt.ss_size ? lo + alt.ss_size : frame + sizeof(ucontext_t)};
    const uintptr_t top = (sp - kRedZone - 64) & ~uintptr_t(15);
    if (alt.ss_flags & kAutoDisarm) {
        adsm_call_on_stack(fn, arg, top);  // the kernel disarmed it until the handler returns
    } else {
        OffAltStack o{fn, arg, {alt.ss_sp, 0, alt.ss_size}};
        adsm_call_on_stack(run_with_alt_stack_disabled, &o, top);
    }
    switched_fault_frame = {};
}

#else

void run_off_alt_stack(void *, void (*fn)(void *), void *arg) { fn(arg); }

#endif

}  // namespace adsm::os
