// Bulk memory: memcpy, memmove, memset, mempcpy and their _FORTIFY_SOURCE
// forms.  Anything small, or away from shared memory, goes to the C library
// after one comparison.  A large operation on shared memory goes through the
// protocol instead of through faults, which is cheaper where it matters:
// memset of blocks whose data is on the device becomes a fill on the
// device, a copy out of such blocks reads the device without fetching, and
// a copy that overwrites whole blocks needs no fetch first.  Either way the
// result is the same bytes.
#include <string.h>

#include "api/preload.h"
#include "interpose/interceptor.h"

extern "C" [[noreturn]] void __chk_fail(void);

DECLARE_REAL(memcpy)
DECLARE_REAL(memmove)
DECLARE_REAL(memset)
DECLARE_REAL(mempcpy)

namespace {

using adsm::Status;
using adsm::preload::Piece;

// Below this, faults on the program's view cost less than the bookkeeping.
constexpr size_t kBulk = 256 * 1024;

bool bulk(const void *a, const void *b, size_t n) {
    if (n < kBulk || adsm::inside_runtime()) return false;
    return adsm::preload::touches_window(a, n) || (b && adsm::preload::touches_window(b, n));
}

Piece first_piece(const void *p, size_t n) {
    Piece pieces[2];
    adsm::preload::split(p, n, pieces, 2);
    return pieces[0];
}

// Copies in pieces that are one kind on both sides.  Shared to shared goes
// through the program's view (faults keep it right).
void copy_bulk(uint8_t *dst, const uint8_t *src, size_t n) {
    for (size_t done = 0; done < n;) {
        Piece d = first_piece(dst + done, n - done);
        Piece s = first_piece(src + done, d.n);
        size_t len = s.n;
        Status st = adsmErrorNotSupported;
        if (d.shared && !s.shared) st = adsm::preload::write_shared(dst + done, src + done, len);
        else if (!d.shared && s.shared) st = adsm::preload::read_shared(src + done, dst + done, len);
        if (st != adsmSuccess) REAL(memcpy)(dst + done, src + done, len);
        done += len;
    }
}

void set_bulk(uint8_t *dst, int value, size_t n) {
    Piece p[32];
    size_t done = 0;
    while (done < n) {
        size_t np = adsm::preload::split(dst + done, n - done, p, 32);
        for (size_t k = 0; k < np; ++k) {
            if (!p[k].shared || adsm::preload::fill_shared(p[k].p, value, p[k].n) != adsmSuccess)
                REAL(memset)(p[k].p, value, p[k].n);
            done += p[k].n;
        }
    }
}

bool overlap(const void *a, const void *b, size_t n) {
    uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + n && y < x + n;
}

}  // namespace

// Each function below is split: a small operation goes straight on to the
// C library, and anything else takes the slow path.
namespace {

[[gnu::cold, gnu::noinline]] void *memcpy_slow(void *dst, const void *src, size_t n) {
    if (!bulk(dst, src, n)) return REAL(memcpy)(dst, src, n);
    copy_bulk(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
    return dst;
}

[[gnu::cold, gnu::noinline]] void *memmove_slow(void *dst, const void *src, size_t n) {
    // An overlapping move stays in the program's view, where it is ordered.
    if (!bulk(dst, src, n) || overlap(dst, src, n)) return REAL(memmove)(dst, src, n);
    copy_bulk(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
    return dst;
}

[[gnu::cold, gnu::noinline]] void *memset_slow(void *dst, int value, size_t n) {
    if (!bulk(dst, nullptr, n)) return REAL(memset)(dst, value, n);
    set_bulk(static_cast<uint8_t *>(dst), value, n);
    return dst;
}

[[gnu::cold, gnu::noinline]] void *mempcpy_slow(void *dst, const void *src, size_t n) {
    if (!bulk(dst, src, n)) return REAL(mempcpy)(dst, src, n);
    copy_bulk(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
    return static_cast<uint8_t *>(dst) + n;
}

}  // namespace

INTERCEPTOR(void *, memcpy, void *dst, const void *src, size_t n) {
    if (__builtin_expect(n < kBulk, 1)) return REAL(memcpy)(dst, src, n);
    return memcpy_slow(dst, src, n);
}

INTERCEPTOR(void *, memmove, void *dst, const void *src, size_t n) {
    if (__builtin_expect(n < kBulk, 1)) return REAL(memmove)(dst, src, n);
    return memmove_slow(dst, src, n);
}

INTERCEPTOR(void *, memset, void *dst, int value, size_t n) {
    if (__builtin_expect(n < kBulk, 1)) return REAL(memset)(dst, value, n);
    return memset_slow(dst, value, n);
}

INTERCEPTOR(void *, mempcpy, void *dst, const void *src, size_t n) {
    if (__builtin_expect(n < kBulk, 1)) return REAL(mempcpy)(dst, src, n);
    return mempcpy_slow(dst, src, n);
}

INTERCEPTOR(void *, __memcpy_chk, void *dst, const void *src, size_t n, size_t dstlen) {
    if (dstlen < n) __chk_fail();
    return memcpy(dst, src, n);
}

INTERCEPTOR(void *, __memmove_chk, void *dst, const void *src, size_t n, size_t dstlen) {
    if (dstlen < n) __chk_fail();
    return memmove(dst, src, n);
}

INTERCEPTOR(void *, __memset_chk, void *dst, int value, size_t n, size_t dstlen) {
    if (dstlen < n) __chk_fail();
    return memset(dst, value, n);
}

INTERCEPTOR(void *, __mempcpy_chk, void *dst, const void *src, size_t n, size_t dstlen) {
    if (dstlen < n) __chk_fail();
    return mempcpy(dst, src, n);
}
