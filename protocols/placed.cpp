// Coherence for objects that do not live in a discrete device's memory
// alone (SharedObject::own_coherence: placed with adsmAllocEx, or on an
// integrated device); every other object goes to the process's protocol,
// which never sees these (they sit apart in their group).
//
//   host, or at home on an integrated device: one copy, the host's, which
//     kernels reach directly.  Nothing ever moves and nothing is protected;
//     a CPU access while a kernel runs is the program's race.
//   every_device: the host copy is the master and each device holds a
//     replica, brought up to date by any call on that device (of any
//     context) when the object changed since that replica was made.  Kernels
//     only read it: a replica they write is replaced at the next update and
//     nothing of it comes back.  Changes are seen by a write fault after
//     each update, where the process's protocol uses faults; otherwise (batch,
//     which resends everything anyway) every call updates it.
#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "backend/device.h"
#include "os/futex_lock.h"
#include "protocols/protection.h"
#include "protocols/protocol.h"
#include "support/stats.h"

namespace adsm {

std::unique_ptr<Protocol> make_integrated(const ProtocolEnv &env);

namespace {

class Placed final : public Protocol {
public:
    Placed(const ProtocolEnv &env, std::unique_ptr<Protocol> inner)
        : inner_(std::move(inner)),
          devices_(env.devices.empty() ? std::vector<Device *>{env.device} : env.devices),
          host_copy_(make_integrated(env)) {}

    const char *name() const override { return inner_->name(); }
    bool uses_faults() const override { return inner_->uses_faults(); }
    void context_created(ReleaseGroup &c) override { inner_->context_created(c); }
    void context_destroyed(ReleaseGroup &c) override { inner_->context_destroyed(c); }

    Status on_alloc(SharedObject &r, bool zeroed) override {
        if (!r.own_coherence()) return inner_->on_alloc(r, zeroed);
        if (Status s = protect_range(r.host, r.span, PROT_READ | PROT_WRITE); s != adsmSuccess) return s;
        if (r.home == Home::every_device) {
            r.replicas = new (std::nothrow) uint64_t[devices_.size()]();
            if (!r.replicas) return fail(adsmErrorMemoryAllocation, "no memory for an object's replica table");
            r.version.store(1, std::memory_order_relaxed);  // no replica holds it yet
            os::FutexGuard g(list_lock_);
            replicated_.push_back(&r);
            replicated_count_.fetch_add(1, std::memory_order_release);
        }
        return adsmSuccess;
    }

    void on_free(SharedObject &r) override {
        if (!r.own_coherence()) return inner_->on_free(r);
        if (r.home != Home::every_device) return;
        {
            os::FutexGuard g(list_lock_);
            replicated_.erase(std::remove(replicated_.begin(), replicated_.end(), &r), replicated_.end());
            replicated_count_.fetch_sub(1, std::memory_order_release);
        }
        // An update under way holds the object's lock: it ends first.
        os::FutexGuard g(r.lock);
        delete[] r.replicas;
        r.replicas = nullptr;
    }

    // The group's placed objects need nothing here: host ones are where
    // kernels read them, replicated ones are updated by update_replicas.
    Status release(ReleaseGroup &c) override { return inner_->release(c); }
    Status acquire(ReleaseGroup &c) override { return inner_->acquire(c); }
    Status release_object(SharedObject &r, bool read_only) override {
        return r.own_coherence() ? adsmSuccess : inner_->release_object(r, read_only);
    }
    Status acquire_object(SharedObject &r, bool written) override {
        return r.own_coherence() ? adsmSuccess : inner_->acquire_object(r, written);
    }

    Status update_replicas(Device &on) override {
        // Every call comes here: most processes have no replicated object.
        // An integrated device's replica is the host copy itself.
        if (replicated_count_.load(std::memory_order_acquire) == 0 || on.integrated()) return adsmSuccess;
        size_t d = index_of(on);
        std::vector<SharedObject *> stale;
        {
            os::FutexGuard g(list_lock_);
            for (SharedObject *r : replicated_)
                if (!r->replicas || r->replicas[d] != r->version.load(std::memory_order_acquire)) stale.push_back(r);
        }
        // Each is updated under its own lock alone: calls on other devices
        // update theirs meanwhile.  One freed since the list was read has
        // no replica table any more (on_free) and is skipped.
        for (SharedObject *r : stale) {
            os::FutexGuard g(r->lock);
            if (!r->replicas || r->home != Home::every_device) continue;
            uint64_t v = r->version.load(std::memory_order_acquire);
            if (r->replicas[d] == v) continue;
            // Closed before the copy: a write that lands during it faults,
            // waits for this lock and marks a newer version.
            if (uses_faults())
                if (Status s = protect_range(r->host, r->span, PROT_READ); s != adsmSuccess) return s;
            if (Status s = on.copy_to_device(r->dev, r->alias, r->size); s != adsmSuccess) return s;
            r->stats.moved(true, r->size);
            stats().add(Counter::replica_updates);
            // Without faults nothing tells a later write apart: always stale.
            if (uses_faults()) r->replicas[d] = v;
        }
        return adsmSuccess;
    }

