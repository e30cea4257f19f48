// Whether the calling thread runs a routed program's host function for its
// GPU driver (a CUDA graph's host node), on the driver's own thread.  The
// driver allows no call of its own there, and the work queued after the
// function waits for it: a CPU access there that would have to wait for the
// program's kernels, or fetch what they wrote, cannot.
#pragma once

namespace adsm {

class OnDriverThread {
public:
    OnDriverThread();
    ~OnDriverThread();
    OnDriverThread(const OnDriverThread &) = delete;
    OnDriverThread &operator=(const OnDriverThread &) = delete;
};

// Async-signal-safe (the fault handler asks).
bool on_driver_thread();

}  // namespace adsm
