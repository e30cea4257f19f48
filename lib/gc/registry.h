// What the program told the collector about particular objects: roots it
// registered, finalizers, weak links, pins and release claims.  Changed
// with the heap's lock held and the world running (entries are C++
// containers); while the world is stopped the collector only reads them and
// writes its decisions into private buffers, and applies them after.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "adsm.h"

namespace adsm::gc {

// Which finalizable objects' finalizers wait for others'.  Whatever the
// order, what a due object reaches stays alive until its finalizer returns.
enum class FinalizerOrder : uint8_t {
    none,         // due once unreachable from the roots, whatever reaches it
    ordered,      // ...and from every other object with a finalizer, and from itself
    ignore_self,  // as ordered, its pointers to itself aside
    unreachable,  // as none, but not while an unordered one due now reaches it
};

struct Callback {
    adsmGcCallback fn = nullptr;
    void *data = nullptr;
    FinalizerOrder order = FinalizerOrder::none;
    bool keep_data = false;  // data is a root until the callback runs
    // A bdwgc program's finalizer: with finalization on demand, it waits for
    // the program to ask (GC_invoke_finalizers).  The runtime's own API's
    // callbacks never wait on a switch the program set for bdwgc's.
    bool on_demand = false;
};

struct Registry {
    std::map<uintptr_t, uintptr_t> roots;                // start -> end
    std::unordered_map<uintptr_t, Callback> finalizers;  // object -> finalizer
    std::unordered_map<uintptr_t, Callback> releases;    // object -> callback once unreachable
    std::unordered_map<uintptr_t, uintptr_t> weak;       // link address -> object
    std::unordered_map<uintptr_t, uint64_t> pins;        // object -> count

    // Drops everything about an object that is gone (freed explicitly).
    void forget(uintptr_t obj) {
        finalizers.erase(obj);
        releases.erase(obj);
        pins.erase(obj);
    }
};

// A launch's argument bytes, kept until its context syncs: a kernel may
// hold the only pointer to an object, in its arguments.
struct LaunchRecord {
    const void *ctx = nullptr;
    uint64_t call = 0;  // the call's number in its context (Context::calls after it)
    std::vector<uint8_t> args;
};

}  // namespace adsm::gc
