// The copy engine of the cuda device: streams of its own for copies and
// fills, so they overlap kernels of any context and the program's own work.
// Synchronous copies have a stream apart from the asynchronous ones: a
// thread that waits for its copy while holding a region's lock must never
// wait behind another copy's completion, which may need that lock.  Host memory is always named by a pointer outside the window (the
// runtime's alias or a plain buffer): the driver takes a host pointer equal
// to a device address for device memory and silently copies nothing.
//
// The driver copies within one physical allocation at a time (a copy across
// two granules mapped side by side fails with CUDA_ERROR_INVALID_VALUE), so
// every copy goes in pieces that end at granule boundaries.
//
// Asynchronous copies get tickets in submission order; a host function
// queued behind each one runs its CopyDone and marks the ticket landed.
// Submitting takes no heap memory: a fault handler submits too.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/driver.h"
#include "backend/device.h"
#include "backend/gpu/copy_tickets.h"
#include "backend/gpu/device_loss.h"
#include "backend/gpu/window.h"
#include "os/futex_lock.h"

namespace adsm::cuda {

class CopyEngine {
public:
    // A copy that meets a sticky error (a kernel's fault poisons the
    // context) loses the device through `loss`.
    Status init(const Driver *d, const gpu::Window *window, gpu::DeviceLoss *loss);
    // Waits for what is queued and gives the streams back (the device's
    // context current).  The engine is unusable after.
    void close();

    Status to_device(CUdeviceptr dst, const void *src, size_t n);
    Status to_host(void *dst, CUdeviceptr src, size_t n);
    Status fill(CUdeviceptr dst, int value, size_t n);

    // A ticket, or 0 when the copy could not be queued and ran (or failed)
    // on the spot; `done` has run then.  A failure is kept for failure().
    uint64_t to_device_async(CUdeviceptr dst, const void *src, size_t n, CopyDone done, void *arg);
    uint64_t to_host_async(void *dst, CUdeviceptr src, size_t n, CopyDone done, void *arg);
    // Returns once every copy up to `ticket` has landed, or the stream failed
    // (failed() asks, every CopyTickets::kPollNs: stream_failed(), or a
    // caller's way to it).
    void wait(uint64_t ticket) { wait(ticket, [this] { return stream_failed(); }); }
    template <class Failed>
    void wait(uint64_t ticket, Failed failed) {
        tickets_.wait(ticket, failed);
    }
    // Asks the driver whether the copy stream failed (noting it if so).
    bool stream_failed();
    uint64_t last_ticket() const { return tickets_.last(); }

    // Makes `s` wait (on the device, not the host) for every copy queued so far.
    Status order_before(CUstream s);

    // The first error of an asynchronous copy since the last call, cleared.
    Status take_failure();

private:
    struct Pending {
        CopyEngine *engine = nullptr;
        CopyDone done = nullptr;
        void *arg = nullptr;
        uint64_t ticket = 0;
        std::atomic<bool> finished{false};  // its CopyDone ran (by its landing, or by drain_failed)
    };
    // The stream failed: the driver runs none of its host functions after
    // that, so the copies still queued are finished here, failed.
    void drain_failed();
    static constexpr uint64_t kRing = 4096;
    static void CUDA_CB landed(void *p);
    uint64_t submit(bool to_device, void *host, CUdeviceptr dev, size_t n, CopyDone done, void *arg);
    // Queues the copy (fill when value >= 0 and host is null) in pieces.
    CUresult enqueue(CUstream stream, bool to_device, void *host, CUdeviceptr dev, size_t n, int value = -1);
    Status sync_stream(const char *what);
    // The status for a failed copy or fill: a sticky error loses the device
    // (adsmErrorLaunchFailure once, adsmErrorDeviceLost after); another
    // fails this copy alone.
    Status error(CUresult r, const char *what);
    void note_failure(CUresult r, const char *what);

    const Driver *d_ = nullptr;
    const gpu::Window *window_ = nullptr;
    gpu::DeviceLoss *loss_ = nullptr;
    CUstream stream_ = nullptr;       // asynchronous copies, with their landings
    CUstream sync_stream_ = nullptr;  // synchronous copies and fills
    CUevent fence_ = nullptr;
    os::FutexLock submit_mu_;  // ticket order is queue order; guards fence_ too
    gpu::CopyTickets tickets_;
    Pending ring_[kRing];
    std::atomic<int> failure_{CUDA_SUCCESS};
};

}  // namespace adsm::cuda
