// Routed CUDA copies and fills: a host-side pointer is host memory and a
// device-side one the driver's, unless it is shared memory, which goes
// through the protocol (gpu_copies.h) after the work queued before it on
// its stream; cuMemcpy asks the driver which a pointer is.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "interpose/cuda_driver_common.h"
#include "interpose/cuda_graphs.h"
#include "interpose/gpu_copies.h"
#include "support/inside.h"

using namespace adsm::interpose::cuda_driver;

#define CUDA_COPY_SYMBOLS(X)                                                                                     \
    X(cuMemcpyHtoD_v2)                                                                                           \
    X(cuMemcpyHtoD_v2_ptds)                                                                                      \
    X(cuMemcpyDtoH_v2)                                                                                           \
    X(cuMemcpyDtoH_v2_ptds)                                                                                      \
    X(cuMemcpyDtoD_v2)                                                                                           \
    X(cuMemcpyDtoD_v2_ptds)                                                                                      \
    X(cuMemcpy)                                                                                                  \
    X(cuMemcpy_ptds)                                                                                             \
    X(cuMemcpyHtoDAsync_v2)                                                                                      \
    X(cuMemcpyHtoDAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyDtoHAsync_v2)                                                                                      \
    X(cuMemcpyDtoHAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyDtoDAsync_v2)                                                                                      \
    X(cuMemcpyDtoDAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyAsync)                                                                                             \
    X(cuMemcpyAsync_ptsz)                                                                                        \
    X(cuMemcpyHtoA_v2)                                                                                           \
    X(cuMemcpyHtoA_v2_ptds)                                                                                      \
    X(cuMemcpyAtoH_v2)                                                                                           \
    X(cuMemcpyAtoH_v2_ptds)                                                                                      \
    X(cuMemcpyDtoA_v2)                                                                                           \
    X(cuMemcpyDtoA_v2_ptds)                                                                                      \
    X(cuMemcpyAtoD_v2)                                                                                           \
    X(cuMemcpyAtoD_v2_ptds)                                                                                      \
    X(cuMemcpyHtoAAsync_v2)                                                                                      \
    X(cuMemcpyHtoAAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyAtoHAsync_v2)                                                                                      \
    X(cuMemcpyAtoHAsync_v2_ptsz)                                                                                 \
    X(cuMemsetD8_v2)                                                                                             \
    X(cuMemsetD8_v2_ptds)                                                                                        \
    X(cuMemsetD8Async)                                                                                           \
    X(cuMemsetD8Async_ptsz)                                                                                      \
    X(cuMemcpy2D_v2)                                                                                             \
    X(cuMemcpy2D_v2_ptds)                                                                                        \
    X(cuMemcpy2DUnaligned_v2)                                                                                    \
    X(cuMemcpy2DUnaligned_v2_ptds)                                                                               \
    X(cuMemcpy2DAsync_v2)                                                                                        \
    X(cuMemcpy2DAsync_v2_ptsz)                                                                                   \
    X(cuMemcpyPeer)                                                                                              \
    X(cuMemcpyPeer_ptds)                                                                                         \
    X(cuMemcpyPeerAsync)                                                                                         \
    X(cuMemcpyPeerAsync_ptsz)                                                                                    \
    X(cuMemcpy3D_v2)                                                                                             \
    X(cuMemcpy3D_v2_ptds)                                                                                        \
    X(cuMemcpy3DAsync_v2)                                                                                        \
    X(cuMemcpy3DAsync_v2_ptsz)                                                                                   \
    X(cuMemcpy3DPeer)                                                                                            \
    X(cuMemcpy3DPeer_ptds)                                                                                       \
    X(cuMemcpy3DPeerAsync)                                                                                       \
    X(cuMemcpy3DPeerAsync_ptsz)                                                                                  \
    X(cuMemsetD16_v2)                                                                                            \
    X(cuMemsetD16_v2_ptds)                                                                                       \
    X(cuMemsetD16Async)                                                                                          \
    X(cuMemsetD16Async_ptsz)                                                                                     \
    X(cuMemsetD32_v2)                                                                                            \
    X(cuMemsetD32_v2_ptds)                                                                                       \
    X(cuMemsetD32Async)                                                                                          \
    X(cuMemsetD32Async_ptsz)                                                                                     \
    X(cuMemsetD2D8_v2)                                                                                           \
    X(cuMemsetD2D8_v2_ptds)                                                                                      \
    X(cuMemsetD2D8Async)                                                                                         \
    X(cuMemsetD2D8Async_ptsz)                                                                                    \
    X(cuMemsetD2D16_v2)                                                                                          \
    X(cuMemsetD2D16_v2_ptds)                                                                                     \
    X(cuMemsetD2D16Async)                                                                                        \
    X(cuMemsetD2D16Async_ptsz)                                                                                   \
    X(cuMemsetD2D32_v2)                                                                                          \
    X(cuMemsetD2D32_v2_ptds)                                                                                     \
    X(cuMemsetD2D32Async)                                                                                        \
    X(cuMemsetD2D32Async_ptsz)                                                                                   \
    X(cuMemcpyBatchAsync)                                                                                        \
    X(cuMemcpyBatchAsync_ptsz)                                                                                   \
    X(cuMemcpyBatchAsync_v2)                                                                                     \
    X(cuMemcpyBatchAsync_v2_ptsz)                                                                                \
    X(cuMemcpy3DBatchAsync)                                                                                      \
    X(cuMemcpy3DBatchAsync_ptsz)                                                                                 \
    X(cuMemcpy3DBatchAsync_v2)                                                                                   \
    X(cuMemcpy3DBatchAsync_v2_ptsz)                                                                              

