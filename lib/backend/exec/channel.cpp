#include "backend/exec/channel.h"

namespace adsm::exec {

void channel_init(Channel *c, uint64_t window_base, uint64_t window_size) {
    c->magic = kChannelMagic;
    c->slots = kRingSlots;
    c->window_base = window_base;
    c->window_size = window_size;
    for (uint32_t i = 0; i < kMaxStreams; ++i) c->streams[i].error.store(0, std::memory_order_relaxed);
    channel_reset_ring(c);
}

void channel_reset_ring(Channel *c) {
    c->state.store(static_cast<uint32_t>(DeviceState::starting), std::memory_order_relaxed);
    c->failure[0] = '\0';
    c->death[0] = '\0';
    c->running[0] = '\0';
    c->map_failure[0] = '\0';  // a new executor maps everything again
    c->enqueue_pos.store(0, std::memory_order_relaxed);
    c->dequeue_pos.store(0, std::memory_order_relaxed);
    c->doorbell.store(0, std::memory_order_relaxed);
    c->device_sleeping.store(0, std::memory_order_relaxed);
    c->completed.store(0, std::memory_order_relaxed);
    c->completion_epoch.store(0, std::memory_order_relaxed);
    c->host_waiters.store(0, std::memory_order_relaxed);
    for (uint32_t i = 0; i < kRingSlots; ++i) c->ring[i].turn.store(i, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
}

void channel_ring_doorbell(Channel *c) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (c->device_sleeping.load(std::memory_order_seq_cst)) {
        c->doorbell.fetch_add(1, std::memory_order_seq_cst);
        os::futex_wake(&c->doorbell, 1);
    }
}

}  // namespace adsm::exec
