// The GPUs of one driver in one process (ADSM_DEVICE=cuda,cuda or
// levelzero,levelzero).  A driver gives a process one address space for all
// its GPUs, so at a window address only one of them can hold memory: they
// share the window's reservation, its table of granules (each granule one
// GPU's, granules.h) and the host mirror's registrations (one pins for
// all).  An object moves between them by handing its granules over, and a
// kernel on one reaches another's object through a peer mapping, never a
// replica.
//
// A module is loaded in every GPU's context (a driver function belongs to
// one), so a kernel the program got once runs wherever its context is:
// the program holds the first GPU's handle, which names the others'.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "backend/gpu/granules.h"
#include "backend/gpu/window.h"

namespace adsm::gpu {

// One set per back-end (Member: its device class).
template <class Member>
class GpuSet {
public:
    // The process's set, made by the first device to ask; a runtime started
    // again after every device went gets a new one.
    static std::shared_ptr<GpuSet> get() {
        static std::mutex mu;
        static std::weak_ptr<GpuSet> current;
        std::lock_guard<std::mutex> lock(mu);
        std::shared_ptr<GpuSet> s = current.lock();
        if (!s) {
            s = std::make_shared<GpuSet>();
            current = s;
        }
        return s;
    }

    // A device joins; its place in the set is its index for function_on.
    size_t join(Member *d) {
        std::lock_guard<std::mutex> lock(mu_);
        members_.push_back(d);
        return members_.size() - 1;
    }
    // A device goes (only a failed start ends devices: a started runtime
    // keeps them for the process's life, so no index from join moves while
    // a module's functions are in use).  True for the last of the set,
    // which gives back what the set took from the driver: the window's
    // reservation, and a context the set shares.
    bool leave(Member *d) {
        std::lock_guard<std::mutex> lock(mu_);
        members_.erase(std::remove(members_.begin(), members_.end(), d), members_.end());
        return members_.empty();
    }
    std::vector<Member *> members() const {
        std::lock_guard<std::mutex> lock(mu_);
        return members_;
    }
    size_t size() const {
        std::lock_guard<std::mutex> lock(mu_);
        return members_.size();
    }

    // Set up by the first device to attach the window, under attach_mu.
    // A driver whose reservations belong to a context it makes for several
    // devices (Level Zero) keeps that context here, made by the first
    // device to open.
    std::mutex attach_mu;
    void *shared_context = nullptr;
    // The window's addresses as the driver reserved them (reserve_window),
    // for the last device to give back.
    uintptr_t reserved = 0;
    uint64_t reserved_size = 0;
    Window window;
    std::unique_ptr<GranuleDriver> pins;  // registers host memory, for every GPU
    Granules memory;

    // This GPU's view of the window joins the set's: the first GPU to attach
    // sets up the granule table the others share, with `pins` registering
    // host memory for all of them; a later GPU must map memory at the same
    // granularity.
    Status share_window(const Window &w, int host_fd, std::unique_ptr<GranuleDriver> pins, const char *backend,
                        const char *gpu_name) {
        std::lock_guard<std::mutex> lock(attach_mu);
        if (!memory.initialized()) {
            this->pins = std::move(pins);
            memory.init(this->pins.get(), w.granularity, w.base, host_fd, w.alias);
            window = w;
            return adsmSuccess;
        }
        if (window.granularity == w.granularity) return adsmSuccess;
        return fail(adsmErrorInitialization,
                    "%s: %s maps memory in granules of %llu bytes, another GPU of the process in %llu: they cannot "
                    "share one window",
                    backend, gpu_name, static_cast<unsigned long long>(w.granularity),
                    static_cast<unsigned long long>(window.granularity));
    }

    // A module of every GPU's, and its functions there (index: the
    // device's place in the set); the handle is the first GPU's.
    using PerGpu = std::vector<void *>;
    void *add_module(PerGpu modules) { return add(modules_, std::move(modules)); }
    const PerGpu *module(void *handle) const {
        std::shared_lock<std::shared_mutex> lock(tables_mu_);
        auto it = modules_.find(handle);
        return it == modules_.end() ? nullptr : it->second.get();
    }
    void *add_function(PerGpu functions) { return add(functions_, std::move(functions)); }
    // The function a set-wide handle names on GPU `index`; a driver
    // function of the program's own (not a set-wide handle) is itself.
    void *function_on(void *handle, size_t index) const {
        std::shared_lock<std::shared_mutex> lock(tables_mu_);
        auto it = functions_.find(handle);
        return it == functions_.end() || index >= it->second->size() ? handle : (*it->second)[index];
    }

private:
    using Table = std::unordered_map<void *, std::unique_ptr<PerGpu>>;
    void *add(Table &t, PerGpu per_gpu) {
        void *handle = per_gpu.front();
        std::unique_lock<std::shared_mutex> lock(tables_mu_);
        t[handle] = std::make_unique<PerGpu>(std::move(per_gpu));
        return handle;
    }

    mutable std::mutex mu_;
    std::vector<Member *> members_;
    mutable std::shared_mutex tables_mu_;
    Table modules_, functions_;
};

}  // namespace adsm::gpu