    Status read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) override {
        if (!r.own_coherence()) return inner_->read_out(r, off, dst, len, ticket);
        return host_copy_->read_out(r, off, dst, len);
    }
    // (The version moves after the write: a replica updated while the
    // write was under way took the version before it, and is updated again.)
    Status write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) override {
        if (!r.own_coherence()) return inner_->write_in(r, off, src, len, ticket);
        Status s = host_copy_->write_in(r, off, src, len);
        changed(r);
        return s;
    }
    Status fill(SharedObject &r, size_t off, int value, size_t len) override {
        if (!r.own_coherence()) return inner_->fill(r, off, value, len);
        Status s = host_copy_->fill(r, off, value, len);
        changed(r);
        return s;
    }

    // The host copy is current, always: nothing to settle or evict.
    Status settle_on_device(SharedObject &r) override {
        return r.own_coherence() ? adsmSuccess : inner_->settle_on_device(r);
    }
    Status evict(SharedObject &r) override { return r.own_coherence() ? adsmSuccess : inner_->evict(r); }
    Status fetch_range(SharedObject &r, size_t off, size_t len) override {
        return r.own_coherence() ? adsmSuccess : inner_->fetch_range(r, off, len);
    }
    Status prefetch_range(SharedObject &r, size_t off, size_t len) override {
        return r.own_coherence() ? adsmSuccess : inner_->prefetch_range(r, off, len);
    }

    FaultOutcome on_fault(SharedObject &r, uintptr_t addr, bool write) override {
        if (!r.own_coherence()) return inner_->on_fault(r, addr, write);
        if (r.home != Home::every_device) return FaultOutcome::not_mine;
        // Only ever closed for writing (update_replicas): open it again and
        // let every replica be stale.
        os::FutexGuard g(r.lock);
        if (!r.live.load(std::memory_order_acquire) || !r.contains_host(addr)) return FaultOutcome::not_mine;
        changed(r);
        return protect_range(r.host, r.span, PROT_READ | PROT_WRITE) == adsmSuccess ? FaultOutcome::retry
                                                                                    : FaultOutcome::failed;
    }

    // (A replicated object is also closed for writing between its updates,
    // and its resume marks the replicas stale: one at a time.)
    bool holds_by_span(const SharedObject &r) const override {
        return !r.own_coherence() && inner_->holds_by_span(r);
    }
    Status hold_writes(SharedObject &r) override {
        return r.own_coherence() ? Protocol::hold_writes(r) : inner_->hold_writes(r);
    }
    // Writable whole again, as after its fault: a replicated object's
    // replicas may miss what is written now, so they count as stale.
    Status resume_writes(SharedObject &r) override {
        if (!r.own_coherence()) return inner_->resume_writes(r);
        os::FutexGuard g(r.lock);
        if (!r.writes_held) return adsmSuccess;
        r.writes_held = false;
        changed(r);
        return protect_range(r.host, r.span, PROT_READ | PROT_WRITE);
    }

    Status snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held) override {
        return r.own_coherence() ? Protocol::snapshot(r, dst, held) : inner_->snapshot(r, dst, held);
    }

private:
    static void changed(SharedObject &r) {
        if (r.home == Home::every_device) r.version.fetch_add(1, std::memory_order_acq_rel);
    }
    size_t index_of(const Device &d) const {
        for (size_t i = 0; i < devices_.size(); ++i)
            if (devices_[i] == &d) return i;
        return 0;
    }

    std::unique_ptr<Protocol> inner_;
    std::vector<Device *> devices_;
    std::unique_ptr<Protocol> host_copy_;  // the integrated protocol: its alias accesses
    os::FutexLock list_lock_;
    std::vector<SharedObject *> replicated_;
    std::atomic<size_t> replicated_count_{0};
};

}  // namespace

std::unique_ptr<Protocol> make_placed(const ProtocolEnv &env, std::unique_ptr<Protocol> inner) {
    return std::make_unique<Placed>(env, std::move(inner));
}

}  // namespace adsm
