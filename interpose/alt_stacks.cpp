// Alternate signal stacks in shared memory.  A program may give sigaltstack
// a buffer it allocated (LLVM's tools malloc 64 KiB for it, so with a low
// ADSM_MALLOC_THRESHOLD it is shared).  The kernel writes each signal frame
// there, and cannot take the runtime's fault while it does: a block the
// protocol had closed made the first fault on shared memory unservable
// (the kernel ends the process with SIGSEGV, as rust-lld died under rolling).
// So the kernel gets a private stack of the same size in its place, and the
// program reads back the stack it gave: its handlers run on the private
// stack, and the shared buffer stays ordinary memory no signal writes to.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "os/vm.h"

DECLARE_REAL(sigaltstack)

namespace {

// This thread's stack in place of the program's (none: sp null).
struct InPlace {
    void *program_sp;
    size_t program_size;
    void *sp;
    size_t size;
};
__attribute__((tls_model("initial-exec"))) thread_local InPlace tls_in_place = {nullptr, 0, nullptr, 0};

// The private stack, once the kernel no longer has it.
void forget_in_place() {
    InPlace &p = tls_in_place;
    if (p.sp) adsm::os::unmap(p.sp, p.size);
    p = {nullptr, 0, nullptr, 0};
}

// At a thread's exit its private stack goes (the kernel forgets the thread's
// alternate stack with it).
pthread_key_t g_exit_key;
pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

void release_at_exit(void *) {
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    if (tls_in_place.sp && REAL(sigaltstack)(&off, nullptr) == 0) forget_in_place();
}

void make_exit_key() { pthread_key_create(&g_exit_key, &release_at_exit); }

// A private stack in place of the program's `ss`, which lies in shared
// memory; false (errno set) when none could be mapped or the kernel
// refused it.
bool set_in_place(const stack_t *ss) {
    InPlace &p = tls_in_place;
    void *sp = p.sp;
    size_t size = p.size;
    if (!sp || size < ss->ss_size) {
        size = adsm::os::page_up(ss->ss_size);
        sp = adsm::os::map_anon(size, PROT_READ | PROT_WRITE, false);
        if (sp == MAP_FAILED) {
            errno = ENOMEM;
            return false;
        }
    }
    stack_t mine = *ss;
    mine.ss_sp = sp;
    if (REAL(sigaltstack)(&mine, nullptr) != 0) {  // (EPERM: the thread runs on its stack now)
        int e = errno;
        if (sp != p.sp) adsm::os::unmap(sp, size);
        errno = e;
        return false;
    }
    if (sp != p.sp) forget_in_place();
    p = {ss->ss_sp, ss->ss_size, sp, size};
    pthread_once(&g_exit_once, &make_exit_key);
    pthread_setspecific(g_exit_key, &p);
    return true;
}

}  // namespace

INTERCEPTOR(int, sigaltstack, const stack_t *ss, stack_t *old) {
    InPlace &p = tls_in_place;
    // What the program reads back is the stack as it gave it.
    stack_t before;
    if (old) {
        if (REAL(sigaltstack)(nullptr, &before) != 0) return -1;
        if (p.sp && before.ss_sp == p.sp) {
            before.ss_sp = p.program_sp;
            before.ss_size = p.program_size;
        }
    }
    const bool arms = ss && !(ss->ss_flags & SS_DISABLE);
    if (arms && ss->ss_size > 0 && adsm::preload::touches_window(ss->ss_sp, ss->ss_size)) {
        if (!set_in_place(ss)) return -1;
    } else {
        if (REAL(sigaltstack)(ss, nullptr) != 0) return -1;
        // Another stack replaces the private one.  (The runtime disarms and
        // restores the private stack while it handles a fault taken on it:
        // no change of the program's.)
        if (arms && p.sp && ss->ss_sp != p.sp) forget_in_place();
    }
    if (old) *old = before;
    return 0;
}
