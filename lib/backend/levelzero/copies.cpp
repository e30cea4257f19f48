#include "backend/levelzero/copies.h"

#include <cstring>

namespace adsm::levelzero {

Status CopyEngine::init(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                        const gpu::Window *window, gpu::DeviceLoss *loss) {
    d_ = d;
    ctx_ = ctx;
    window_ = window;
    loss_ = loss;
    if (ze_result_t r = make_immediate_list(d_, ctx, dev, ordinal, &list_); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot create the copy command list");
    if (ze_result_t r = make_host_events(d_, ctx, dev, 2, &pool_, events_); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot create the copy events");
    ze_host_mem_alloc_desc_t hd = {};
    hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void *stage = nullptr;
    if (ze_result_t r = d_->zeMemAllocHost(ctx, &hd, 2 * kStage, 4096, &stage); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "levelzero: cannot allocate pinned staging memory (zeMemAllocHost)");
    stage_[0] = static_cast<unsigned char *>(stage);
    stage_[1] = stage_[0] + kStage;
    return adsmSuccess;
}

void CopyEngine::close() {
    wait(0);
    wait(1);
    destroy_host_events(d_, 2, &pool_, events_);
    if (list_) d_->zeCommandListDestroy(list_);
    if (stage_[0]) d_->zeMemFree(ctx_, stage_[0]);
    list_ = nullptr;
    stage_[0] = stage_[1] = nullptr;
}

ze_result_t append_staged_copy(const Driver *d, ze_command_list_handle_t list, const gpu::Window &window,
                               bool to_device, uintptr_t dev, unsigned char *stage, size_t n) {
    return window.in_pieces(dev, n, ZE_RESULT_SUCCESS, [&](uintptr_t at, size_t done, size_t piece) {
        void *to = to_device ? reinterpret_cast<void *>(at) : stage + done;
        const void *from = to_device ? static_cast<const void *>(stage + done) : reinterpret_cast<const void *>(at);
        return d->zeCommandListAppendMemoryCopy(list, to, from, piece, nullptr, 0, nullptr);
    });
}

ze_result_t CopyEngine::stage_chunk(int h, bool to_device, uintptr_t dev, size_t n) {
    ze_result_t r = append_staged_copy(d_, list_, *window_, to_device, dev, stage_[h], n);
    return close_half(h, r);
}

ze_result_t CopyEngine::close_half(int h, ze_result_t r) {
    // Closed even after a failed append: the pieces that went in use the
    // half's staging memory until the barrier's event says they are done,
    // and the failure's wait (failed()) waits for that.
    ze_result_t b = d_->zeCommandListAppendBarrier(list_, events_[h], 0, nullptr);
    if (b == ZE_RESULT_SUCCESS) pending_[h] = true;
    return r != ZE_RESULT_SUCCESS ? r : b;
}

ze_result_t CopyEngine::wait(int h) {
    if (!pending_[h]) return ZE_RESULT_SUCCESS;
    pending_[h] = false;
    ze_result_t r = d_->zeEventHostSynchronize(events_[h], UINT64_MAX);
    d_->zeEventHostReset(events_[h]);
    return r;
}

Status CopyEngine::failed(ze_result_t r, const char *what) {
    // Whatever was queued of the transfer finishes before its staging
    // memory is used again.
    wait(0);
    wait(1);
    mu_.unlock();
    return ze_driver_error(loss_, r, what, adsmErrorDeviceLost);
}

Status CopyEngine::to_device(uintptr_t dst, const void *src, size_t n) {
    const unsigned char *s = static_cast<const unsigned char *>(src);
    mu_.lock();
    for (size_t off = 0, i = 0; off < n; ++i) {
        int h = static_cast<int>(i & 1);
        size_t chunk = n - off < kStage ? n - off : kStage;
        if (ze_result_t r = wait(h); r != ZE_RESULT_SUCCESS) return failed(r, "levelzero: copy to the device");
        memcpy(stage_[h], s + off, chunk);
        if (ze_result_t r = stage_chunk(h, true, dst + off, chunk); r != ZE_RESULT_SUCCESS)
            return failed(r, "levelzero: copy to the device");
        off += chunk;
    }
    for (int h = 0; h < 2; ++h)
        if (ze_result_t r = wait(h); r != ZE_RESULT_SUCCESS) return failed(r, "levelzero: copy to the device");
    mu_.unlock();
    return adsmSuccess;
}

Status CopyEngine::to_host(void *dst, uintptr_t src, size_t n) {
    unsigned char *d = static_cast<unsigned char *>(dst);
    mu_.lock();
    // The copy engine fills the next half while the CPU drains this one.
    size_t first = n < kStage ? n : kStage;
    if (n)
        if (ze_result_t r = stage_chunk(0, false, src, first); r != ZE_RESULT_SUCCESS)
            return failed(r, "levelzero: copy to the host");
    for (size_t off = 0, i = 0; off < n; ++i) {
        int h = static_cast<int>(i & 1);
        size_t chunk = n - off < kStage ? n - off : kStage;
        size_t next = off + chunk;
        if (next < n) {
            size_t after = n - next < kStage ? n - next : kStage;
            if (ze_result_t r = stage_chunk(h ^ 1, false, src + next, after); r != ZE_RESULT_SUCCESS)
                return failed(r, "levelzero: copy to the host");
        }
        if (ze_result_t r = wait(h); r != ZE_RESULT_SUCCESS) return failed(r, "levelzero: copy to the host");
        memcpy(d + off, stage_[h], chunk);
        off = next;
    }
    mu_.unlock();
    return adsmSuccess;
}

Status CopyEngine::fill(uintptr_t dst, int value, size_t n) {
    unsigned char byte = static_cast<unsigned char>(value);
    mu_.lock();
    ze_result_t r = window_->in_pieces(dst, n, ZE_RESULT_SUCCESS, [&](uintptr_t at, size_t, size_t piece) {
        return d_->zeCommandListAppendMemoryFill(list_, reinterpret_cast<void *>(at), &byte, 1, piece, nullptr, 0,
                                                 nullptr);
    });
    return finish(r, "levelzero: device fill");
}

Status CopyEngine::finish(ze_result_t r, const char *what) {
    r = close_half(0, r);
    if (r == ZE_RESULT_SUCCESS) r = wait(0);
    if (r != ZE_RESULT_SUCCESS) return failed(r, what);
    mu_.unlock();
    return adsmSuccess;
}

Status CopyEngine::between(uintptr_t dst, uintptr_t src, size_t n) {
    mu_.lock();
    // Both sides are whole granules at granule-aligned addresses: cutting
    // at the destination's granules cuts the source's too.
    ze_result_t r = window_->in_pieces(dst, n, ZE_RESULT_SUCCESS, [&](uintptr_t at, size_t done, size_t piece) {
        return d_->zeCommandListAppendMemoryCopy(list_, reinterpret_cast<void *>(at),
                                                 reinterpret_cast<const void *>(src + done), piece, nullptr, 0, nullptr);
    });
    return finish(r, "levelzero: copying device memory to another GPU");
}

}  // namespace adsm::levelzero
