#include "interpose/kernel_in_place.h"

#include <cstdint>

#include "api/preload.h"
#include "interpose/staged_calls.h"
#include "os/vm.h"

namespace adsm::interpose {

namespace {
// A write access that changes nothing, even with another thread writing the
// byte meanwhile: the exchange stores the value it found, or finds a new one
// and tries again.  (An atomic or of zero may be made a plain load.)
void write_nothing(uint8_t *b) {
    uint8_t seen = __atomic_load_n(b, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(b, &seen, seen, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
}  // namespace

bool open_in_place(const void *p, size_t n, bool write) {
    if (!stages(p, n)) return false;
    preload::Piece pieces[4];
    const size_t count = preload::split(p, n, pieces, 4);
    size_t opened = 0;
    for (size_t i = 0; i < count; ++i) {
        if (!pieces[i].shared) continue;
        opened += pieces[i].n;
        // Each page's first byte in the piece (the object's own bytes only).
        for (uintptr_t at = reinterpret_cast<uintptr_t>(pieces[i].p), end = at + pieces[i].n; at < end;
             at = os::page_down(at) + os::kPageSize) {
            if (write) write_nothing(reinterpret_cast<uint8_t *>(at));
            else (void)*reinterpret_cast<volatile uint8_t *>(at);
        }
    }
    return opened == n;
}

}  // namespace adsm::interpose
