// The copy engine of the levelzero device: an immediate command list on the
// device's copy-engine queue group (its compute group when it has none),
// and pinned host memory from zeMemAllocHost to stage transfers through.
// Level Zero's core API cannot pin the program's own memory, and a device
// reads pageable memory slowly or not at all; so the bytes go through two
// staging halves, the CPU filling (or draining) one while the copy engine
// moves the other.
//
// Host memory is never named by a window address (gpu/window.h), and every
// copy goes in pieces that end at granule boundaries.  Copies are
// synchronous: asynchronous ones are the Device default (done on the
// spot), which keeps the CopyDone contract.  Level Zero orders nothing in a
// command list by itself, so a barrier that signals an event closes every
// chunk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/gpu/window.h"
#include "backend/levelzero/driver.h"
#include "os/futex_lock.h"

namespace adsm::levelzero {

// Appends the copy of [dev, dev+n) to or from `stage` (pinned host memory)
// to `list`, in pieces that end at granule boundaries.
ze_result_t append_staged_copy(const Driver *d, ze_command_list_handle_t list, const gpu::Window &window,
                               bool to_device, uintptr_t dev, unsigned char *stage, size_t n);

class CopyEngine {
public:
    // A copy that meets a lost device loses it through `loss` too.
    Status init(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                const gpu::Window *window, gpu::DeviceLoss *loss);
    // Waits for what is queued and gives the driver's objects back (after
    // init, even a failed one).  The engine is unusable after.
    void close();

    Status to_device(uintptr_t dst, const void *src, size_t n);
    Status to_host(void *dst, uintptr_t src, size_t n);
    Status fill(uintptr_t dst, int value, size_t n);
    // Device memory to device memory (another GPU's that this one reaches
    // included), granule-aligned pieces: a hand-over between GPUs.
    Status between(uintptr_t dst, uintptr_t src, size_t n);

private:
    static constexpr size_t kStage = 4u << 20;  // each half
    // Appends the copy of one chunk between staging half `h` and the device,
    // then the barrier that signals that half's event.
    // Appends half h's barrier after appends that returned r; r, else the barrier's result.
    ze_result_t close_half(int h, ze_result_t r);
    ze_result_t stage_chunk(int h, bool to_device, uintptr_t dev, size_t n);
    ze_result_t wait(int h);
    // Closes commands appended since the lock was taken (r: how appending
    // went) with a barrier, waits for them and lets the lock go.
    Status finish(ze_result_t r, const char *what);
    Status failed(ze_result_t r, const char *what);

    const Driver *d_ = nullptr;
    ze_context_handle_t ctx_ = nullptr;
    const gpu::Window *window_ = nullptr;
    gpu::DeviceLoss *loss_ = nullptr;
    ze_command_list_handle_t list_ = nullptr;
    ze_event_pool_handle_t pool_ = nullptr;
    ze_event_handle_t events_[2] = {};
    unsigned char *stage_[2] = {};
    bool pending_[2] = {};
    os::FutexLock mu_;  // one transfer at a time owns the staging memory
};

}  // namespace adsm::levelzero
