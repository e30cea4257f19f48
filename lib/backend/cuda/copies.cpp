#include "backend/cuda/copies.h"

#include <cstring>

#include "support/log.h"

namespace adsm::cuda {

Status CopyEngine::init(const Driver *d, const gpu::Window *window, gpu::DeviceLoss *loss) {
    d_ = d;
    window_ = window;
    loss_ = loss;
    if (CUresult r = d_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "cuda: cannot create the copy stream");
    if (CUresult r = d_->cuStreamCreate(&sync_stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "cuda: cannot create the copy stream");
    if (CUresult r = d_->cuEventCreate(&fence_, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "cuda: cannot create the copy fence");
    return adsmSuccess;
}

void CopyEngine::close() {
    // The wait comes first: a landing queued behind a copy calls into this
    // engine, which must outlive it.
    for (CUstream *s : {&stream_, &sync_stream_})
        if (*s) {
            d_->cuStreamSynchronize(*s);
            d_->cuStreamDestroy(*s);
            *s = nullptr;
        }
    if (fence_) d_->cuEventDestroy(fence_);
    fence_ = nullptr;
}

Status CopyEngine::error(CUresult r, const char *what) {
    if (loss_ && context_is_gone(r)) return loss_->lose(what, d_->describe(r));
    return cuda_fail(adsmErrorDeviceLost, r, what);
}

Status CopyEngine::sync_stream(const char *what) {
    if (CUresult r = d_->cuStreamSynchronize(sync_stream_); r != CUDA_SUCCESS) return error(r, what);
    return adsmSuccess;
}

CUresult CopyEngine::enqueue(CUstream stream, bool to_device, void *host, CUdeviceptr dev, size_t n, int value) {
    unsigned char *h = static_cast<unsigned char *>(host);
    return window_->in_pieces(dev, n, CUDA_SUCCESS, [&](uintptr_t at, size_t done, size_t piece) {
        if (value >= 0) return d_->cuMemsetD8Async(at, static_cast<unsigned char>(value), piece, stream);
        if (to_device) return d_->cuMemcpyHtoDAsync(at, h + done, piece, stream);
        return d_->cuMemcpyDtoHAsync(h + done, at, piece, stream);
    });
}

Status CopyEngine::to_device(CUdeviceptr dst, const void *src, size_t n) {
    if (CUresult r = enqueue(sync_stream_, true, const_cast<void *>(src), dst, n); r != CUDA_SUCCESS)
        return error(r, "cuda: copy to the device");
    return sync_stream("cuda: copy to the device");
}

Status CopyEngine::to_host(void *dst, CUdeviceptr src, size_t n) {
    if (CUresult r = enqueue(sync_stream_, false, dst, src, n); r != CUDA_SUCCESS)
        return error(r, "cuda: copy to the host");
    return sync_stream("cuda: copy to the host");
}

Status CopyEngine::fill(CUdeviceptr dst, int value, size_t n) {
    if (CUresult r = enqueue(sync_stream_, false, nullptr, dst, n, value & 0xff); r != CUDA_SUCCESS)
        return error(r, "cuda: device memset");
    return sync_stream("cuda: device memset");
}

void CopyEngine::note_failure(CUresult r, const char *what) {
    int none = CUDA_SUCCESS;
    if (failure_.compare_exchange_strong(none, static_cast<int>(r)))
        ADSM_LOG(error, "%s failed: %s", what, d_->describe(r));
}

Status CopyEngine::take_failure() {
    int r = failure_.exchange(CUDA_SUCCESS);
    if (r == CUDA_SUCCESS) return adsmSuccess;
    return error(static_cast<CUresult>(r), "cuda: an asynchronous copy");
}

void CUDA_CB CopyEngine::landed(void *p) {
    Pending *job = static_cast<Pending *>(p);
    CopyEngine *e = job->engine;
    if (job->finished.exchange(true)) return;  // drain_failed finished it
    if (job->done) job->done(job->arg, adsmSuccess);
    e->tickets_.land(job->ticket);
}

void CopyEngine::drain_failed() {
    // (Without submit_mu_, which a submitter waiting for room holds: the
    // slots of issued tickets are not written again until they land.)
    const uint64_t last = tickets_.last();
    for (uint64_t t = tickets_.landed() + 1; t <= last; ++t) {
        Pending &job = ring_[t % kRing];
        if (job.finished.exchange(true)) continue;
        if (job.done) job.done(job.arg, adsmErrorDeviceLost);
    }
    tickets_.land(last);
}

uint64_t CopyEngine::submit(bool to_device, void *host, CUdeviceptr dev, size_t n, CopyDone done, void *arg) {
    submit_mu_.lock();
    uint64_t t = tickets_.next();
    if (t > kRing) wait(t - kRing);  // the slot's last user has landed
    Pending *job = &ring_[t % kRing];
    job->engine = this;
    job->done = done;
    job->arg = arg;
    job->ticket = t;
    job->finished.store(false, std::memory_order_release);
    CUresult r = enqueue(stream_, to_device, host, dev, n);
    if (r == CUDA_SUCCESS) r = d_->cuLaunchHostFunc(stream_, &CopyEngine::landed, job);
    if (r != CUDA_SUCCESS) {
        submit_mu_.unlock();
        // Not queued (or queued without its landing): finish it here, so
        // the caller's bookkeeping stays whole, and report it at the next
        // synchronisation.
        note_failure(r, to_device ? "cuda: asynchronous copy to the device" : "cuda: asynchronous copy to the host");
        d_->cuStreamSynchronize(stream_);  // whatever was queued of it is done
        if (done) done(arg, adsmErrorDeviceLost);
        return 0;
    }
    tickets_.issue(t);
    submit_mu_.unlock();
    return t;
}

uint64_t CopyEngine::to_device_async(CUdeviceptr dst, const void *src, size_t n, CopyDone done, void *arg) {
    return submit(true, const_cast<void *>(src), dst, n, done, arg);
}

uint64_t CopyEngine::to_host_async(void *dst, CUdeviceptr src, size_t n, CopyDone done, void *arg) {
    return submit(false, dst, src, n, done, arg);
}

bool CopyEngine::stream_failed() {
    CUresult r = d_->cuStreamQuery(stream_);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return false;
    note_failure(r, "cuda: the copy stream");
    drain_failed();
    return true;
}

Status CopyEngine::order_before(CUstream s) {
    if (tickets_.all_landed()) return adsmSuccess;
    submit_mu_.lock();
    CUresult r = d_->cuEventRecord(fence_, stream_);
    if (r == CUDA_SUCCESS) r = d_->cuStreamWaitEvent(s, fence_, 0);
    submit_mu_.unlock();
    if (r != CUDA_SUCCESS) return error(r, "cuda: ordering a launch after the copies");
    return adsmSuccess;
}

}  // namespace adsm::cuda
