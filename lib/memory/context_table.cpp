#include "memory/context_table.h"

#include <new>

#include "support/log.h"
#include "support/status.h"

namespace adsm {
namespace {

// The context a thread works in, and the one it was given at first use (its
// own, kept until the thread ends so that binding elsewhere and back is safe).
__attribute__((tls_model("initial-exec"))) thread_local Context *tls_context = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local Context *tls_home = nullptr;
ContextTable *g_instance = nullptr;

}  // namespace

ContextTable::ContextTable(Device &first, Protocol &protocol) : first_(first), protocol_(protocol) {
    g_instance = this;
    pthread_key_create(&current_key_, &ContextTable::thread_exit);
    pthread_key_create(&home_key_, &ContextTable::thread_exit);
}

Context *ContextTable::new_context() {
    std::lock_guard<std::mutex> lock(mu_);
    Context *c;
    if (!free_slots_.empty()) {
        c = slots_[free_slots_.back()];
        free_slots_.pop_back();
    } else {
        c = new (std::nothrow) Context;
        if (!c) return nullptr;
        c->slot = static_cast<uint32_t>(slots_.size());
        slots_.push_back(c);
    }
    c->objects = c->placed = nullptr;
    c->nobjects.store(0, std::memory_order_relaxed);
    c->calls.store(0);
    c->whole_call.store(0);
    c->launched_call.store(0);
    c->released.clear();
    c->unsynced_calls.store(0);
    c->synced_calls.store(0);
    c->has_stream = false;
    c->device = &first_;
    c->deferred = adsmSuccess;
    c->generation++;
    c->refs.store(1);
    c->thread_refs.store(0);
    protocol_.context_created(*c);
    c->live.store(true);
    return c;
}

void ContextTable::unref(Context *c) {
    if (c->refs.fetch_sub(1) != 1) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (c->refs.load() != 0 || !c->live.load()) return;
    c->live.store(false);
    if (c->has_stream) {
        // Nobody is left to sync: let the kernels finish, then drop the
        // stream.  A failure has nobody to reach but the log.
        if (c->device->synchronize(c->stream) != adsmSuccess)
            ADSM_LOG(error, "kernels of a context nobody waited for (its thread ended without adsmSync) failed: %s",
                     last_detail());
        c->device->destroy_stream(c->stream);
        c->has_stream = false;
    }
    protocol_.context_destroyed(*c);
    c->generation++;  // outstanding handles now fail cleanly
    free_slots_.push_back(c->slot);
}

void ContextTable::thread_exit(void *p) {
    if (!g_instance || !p) return;
    auto *c = static_cast<Context *>(p);
    // (Only at a thread's end: a thread that binds elsewhere may come back
    // and sync, or hand the context's handle on.  The program's context
    // serves every thread and is never left alone.)
    if (c->thread_refs.fetch_sub(1) == 1 && c->refs.load() > 1 && c != g_instance->program_.load() &&
        g_instance->orphan_)
        g_instance->orphan_(*c, g_instance->orphan_arg_);
    g_instance->unref(c);
}

Context *ContextTable::home() {
    if (Context *c = tls_home) return c;
    Context *c = new_context();  // its one reference is the thread's
    if (!c) return nullptr;
    c->thread_refs.store(1);
    tls_home = c;
    pthread_setspecific(home_key_, c);
    return c;
}

void ContextTable::switch_to(Context *c) {
    Context *old = tls_context;
    c->thread_refs.fetch_add(1);
    tls_context = c;
    pthread_setspecific(current_key_, c);
    if (old) {
        old->thread_refs.fetch_sub(1);
        unref(old);
    }
}

Context *ContextTable::current_if_made() { return tls_context; }

Context *ContextTable::current() {
    if (Context *c = tls_context) return c;
    Context *c = home();
    if (!c) return nullptr;
    c->refs.fetch_add(1);
    switch_to(c);
    return c;
}

adsmContext_t ContextTable::handle(Context *c) const {
    uint64_t h = (static_cast<uint64_t>(c->generation) << 32) | (c->slot + 1);
    return reinterpret_cast<adsmContext_t>(h);
}

Status ContextTable::resolve(adsmContext_t h, Context **out) {
    if (!h) {
        Context *c = current();
        if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
        c->refs.fetch_add(1);
        *out = c;
        return adsmSuccess;
    }
    uint64_t v = reinterpret_cast<uint64_t>(h);
    uint32_t slot = static_cast<uint32_t>(v & 0xffffffffu) - 1, gen = static_cast<uint32_t>(v >> 32);
    std::lock_guard<std::mutex> lock(mu_);
    if (slot >= slots_.size() || !slots_[slot]->live.load() || slots_[slot]->generation != gen)
        return fail(adsmErrorInvalidContext,
                    "%p is not a live context (it ends when its last thread exits and it owns no memory)", h);
    Context *c = slots_[slot];
    c->refs.fetch_add(1);
    *out = c;
    return adsmSuccess;
}

Status ContextTable::bind(adsmContext_t h) {
    Context *c = nullptr;
    if (!h) {
        c = home();
        if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
        c->refs.fetch_add(1);
    } else if (Status s = resolve(h, &c); s != adsmSuccess) {
        return s;
    }
    switch_to(c);
    return adsmSuccess;
}

Context *ContextTable::program_context() {
    if (Context *c = program_.load(std::memory_order_acquire)) return c;
    std::lock_guard<std::mutex> lock(program_mu_);
    if (Context *c = program_.load(std::memory_order_relaxed)) return c;
    Context *c = new_context();  // its one reference is never dropped
    program_.store(c, std::memory_order_release);
    return c;
}

std::vector<Context *> ContextTable::hold_live() {
    std::vector<Context *> live;
    std::lock_guard<std::mutex> lock(mu_);
    for (Context *c : slots_)
        if (c->live.load()) {
            c->refs.fetch_add(1);
            live.push_back(c);
        }
    return live;
}

}  // namespace adsm
