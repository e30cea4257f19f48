// bdwgc's finalization and disappearing links on adsm's collector: the
// four orders of finalizers (gc/registry.h), client data kept alive until
// the finalizer runs, finalizers on demand with a notifier, and weak links
// that are cleared before any finalizer is considered.
#include "interpose/bdwgc/state.h"

using namespace adsm::bdwgc;
using adsm::gc::FinalizerOrder;

namespace {

void register_finalizer(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn, void **ocd,
                        FinalizerOrder order) {
    adsm::gc::Callback old;
    // An address outside the heap takes no finalizer: bdwgc ignores fn then.
    if (obj && !detached()) {
        adsm::Inside in;
        adsm::gc::Collector &c = collector();
        if (c.set_finalizer(obj, adsm::gc::Callback{fn, cd, order, true, true}, &old) != adsmSuccess && c.in_heap(obj))
            warn("GC_register_finalizer: %p is not the start of an allocated object\n", reinterpret_cast<GC_word>(obj));
    }
    if (ofn) *ofn = old.fn;
    if (ocd) *ocd = old.data;
}

}  // namespace

extern "C" {

void GC_register_finalizer(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn, void **ocd) {
    register_finalizer(obj, fn, cd, ofn, ocd, FinalizerOrder::ordered);
}

void GC_register_finalizer_ignore_self(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                       void **ocd) {
    register_finalizer(obj, fn, cd, ofn, ocd, FinalizerOrder::ignore_self);
}

void GC_register_finalizer_no_order(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                    void **ocd) {
    register_finalizer(obj, fn, cd, ofn, ocd, FinalizerOrder::none);
}

void GC_register_finalizer_unreachable(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                       void **ocd) {
    register_finalizer(obj, fn, cd, ofn, ocd, FinalizerOrder::unreachable);
}

int GC_should_invoke_finalizers(void) {
    if (detached()) return 0;
    adsm::Inside in;
    return collector().finalizers_due();
}

// The finalizers run as the program's own code, outside the runtime.
int GC_invoke_finalizers(void) {
    if (detached()) return 0;
    return static_cast<int>(collector().invoke_finalizers());
}

void GC_set_finalize_on_demand(int on) {
    g_settings.finalize_on_demand.store(on != 0);
    if (!on) finalizers_may_wait();  // those due now run at the next allocation
}

int GC_get_finalize_on_demand(void) { return g_settings.finalize_on_demand.load(); }

void GC_set_finalizer_notifier(GC_finalizer_notifier_proc fn) { g_settings.notifier.store(fn); }
GC_finalizer_notifier_proc GC_get_finalizer_notifier(void) { return g_settings.notifier.load(); }

void GC_set_java_finalization(int on) { g_settings.java_finalization.store(on != 0); }
int GC_get_java_finalization(void) { return g_settings.java_finalization.load(); }

int GC_general_register_disappearing_link(void **link, const void *obj) {
    if (reinterpret_cast<uintptr_t>(link) % alignof(void *)) {
        warn("GC_general_register_disappearing_link: the link %p is not aligned\n", reinterpret_cast<GC_word>(link));
        return GC_UNIMPLEMENTED;
    }
    if (detached()) return GC_SUCCESS;  // nothing is collected any more
    adsm::Inside in;
    bool replaced = false;
    if (collector().add_weak(link, obj, &replaced) != adsmSuccess) {
        warn("GC_general_register_disappearing_link: %p is not the start of an allocated object\n",
             reinterpret_cast<GC_word>(obj));
        return GC_UNIMPLEMENTED;
    }
    return replaced ? GC_DUPLICATE : GC_SUCCESS;
}

int GC_register_disappearing_link(void **link) {
    void *holder = GC_base(link);
    if (!holder) {
        warn("GC_register_disappearing_link: the link %p is in no collected object\n", reinterpret_cast<GC_word>(link));
        return GC_UNIMPLEMENTED;
    }
    return GC_general_register_disappearing_link(link, holder);
}

int GC_move_disappearing_link(void **link, void **new_link) {
    if (reinterpret_cast<uintptr_t>(new_link) % alignof(void *)) {
        warn("GC_move_disappearing_link: the link %p is not aligned\n", reinterpret_cast<GC_word>(new_link));
        return GC_UNIMPLEMENTED;
    }
    if (detached()) return GC_NOT_FOUND;
    adsm::Inside in;
    switch (collector().move_weak(link, new_link)) {
    case adsm::gc::Collector::LinkMove::moved: return GC_SUCCESS;
    case adsm::gc::Collector::LinkMove::taken: return GC_DUPLICATE;
    case adsm::gc::Collector::LinkMove::not_found: break;
    }
    return GC_NOT_FOUND;
}

int GC_unregister_disappearing_link(void **link) {
    if (detached()) return 0;
    adsm::Inside in;
    return collector().remove_weak(link) == adsmSuccess;
}

}  // extern "C"