ADSM_GPU_FAMILY(cuda_copy_family, CUDA_COPY_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
namespace bridge = adsm::gpu_bridge;

using adsm::interpose::Captured;
using adsm::interpose::Side;

Status driver_to_device(void *dev, const void *host, size_t n) {
    CUresult r = FORWARD(cuMemcpyHtoD_v2, reinterpret_cast<CUdeviceptr>(dev), host, n);
    return r == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cuMemcpyHtoD: CUDA error %d", r);
}

Status driver_to_host(void *host, const void *dev, size_t n) {
    CUresult r = FORWARD(cuMemcpyDtoH_v2, host, reinterpret_cast<CUdeviceptr>(dev), n);
    return r == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cuMemcpyDtoH: CUDA error %d", r);
}

const adsm::interpose::DriverCopies kDriverCopies = {driver_to_device, driver_to_host};

// Which memory a pointer the program gave cuMemcpy is, as the driver sees it.
Side side_of(CUdeviceptr p) {
    using GetAttr = CUresult (*)(void *, CUpointer_attribute, CUdeviceptr);
    static const auto get =
        reinterpret_cast<GetAttr>(adsm::interpose::driver_function(kLibrary, "cuPointerGetAttribute"));
    unsigned type = 0;
    if (!get) return Side::host;
    GpuForwarding fw;
    if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS) return Side::host;  // unregistered: host
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY ? Side::device : Side::host;
}

// A copy as the program asked for it, or through the protocol when a side
// is shared memory, after the work queued before it on `stream`.
// Captured, it is the graph's node (cuda_graphs.h), by unified addressing
// where a shared side is named as host memory.
template <class Forward>
CUresult copy(const char *fn, CUstream stream, void *dst, Side ds, const void *src, Side ss, size_t n,
              Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || (!bridge::is_shared(dst) && !bridge::is_shared(src))) return forward();
    switch (adsm::interpose::captured_work(stream, fn)) {
    case Captured::record:
        if ((ds == Side::host && bridge::is_shared(dst)) || (ss == Side::host && bridge::is_shared(src)))
            return FORWARD(cuMemcpyAsync, device_ptr(dst), device_ptr(src), n, stream);
        return forward();
    case Captured::refuse: return CUDA_ERROR_NOT_SUPPORTED;
    case Captured::no: break;
    }
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    Status s = adsmSuccess;
    adsm::interpose::copy_with_shared(dst, ds, src, ss, n, kDriverCopies, &s);
    return to_cu(s, fn);
}

// A copy between a CUDA array and shared memory: through an ordinary
// buffer (the driver would take the shared address for device memory),
// the driver's own host copy of the array on the other side, after the
// work queued before it on `stream`.  `piece(offset, buffer, len)` is that
// copy for the piece at `offset`.
template <class Forward, class Piece>
CUresult array_copy(const char *fn, CUstream stream, const void *shared, size_t n, bool into_shared,
                    Forward &&forward, Piece &&piece) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(shared)) return forward();
    if (adsm::interpose::cuda_capturing(stream)) {
        adsm::log(adsm::LogLevel::error,
                  "%s: a copy between a CUDA array and shared memory cannot be captured into a graph; "
                  "cuMemcpy3DAsync between them can",
                  fn);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    CUresult own = CUDA_SUCCESS;  // the driver's own error, passed on as it is
    Status s = adsm::interpose::bounce_shared(
        const_cast<void *>(shared), n, into_shared, [&](size_t off, unsigned char *buf, size_t len) -> Status {
            own = piece(off, buf, len);
            return own == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "%s: CUDA error %d", fn, own);
        });
    if (own != CUDA_SUCCESS) return own;
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

using adsm::interpose::Plane;

