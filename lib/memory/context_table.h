// The contexts of the process: which one each thread works in, the handles
// the API gives out for them, and their slots, which are reused but never
// freed so that a stale handle or pointer fails cleanly instead of reading
// freed memory.  A context ends with its last reference: the thread it was
// created for, each thread bound to it and each region it owns hold one.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "backend/device.h"
#include "memory/context.h"
#include "protocols/protocol.h"

namespace adsm {

class ContextTable {
public:
    // New contexts start on `first` (device 0).
    ContextTable(Device &first, Protocol &protocol);

    // The calling thread's context, created on first use; nullptr on failure.
    Context *current();
    // The calling thread's context if it has one yet (never makes it).
    Context *current_if_made();
    adsmContext_t handle(Context *c) const;
    Status bind(adsmContext_t handle);  // nullptr: back to the thread's own context
    // The live context a handle names (nullptr: the calling thread's
    // current one), with a reference the caller drops with unref.
    Status resolve(adsmContext_t handle, Context **out);
    // One context for the whole program, never ending (see Manager).
    Context *program_context();
    // The program context if it was ever made (never makes it).
    Context *existing_program_context() { return program_.load(std::memory_order_acquire); }

    // Drops a reference; the last one ends the context.
    void unref(Context *c);
    // Called at a thread's end when it held the last thread reference to a
    // context that lives on (it owns memory): whatever its calls left with
    // the device has nobody left to sync it.
    using OrphanHandler = void (*)(Context &c, void *arg);
    void set_orphan_handler(OrphanHandler fn, void *arg) {
        orphan_ = fn;
        orphan_arg_ = arg;
    }
    // A reference to each live context; the caller unrefs each.
    std::vector<Context *> hold_live();

private:
    Context *new_context();
    Context *home();
    void switch_to(Context *c);
    static void thread_exit(void *ctx);

    Device &first_;
    Protocol &protocol_;

    std::mutex mu_;
    std::vector<Context *> slots_;  // never freed
    std::vector<uint32_t> free_slots_;
    std::mutex program_mu_;
    std::atomic<Context *> program_{nullptr};
    pthread_key_t current_key_;  // both keys drop a reference at thread exit
    pthread_key_t home_key_;
    OrphanHandler orphan_ = nullptr;
    void *orphan_arg_ = nullptr;
};

}  // namespace adsm
