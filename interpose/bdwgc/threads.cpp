// bdwgc's thread functions.  The collector finds and stops every thread of
// the process by itself, with SIGPWR as bdwgc does, so threads need no
// registration and no wrapper around their creation: GC_pthread_create
// and the rest pass straight to the C library, but for GC_pthread_sigmask,
// which never blocks the stop signal (a thread that blocked it would hold
// up every collection), and GC_dlopen, which checks what it loaded.
#include "interpose/bdwgc/threads.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include "interpose/bdwgc/foreign_imports.h"
#include "interpose/bdwgc/state.h"
#include "os/stop_signal.h"

namespace adsm::bdwgc {
namespace {
__attribute__((tls_model("initial-exec"))) thread_local bool t_registered = false;
}
void note_thread_registered() { t_registered = true; }
}  // namespace adsm::bdwgc

using namespace adsm::bdwgc;

extern "C" {

int GC_get_stack_base(struct GC_stack_base *sb) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return GC_UNIMPLEMENTED;
    void *addr = nullptr;
    size_t size = 0;
    int r = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (r != 0) return GC_UNIMPLEMENTED;
    sb->mem_base = static_cast<char *>(addr) + size;
    return GC_SUCCESS;
}

void *GC_call_with_stack_base(GC_stack_base_func fn, void *arg) {
    struct GC_stack_base sb;
    sb.mem_base = __builtin_frame_address(0);
    return fn(&sb, arg);
}

void GC_allow_register_threads(void) { collector(); }

int GC_register_my_thread(const struct GC_stack_base *) {
    collector();
    if (t_registered) return GC_DUPLICATE;
    t_registered = true;
    return GC_SUCCESS;
}

int GC_unregister_my_thread(void) {
    t_registered = false;
    return GC_SUCCESS;
}

int GC_thread_is_registered(void) { return t_registered; }

void *GC_call_with_alloc_lock(GC_fn_type fn, void *client_data) {
    adsm::Inside in;
    return collector().with_lock(fn, client_data);
}

// A thread in a blocking call is stopped like any other; nothing to change.
void *GC_do_blocking(GC_fn_type fn, void *client_data) { return fn(client_data); }
void *GC_call_with_gc_active(GC_fn_type fn, void *client_data) { return fn(client_data); }

int GC_get_suspend_signal(void) { return adsm::os::kStopSignal; }

int GC_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    return pthread_create(thread, attr, start, arg);
}

int GC_pthread_join(pthread_t thread, void **retval) { return pthread_join(thread, retval); }
int GC_pthread_detach(pthread_t thread) { return pthread_detach(thread); }
int GC_pthread_cancel(pthread_t thread) { return pthread_cancel(thread); }
void GC_pthread_exit(void *retval) { pthread_exit(retval); }

int GC_pthread_sigmask(int how, const sigset_t *set, sigset_t *oldset) {
    if (!set || how == SIG_UNBLOCK) return pthread_sigmask(how, set, oldset);
    sigset_t allowed = *set;
    sigdelset(&allowed, adsm::os::kStopSignal);
    return pthread_sigmask(how, &allowed, oldset);
}

// Loaded from here, the object's dependencies are looked up as for this
// library (bdwgc's GC_dlopen, in libgc, behaves the same).
void *GC_dlopen(const char *path, int mode) {
    void *h = dlopen(path, mode);
    if (h && !accept_after_dlopen(path)) {
        dlclose(h);
        return nullptr;
    }
    return h;
}

}  // extern "C"