Plane plane(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z, size_t pitch,
            size_t height) {
    Plane p;
    if (type == CU_MEMORYTYPE_HOST) p.at = static_cast<char *>(const_cast<void *>(host));
    else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) p.at = static_cast<char *>(ptr(dev));
    if (!p.at) return p;
    p.side = type == CU_MEMORYTYPE_HOST ? Side::host : type == CU_MEMORYTYPE_DEVICE ? Side::device : side_of(dev);
    p.pitch = pitch;
    p.slice = pitch * height;
    p.at += z * p.slice + y * pitch + x;
    return p;
}

// A 2D or 3D copy with shared memory on a side goes row by row through the
// protocol (rows of shared memory are not contiguous for the driver).
template <class Forward>
CUresult copy_rows(const char *fn, CUstream stream, const Plane &src, const Plane &dst, size_t width, size_t height,
                   size_t depth, Forward &&forward) {
    bool shared = (src.at && bridge::is_shared(src.at)) || (dst.at && bridge::is_shared(dst.at));
    if (!shared) return forward();
    if (!src.at || !dst.at)
        return to_cu(adsm::fail(adsmErrorNotSupported, "%s between a CUDA array and shared memory", fn), fn);
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    CUresult own = CUDA_SUCCESS;  // the driver's own error, passed on as it is
    Status s = adsm::interpose::copy_box(dst, src, width, height, depth, kDriverCopies,
                                         [&](void *d, const void *from, size_t n) -> Status {
        if (dst.side == Side::device && src.side == Side::device) {
            own = FORWARD(cuMemcpyDtoD_v2, reinterpret_cast<CUdeviceptr>(d), reinterpret_cast<CUdeviceptr>(from), n);
            return own == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "%s", fn);
        }
        if (dst.side == Side::device) return driver_to_device(d, from, n);
        if (src.side == Side::device) return driver_to_host(d, from, n);
        memmove(d, from, n);
        return adsmSuccess;
    });
    if (own != CUDA_SUCCESS) return own;
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

// A 2D or 3D copy between a CUDA array and shared memory: rows of the
// shared side packed into an ordinary buffer, a box of them at a time, and
// the driver's own 3D copy between that buffer (as host memory) and the
// array, after the work queued before it on `stream`.
CUresult array_box(const char *fn, CUstream stream, const CUDA_MEMCPY3D &c, const Plane &shared, bool into_shared) {
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    const size_t width = c.WidthInBytes;
    if (width == 0 || c.Height == 0 || c.Depth == 0) return CUDA_SUCCESS;
    constexpr size_t kBuffer = 4 << 20;
    const size_t rows = std::min<size_t>(std::max<size_t>(1, kBuffer / width), c.Height);
    adsm::Inside private_allocations;  // the buffer must be ordinary memory
    std::unique_ptr<unsigned char[]> buf(new (std::nothrow) unsigned char[rows * width]);
    if (!buf) return to_cu(adsm::fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte copy buffer", rows * width), fn);
    for (size_t z = 0; z < c.Depth; ++z)
        for (size_t y = 0; y < c.Height; y += rows) {
            const size_t k = std::min(rows, c.Height - y);
            char *first = shared.at + z * shared.slice + y * shared.pitch;
            for (size_t i = 0; i < k && !into_shared; ++i)
                if (Status s = bridge::read_shared(first + i * shared.pitch, buf.get() + i * width, width); s != adsmSuccess)
                    return to_cu(s, fn);
            CUDA_MEMCPY3D piece = c;
            piece.Height = k;
            piece.Depth = 1;
            // The array's side moves on by the rows done; the shared side is the buffer.
            auto buffer_side = [&](CUmemorytype &type, auto &host, CUdeviceptr &dev, CUarray &array, size_t &x,
                                   size_t &at_y, size_t &at_z, size_t &lod, size_t &pitch, size_t &height) {
                type = CU_MEMORYTYPE_HOST;
                host = buf.get();
                dev = 0;
                array = nullptr;
                x = at_y = at_z = lod = 0;
                pitch = width;
                height = k;
            };
            if (into_shared) {
                piece.srcY += y, piece.srcZ += z;
                buffer_side(piece.dstMemoryType, piece.dstHost, piece.dstDevice, piece.dstArray, piece.dstXInBytes,
                            piece.dstY, piece.dstZ, piece.dstLOD, piece.dstPitch, piece.dstHeight);
            } else {
                piece.dstY += y, piece.dstZ += z;
                buffer_side(piece.srcMemoryType, piece.srcHost, piece.srcDevice, piece.srcArray, piece.srcXInBytes,
                            piece.srcY, piece.srcZ, piece.srcLOD, piece.srcPitch, piece.srcHeight);
            }
            if (CUresult r = FORWARD(cuMemcpy3D_v2, &piece); r != CUDA_SUCCESS) return r;
            for (size_t i = 0; i < k && into_shared; ++i)
                if (Status s = bridge::write_shared(first + i * shared.pitch, buf.get() + i * width, width); s != adsmSuccess)
                    return to_cu(s, fn);
        }
    return CUDA_SUCCESS;
}

// The copy's other side when one is a CUDA array and the other shared
// memory: array_box's work; nullptr otherwise.
const Plane *array_and_shared(const CUDA_MEMCPY3D &c, const Plane &src, const Plane &dst) {
    if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY && dst.at && bridge::is_shared(dst.at)) return &dst;
    if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY && src.at && bridge::is_shared(src.at)) return &src;
    return nullptr;
}

CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY2D &c) {
    CUDA_MEMCPY3D d = {};
    d.srcXInBytes = c.srcXInBytes, d.srcY = c.srcY, d.srcMemoryType = c.srcMemoryType, d.srcHost = c.srcHost;
    d.srcDevice = c.srcDevice, d.srcArray = c.srcArray, d.srcPitch = c.srcPitch, d.srcHeight = c.Height;
    d.dstXInBytes = c.dstXInBytes, d.dstY = c.dstY, d.dstMemoryType = c.dstMemoryType, d.dstHost = c.dstHost;
    d.dstDevice = c.dstDevice, d.dstArray = c.dstArray, d.dstPitch = c.dstPitch, d.dstHeight = c.Height;
    d.WidthInBytes = c.WidthInBytes, d.Height = c.Height, d.Depth = 1;
    return d;
}

bool shared_plane(const Plane &src, const Plane &dst) {
    return (src.at && bridge::is_shared(src.at)) || (dst.at && bridge::is_shared(dst.at));
}

// A 2D or 3D copy of shared memory on a stream that is capturing: the
// graph's node, a shared side named as host memory named as device memory
// (cuda_graphs.h).  False when the copy is not captured or has no shared side.
bool captured_box(const char *fn, CUstream stream, CUDA_MEMCPY3D c, const Plane &src, const Plane &dst, CUresult *r) {
    if (!shared_plane(src, dst)) return false;
    switch (adsm::interpose::captured_work(stream, fn)) {
    case Captured::no: return false;
    case Captured::refuse: *r = CUDA_ERROR_NOT_SUPPORTED; return true;
    case Captured::record: break;
    }
    name_shared_as_device(&c);
    *r = FORWARD(cuMemcpy3DAsync_v2, &c, stream);
    return true;
}

template <class Forward>
CUresult copy2d(CUstream stream, const CUDA_MEMCPY2D *c, Forward &&forward) {
    if (!c || !adsm::interpose::gpu_routed(kApi)) return forward();
    Plane src = plane(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0, c->srcPitch, 0);
    Plane dst = plane(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0, c->dstPitch, 0);
    const CUDA_MEMCPY3D box = as_3d(*c);
    if (CUresult r; captured_box("cuMemcpy2D", stream, box, src, dst, &r)) return r;
    if (const Plane *shared = array_and_shared(box, src, dst))
        return array_box("cuMemcpy2D", stream, box, *shared, shared == &dst);
    return copy_rows("cuMemcpy2D", stream, src, dst, c->WidthInBytes, c->Height, 1, forward);
}

