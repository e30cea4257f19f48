#include "backend/levelzero/async_copies.h"

#include <pthread.h>

#include <cstring>
#include <ctime>

#include "backend/levelzero/copies.h"
#include "os/futex.h"
#include "support/log.h"

namespace adsm::levelzero {

Status AsyncCopies::init(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                         const gpu::Window *window, gpu::DeviceLoss *loss) {
    d_ = d;
    ctx_ = ctx;
    window_ = window;
    loss_ = loss;
    if (ze_result_t r = make_immediate_list(d_, ctx, dev, ordinal, &list_); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot create the asynchronous copy list");
    if (ze_result_t r = make_host_events(d_, ctx, dev, kSlots, &pool_, events_); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot create the asynchronous copies' events");
    ze_host_mem_alloc_desc_t hd = {};
    hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void *staging = nullptr;
    if (ze_result_t r = d_->zeMemAllocHost(ctx, &hd, kSlots * kChunk, 4096, &staging); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot allocate pinned staging memory (zeMemAllocHost)");
    staging_ = static_cast<unsigned char *>(staging);
    if (pthread_create(&landing_, nullptr, &AsyncCopies::landing_main, this) != 0)
        return fail(adsmErrorInitialization, "levelzero: cannot start the copy landing thread");
    landing_started_ = true;
    return adsmSuccess;
}

bool AsyncCopies::stop_landing() {
    if (!landing_started_) return true;
    landing_started_ = false;
    // Copies still queued land first; one stuck in the driver (a hung
    // device) is not waited for long.
    ending_.store(true, std::memory_order_release);
    work_.fetch_add(1, std::memory_order_release);
    os::futex_wake(&work_);
    timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (pthread_timedjoin_np(landing_, nullptr, &until) == 0) return true;
    ADSM_LOG(error, "levelzero: the copy landing thread is stuck in the driver; it is left behind");
    pthread_detach(landing_);
    return false;
}

void AsyncCopies::close() {
    if (!stop_landing()) return;
    destroy_host_events(d_, kSlots, &pool_, events_);
    if (list_) d_->zeCommandListDestroy(list_);
    if (staging_) d_->zeMemFree(ctx_, staging_);
    list_ = nullptr;
    staging_ = nullptr;
}

uint64_t AsyncCopies::to_device(uintptr_t dst, const void *src, size_t n, CopyDone done, void *arg) {
    return submit(true, const_cast<void *>(src), dst, n, done, arg);
}

uint64_t AsyncCopies::to_host(void *dst, uintptr_t src, size_t n, CopyDone done, void *arg) {
    return submit(false, dst, src, n, done, arg);
}

uint64_t AsyncCopies::submit(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    unsigned char *h = static_cast<unsigned char *>(host);
    submit_mu_.lock();
    uint64_t t = 0;
    for (size_t off = 0; off < n || off == 0; off += kChunk) {
        size_t piece_n = n - off < kChunk ? n - off : kChunk;
        t = tickets_.next();
        if (t > kSlots) wait(t - kSlots);  // the slot's chunk and event are free again
        unsigned char *stage = staging_ + (t % kSlots) * kChunk;
        Pending &p = slots_[t % kSlots];
        p = Pending{};
        p.last = off + piece_n >= n;
        if (p.last) {
            p.done = done;
            p.arg = arg;
        }
        p.host = to_device ? nullptr : h + off;
        p.n = piece_n;
        if (to_device) memcpy(stage, h + off, piece_n);
        ze_event_handle_t ev = events_[t % kSlots];
        ze_result_t r = append_staged_copy(d_, list_, *window_, to_device, dev + off, stage, piece_n);
        // Level Zero orders nothing in a list by itself: the barrier's event
        // says the piece (and every one before it) has landed.  It goes in
        // after a failed append too: what went in of the piece uses the
        // slot's chunk until then.
        ze_result_t b = d_->zeCommandListAppendBarrier(list_, ev, 0, nullptr);
        if (r == ZE_RESULT_SUCCESS) r = b;
        if (r != ZE_RESULT_SUCCESS) {
            // Not queued whole: the landing thread reports it in its turn,
            // so that the tickets stay in order.
            p.failed = true;
            int none = ZE_RESULT_SUCCESS;
            failure_.compare_exchange_strong(none, static_cast<int>(r));
            // Without a barrier nothing on the device signals the event; if
            // the host cannot either, the landing must not wait for it.
            if (b != ZE_RESULT_SUCCESS) p.no_event = d_->zeEventHostSignal(ev) != ZE_RESULT_SUCCESS;
        }
        tickets_.issue(t);
        // The landing thread goes on with it (a long copy's later pieces
        // wait for its earlier ones to land).
        work_.fetch_add(1, std::memory_order_release);
        os::futex_wake(&work_);
        if (n == 0) break;
    }
    submit_mu_.unlock();
    return t;
}

void AsyncCopies::land_next(uint64_t t) {
    ze_event_handle_t ev = events_[t % kSlots];
    const Pending &p = slots_[t % kSlots];
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!p.no_event) {
        r = d_->zeEventHostSynchronize(ev, UINT64_MAX);
        d_->zeEventHostReset(ev);
    }
    bool failed = p.failed || r != ZE_RESULT_SUCCESS || failed_piece_;
    if (r != ZE_RESULT_SUCCESS) {
        int none = ZE_RESULT_SUCCESS;
        if (failure_.compare_exchange_strong(none, static_cast<int>(r)))
            ADSM_LOG(error, "levelzero: an asynchronous copy failed: %s", Driver::describe(r));
    }
    if (!failed && p.host) memcpy(p.host, staging_ + (t % kSlots) * kChunk, p.n);
    failed_piece_ = failed && !p.last;
    // The copy is done before its ticket lands: a waiter finds its CopyDone run.
    if (p.last && p.done) p.done(p.arg, failed ? adsmErrorDeviceLost : adsmSuccess);
    tickets_.land(t);  // the slot may be reused from here on
}

void *AsyncCopies::landing_main(void *self) {
    auto *a = static_cast<AsyncCopies *>(self);
    for (;;) {
        uint32_t seen = a->work_.load(std::memory_order_acquire);
        uint64_t next = a->tickets_.landed() + 1;
        if (next > a->tickets_.last()) {
            if (a->ending_.load(std::memory_order_acquire)) return nullptr;
            os::futex_wait(&a->work_, seen);
            continue;
        }
        a->land_next(next);
    }
    return nullptr;
}

Status AsyncCopies::take_failure() {
    int r = failure_.exchange(ZE_RESULT_SUCCESS);
    if (r == ZE_RESULT_SUCCESS) return adsmSuccess;
    return ze_driver_error(loss_, static_cast<ze_result_t>(r), "levelzero: an asynchronous copy", adsmErrorDeviceLost);
}

}  // namespace adsm::levelzero
