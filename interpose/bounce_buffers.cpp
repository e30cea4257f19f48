#include "interpose/bounce_buffers.h"

#include <errno.h>
#include <sys/mman.h>

namespace adsm::interpose {

bool bounces(const void *buf, size_t n) {
    if (n == 0 || !preload::touches_window(buf, n) || preload::inside()) return false;
    preload::Piece piece;
    return preload::split(buf, n, &piece, 1) == 1 && piece.shared && piece.n == n;
}

void *make_bounce(size_t n, const void *from, size_t *mapped) {
    *mapped = os::page_up(n);
    void *buf = os::map_anon(*mapped, PROT_READ | PROT_WRITE);
    if (buf == MAP_FAILED) {
        errno = EAGAIN;
        return nullptr;
    }
    if (from && preload::read_shared(from, buf, n) != adsmSuccess) {
        os::unmap(buf, *mapped);
        errno = EIO;
        return nullptr;
    }
    return buf;
}

}  // namespace adsm::interpose