// A 3D copy within a context or between two (CUDA_MEMCPY3D_PEER: the same
// fields, and contexts that one device's shared memory does not need; one
// between a CUDA array and shared memory is refused there).
template <class Memcpy3D, class Forward>
CUresult copy3d(CUstream stream, const Memcpy3D *c, Forward &&forward) {
    if (!c || !adsm::interpose::gpu_routed(kApi)) return forward();
    Plane src = plane(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
                      c->srcHeight);
    Plane dst = plane(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
                      c->dstHeight);
    if constexpr (std::is_same_v<Memcpy3D, CUDA_MEMCPY3D>) {
        if (CUresult r; captured_box("cuMemcpy3D", stream, *c, src, dst, &r)) return r;
    } else if (shared_plane(src, dst) && adsm::interpose::cuda_capturing(stream)) {
        adsm::log(adsm::LogLevel::error, "cuMemcpy3DPeer: a copy of shared memory between contexts cannot be captured");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if constexpr (std::is_same_v<Memcpy3D, CUDA_MEMCPY3D>)
        if (const Plane *shared = array_and_shared(*c, src, dst))
            return array_box("cuMemcpy3D", stream, *c, *shared, shared == &dst);
    return copy_rows("cuMemcpy3D", stream, src, dst, c->WidthInBytes, c->Height, c->Depth, forward);
}

// A batch of 1D copies (CUDA 12.8) with shared memory on a side of any of
// them: each goes on its own, after the work queued before it on `stream`,
// the shared ones through the protocol.
template <class Forward>
CUresult copy_batch(CUstream stream, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                    size_t *fail_idx, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !dsts || !srcs || !sizes) return forward();
    bool any = false;
    for (size_t i = 0; i < count && !any; ++i) any = bridge::is_shared(ptr(dsts[i])) || bridge::is_shared(ptr(srcs[i]));
    if (!any) return forward();
    for (size_t i = 0; i < count; ++i) {
        CUresult r = copy("cuMemcpyBatchAsync", stream, ptr(dsts[i]), side_of(dsts[i]), ptr(srcs[i]), side_of(srcs[i]),
                          sizes[i], [&] { return FORWARD(cuMemcpyAsync, dsts[i], srcs[i], sizes[i], stream); });
        if (r != CUDA_SUCCESS) {
            if (fail_idx) *fail_idx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

// A batch of 3D copies with shared memory on a side of any of them: each
// goes on its own (a batch's copies are unordered, so any order is one the
// program allowed), a shared one row by row through the protocol as a
// cuMemcpy3D is, the others passed on as batches of one.  Pointer operands
// count in bytes; a row length or layer height of 0 is the extent's.
template <class Forward, class ForwardOne>
CUresult copy_3d_batch(CUstream stream, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
                       Forward &&forward, ForwardOne &&forward_one) {
    if (!adsm::interpose::gpu_routed(kApi) || !ops) return forward();
    auto shared = [](const CUmemcpy3DOperand &o) {
        return o.type == CU_MEMCPY_OPERAND_TYPE_POINTER && bridge::is_shared(ptr(o.op.ptr.ptr));
    };
    bool any = false;
    for (size_t i = 0; i < nops && !any; ++i) any = shared(ops[i].src) || shared(ops[i].dst);
    if (!any) return forward();
    // A pointer operand's rows and layers: the extent's where 0, and never
    // shorter than it.  (A CUDA array has no first byte: copy_rows refuses
    // it beside shared memory.)
    auto fits = [](const CUmemcpy3DOperand &o, const CUextent3D &e) {
        return o.type != CU_MEMCPY_OPERAND_TYPE_POINTER ||
               ((!o.op.ptr.rowLength || o.op.ptr.rowLength >= e.width) &&
                (!o.op.ptr.layerHeight || o.op.ptr.layerHeight >= e.height));
    };
    auto operand = [](const CUmemcpy3DOperand &o, const CUextent3D &e) {
        if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return Plane{};
        const size_t row = o.op.ptr.rowLength ? o.op.ptr.rowLength : e.width;
        const size_t rows = o.op.ptr.layerHeight ? o.op.ptr.layerHeight : e.height;
        return plane(CU_MEMORYTYPE_UNIFIED, nullptr, o.op.ptr.ptr, 0, 0, 0, row, rows);
    };
    for (size_t i = 0; i < nops; ++i) {
        CUDA_MEMCPY3D_BATCH_OP &op = ops[i];
        const CUextent3D &e = op.extent;
        CUresult r = CUDA_SUCCESS;
        if (!shared(op.src) && !shared(op.dst))
            r = forward_one(&op);
        else if (!e.width || !e.height || !e.depth || !fits(op.src, e) || !fits(op.dst, e))
            r = CUDA_ERROR_INVALID_VALUE;
        else
            r = copy_rows("cuMemcpy3DBatchAsync", stream, operand(op.src, e), operand(op.dst, e), e.width, e.height,
                          e.depth, [&] { return forward_one(&op); });
        if (r != CUDA_SUCCESS) {
            if (fail_idx) *fail_idx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

// A fill of n elements of the value's width.
template <class T, class Forward>
CUresult fill(const char *fn, CUstream stream, CUdeviceptr dst, T value, size_t n, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(ptr(dst))) return forward();
    if (Captured c = adsm::interpose::captured_work(stream, fn); c != Captured::no)
        return c == Captured::record ? forward() : CUDA_ERROR_NOT_SUPPORTED;  // the graph's node (cuda_graphs.h)
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    return to_cu(adsm::interpose::fill_shared_pattern(ptr(dst), &value, sizeof value, n), fn);
}

// A fill of `height` rows of `width` elements of the value's width, rows
// `pitch` bytes apart (the statically linked CUDA runtime's cudaMemset2D
// and cudaMemset3D come here).
template <class T, class Forward>
CUresult fill2d(const char *fn, CUstream stream, CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height,
                Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(ptr(dst))) return forward();
    if (height > 1 && width > pitch / sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
    if (Captured c = adsm::interpose::captured_work(stream, fn); c != Captured::no)
        return c == Captured::record ? forward() : CUDA_ERROR_NOT_SUPPORTED;  // the graph's node (cuda_graphs.h)
    if (CUresult r = driver_stream_synchronize(stream); r != CUDA_SUCCESS) return r;
    if (pitch == width * sizeof(T)) width *= height, height = 1;  // rows back to back: one fill
    for (size_t row = 0; row < height; ++row)
        if (Status s = adsm::interpose::fill_shared_pattern(static_cast<char *>(ptr(dst)) + row * pitch, &value,
                                                            sizeof value, width);
            s != adsmSuccess)
            return to_cu(s, fn);
    return CUDA_SUCCESS;
}

}  // namespace

// Copies and fills.  A host-side pointer is host memory and a device-side
// one the driver's, unless it is shared memory; cuMemcpy asks the driver.
// The synchronous forms wait for the legacy (or per-thread) default stream.
#define HTOD(name, stream, ...)                                                                                    \
    copy("cuMemcpyHtoD", stream, ptr(dst), Side::device, src, Side::host, n, [&] { return FORWARD(name, __VA_ARGS__); })
#define DTOH(name, stream, ...)                                                                                    \
    copy("cuMemcpyDtoH", stream, dst, Side::host, ptr(src), Side::device, n, [&] { return FORWARD(name, __VA_ARGS__); })
#define DTOD(name, stream, ...)                                                                                    \
    copy("cuMemcpyDtoD", stream, ptr(dst), Side::device, ptr(src), Side::device, n,                                \
         [&] { return FORWARD(name, __VA_ARGS__); })
#define UNIFIED(name, stream, ...)                                                                                 \
    copy("cuMemcpy", stream, ptr(dst), side_of(dst), ptr(src), side_of(src), n, [&] { return FORWARD(name, __VA_ARGS__); })
#define FILL(fn, value, name, stream, ...) fill(fn, stream, dst, value, n, [&] { return FORWARD(name, __VA_ARGS__); })

CUDA_WRAPPER(cuMemcpyHtoD_v2, CUdeviceptr dst, const void *src, size_t n) {
    return HTOD(cuMemcpyHtoD_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoD_v2_ptds, CUdeviceptr dst, const void *src, size_t n) {
    return HTOD(cuMemcpyHtoD_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoDAsync_v2, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    return HTOD(cuMemcpyHtoDAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    s = per_thread(s);
    return HTOD(cuMemcpyHtoDAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoH_v2, void *dst, CUdeviceptr src, size_t n) {
    return DTOH(cuMemcpyDtoH_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoH_v2_ptds, void *dst, CUdeviceptr src, size_t n) {
    return DTOH(cuMemcpyDtoH_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoHAsync_v2, void *dst, CUdeviceptr src, size_t n, CUstream s) {
    return DTOH(cuMemcpyDtoHAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoHAsync_v2_ptsz, void *dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return DTOH(cuMemcpyDtoHAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoD_v2, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return DTOD(cuMemcpyDtoD_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoD_v2_ptds, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return DTOD(cuMemcpyDtoD_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoDAsync_v2, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return DTOD(cuMemcpyDtoDAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return DTOD(cuMemcpyDtoDAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpy, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return UNIFIED(cuMemcpy, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpy_ptds, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return UNIFIED(cuMemcpy_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
// Between contexts: shared memory is one address space whichever context
// names it.
CUDA_WRAPPER(cuMemcpyPeer, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
    return UNIFIED(cuMemcpyPeer, CU_STREAM_LEGACY, dst, dc, src, sc, n);
}
CUDA_WRAPPER(cuMemcpyPeer_ptds, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
    return UNIFIED(cuMemcpyPeer_ptds, CU_STREAM_PER_THREAD, dst, dc, src, sc, n);
}
CUDA_WRAPPER(cuMemcpyPeerAsync, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s) {
    return UNIFIED(cuMemcpyPeerAsync, s, dst, dc, src, sc, n, s);
}
CUDA_WRAPPER(cuMemcpyPeerAsync_ptsz, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
             CUstream s) {
    s = per_thread(s);
    return UNIFIED(cuMemcpyPeerAsync_ptsz, s, dst, dc, src, sc, n, s);
}
CUDA_WRAPPER(cuMemcpyAsync, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return UNIFIED(cuMemcpyAsync, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyAsync_ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return UNIFIED(cuMemcpyAsync_ptsz, s, dst, src, n, s);
}
// Copies with a CUDA array on one side (shared memory on the other: through
// the protocol, the array side by the driver's host copies).
#define TO_ARRAY(fn, name, stream, from, ...)                                          \
    array_copy(                                                                        \
        fn, stream, from, n, false, [&] { return FORWARD(name, __VA_ARGS__); },        \
        [&](size_t off, unsigned char *buf, size_t len) {                              \
            return FORWARD(cuMemcpyHtoA_v2, dst, offset + off, buf, len);              \
        })
#define FROM_ARRAY(fn, name, stream, to, ...)                                          \
    array_copy(                                                                        \
        fn, stream, to, n, true, [&] { return FORWARD(name, __VA_ARGS__); },           \
        [&](size_t off, unsigned char *buf, size_t len) {                              \
            return FORWARD(cuMemcpyAtoH_v2, buf, src, offset + off, len);              \
        })

CUDA_WRAPPER(cuMemcpyHtoA_v2, CUarray dst, size_t offset, const void *src, size_t n) {
    return TO_ARRAY("cuMemcpyHtoA", cuMemcpyHtoA_v2, CU_STREAM_LEGACY, src, dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoA_v2_ptds, CUarray dst, size_t offset, const void *src, size_t n) {
    return TO_ARRAY("cuMemcpyHtoA", cuMemcpyHtoA_v2_ptds, CU_STREAM_PER_THREAD, src, dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoAAsync_v2, CUarray dst, size_t offset, const void *src, size_t n, CUstream s) {
    return TO_ARRAY("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync_v2, s, src, dst, offset, src, n, s);
}
CUDA_WRAPPER(cuMemcpyHtoAAsync_v2_ptsz, CUarray dst, size_t offset, const void *src, size_t n, CUstream s) {
    s = per_thread(s);
    return TO_ARRAY("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync_v2_ptsz, s, src, dst, offset, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoA_v2, CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
    return TO_ARRAY("cuMemcpyDtoA", cuMemcpyDtoA_v2, CU_STREAM_LEGACY, ptr(src), dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoA_v2_ptds, CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
    return TO_ARRAY("cuMemcpyDtoA", cuMemcpyDtoA_v2_ptds, CU_STREAM_PER_THREAD, ptr(src), dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyAtoH_v2, void *dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoH", cuMemcpyAtoH_v2, CU_STREAM_LEGACY, dst, dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoH_v2_ptds, void *dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoH", cuMemcpyAtoH_v2_ptds, CU_STREAM_PER_THREAD, dst, dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoHAsync_v2, void *dst, CUarray src, size_t offset, size_t n, CUstream s) {
    return FROM_ARRAY("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync_v2, s, dst, dst, src, offset, n, s);
}
CUDA_WRAPPER(cuMemcpyAtoHAsync_v2_ptsz, void *dst, CUarray src, size_t offset, size_t n, CUstream s) {
    s = per_thread(s);
    return FROM_ARRAY("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync_v2_ptsz, s, dst, dst, src, offset, n, s);
}
CUDA_WRAPPER(cuMemcpyAtoD_v2, CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoD", cuMemcpyAtoD_v2, CU_STREAM_LEGACY, ptr(dst), dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoD_v2_ptds, CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoD", cuMemcpyAtoD_v2_ptds, CU_STREAM_PER_THREAD, ptr(dst), dst, src, offset, n);
}

// Each fill width comes in four entry points: synchronous and asynchronous,
// each also with the per-thread default stream.
#define ADSM_FILL_WRAPPERS(bits, type, value)                                                               \
    CUDA_WRAPPER(cuMemsetD##bits##_v2, CUdeviceptr dst, type value, size_t n) {                            \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##_v2, CU_STREAM_LEGACY, dst, value, n);     \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##_v2_ptds, CUdeviceptr dst, type value, size_t n) {                       \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##_v2_ptds, CU_STREAM_PER_THREAD, dst, value, n); \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##Async, CUdeviceptr dst, type value, size_t n, CUstream s) {              \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##Async, s, dst, value, n, s);             \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##Async_ptsz, CUdeviceptr dst, type value, size_t n, CUstream s) {         \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##Async_ptsz, per_thread(s), dst, value, n, s); \
    }
#define ADSM_FILL_NAME(bits) "cuMemsetD" #bits

ADSM_FILL_WRAPPERS(8, unsigned char, uc)
ADSM_FILL_WRAPPERS(16, unsigned short, us)
ADSM_FILL_WRAPPERS(32, unsigned int, ui)

#define FILL2D(fn, value, name, stream, ...) \
    fill2d(fn, stream, dst, pitch, value, width, height, [&] { return FORWARD(name, __VA_ARGS__); })
#define ADSM_FILL_2D_WRAPPERS(bits, type, value)                                                               \
    CUDA_WRAPPER(cuMemsetD2D##bits##_v2, CUdeviceptr dst, size_t pitch, type value, size_t width, size_t height) { \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##_v2, CU_STREAM_LEGACY, dst, pitch, value, \
                      width, height);                                                                          \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##_v2_ptds, CUdeviceptr dst, size_t pitch, type value, size_t width,         \
                 size_t height) {                                                                              \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##_v2_ptds, CU_STREAM_PER_THREAD, dst,   \
                      pitch, value, width, height);                                                            \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##Async, CUdeviceptr dst, size_t pitch, type value, size_t width, size_t height, \
                 CUstream s) {                                                                                 \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##Async, s, dst, pitch, value, width,     \
                      height, s);                                                                              \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##Async_ptsz, CUdeviceptr dst, size_t pitch, type value, size_t width,       \
                 size_t height, CUstream s) {                                                                  \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##Async_ptsz, per_thread(s), dst, pitch, \
                      value, width, height, s);                                                                \
    }
#define ADSM_FILL_2D_NAME(bits) "cuMemsetD2D" #bits

ADSM_FILL_2D_WRAPPERS(8, unsigned char, uc)
ADSM_FILL_2D_WRAPPERS(16, unsigned short, us)
ADSM_FILL_2D_WRAPPERS(32, unsigned int, ui)

#define BATCH(name, stream, fail_idx, ...) \
    copy_batch(stream, dsts, srcs, sizes, count, fail_idx, [&] { return FORWARD(name, __VA_ARGS__); })
CUDA_WRAPPER(cuMemcpyBatchAsync, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx, CUstream s) {
    return BATCH(cuMemcpyBatchAsync, s, fail_idx, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, fail_idx, s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx, CUstream s) {
    s = per_thread(s);
    return BATCH(cuMemcpyBatchAsync_ptsz, s, fail_idx, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, fail_idx,
                 s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_v2, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, CUstream s) {
    return BATCH(cuMemcpyBatchAsync_v2, s, nullptr, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_v2_ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, CUstream s) {
    s = per_thread(s);
    return BATCH(cuMemcpyBatchAsync_v2_ptsz, s, nullptr, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, s);
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
             unsigned long long flags, CUstream s) {
    size_t one_failed = 0;
    return copy_3d_batch(
        s, nops, ops, fail_idx, [&] { return FORWARD(cuMemcpy3DBatchAsync, nops, ops, fail_idx, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync, 1, op, &one_failed, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_ptsz, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
             unsigned long long flags, CUstream s) {
    s = per_thread(s);
    size_t one_failed = 0;
    return copy_3d_batch(
        s, nops, ops, fail_idx, [&] { return FORWARD(cuMemcpy3DBatchAsync_ptsz, nops, ops, fail_idx, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_ptsz, 1, op, &one_failed, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_v2, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s) {
    return copy_3d_batch(
        s, nops, ops, nullptr, [&] { return FORWARD(cuMemcpy3DBatchAsync_v2, nops, ops, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_v2, 1, op, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_v2_ptsz, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
             CUstream s) {
    s = per_thread(s);
    return copy_3d_batch(
        s, nops, ops, nullptr, [&] { return FORWARD(cuMemcpy3DBatchAsync_v2_ptsz, nops, ops, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_v2_ptsz, 1, op, flags, s); });
}


CUDA_WRAPPER(cuMemcpy2D_v2, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy2D_v2, c); });
}
CUDA_WRAPPER(cuMemcpy2D_v2_ptds, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy2D_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy2DUnaligned_v2, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy2DUnaligned_v2, c); });
}
CUDA_WRAPPER(cuMemcpy2DUnaligned_v2_ptds, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy2DUnaligned_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy2DAsync_v2, const CUDA_MEMCPY2D *c, CUstream s) {
    return copy2d(s, c, [&] { return FORWARD(cuMemcpy2DAsync_v2, c, s); });
}
CUDA_WRAPPER(cuMemcpy2DAsync_v2_ptsz, const CUDA_MEMCPY2D *c, CUstream s) {
    s = per_thread(s);
    return copy2d(s, c, [&] { return FORWARD(cuMemcpy2DAsync_v2_ptsz, c, s); });
}
CUDA_WRAPPER(cuMemcpy3D_v2, const CUDA_MEMCPY3D *c) {
    return copy3d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy3D_v2, c); });
}
CUDA_WRAPPER(cuMemcpy3D_v2_ptds, const CUDA_MEMCPY3D *c) {
    return copy3d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy3D_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy3DAsync_v2, const CUDA_MEMCPY3D *c, CUstream s) {
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DAsync_v2, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DAsync_v2_ptsz, const CUDA_MEMCPY3D *c, CUstream s) {
    s = per_thread(s);
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DAsync_v2_ptsz, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DPeer, const CUDA_MEMCPY3D_PEER *c) {
    return copy3d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy3DPeer, c); });
}
CUDA_WRAPPER(cuMemcpy3DPeer_ptds, const CUDA_MEMCPY3D_PEER *c) {
    return copy3d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy3DPeer_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy3DPeerAsync, const CUDA_MEMCPY3D_PEER *c, CUstream s) {
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DPeerAsync, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DPeerAsync_ptsz, const CUDA_MEMCPY3D_PEER *c, CUstream s) {
    s = per_thread(s);
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DPeerAsync_ptsz, c, s); });
}
