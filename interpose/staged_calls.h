// A whole interposed call through staging (staging.h): whether a
// program's buffers need it, and the rounds of a call that fills memory
// (staged_in) or reads it (staged_out).  The read and write families use
// both; the other calls whose buffers the kernel fills (random bytes)
// use staged_in.
#pragma once

#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <climits>
#include <cstdint>

#include "api/preload.h"
#include "interpose/staging.h"

namespace adsm::interpose {

// A length the kernel refuses anyway (more than SSIZE_MAX, or wrapping
// around the address space) goes to it unchanged, so the error is its own.
inline bool plausible(const void *buf, size_t n) {
    return n <= SSIZE_MAX && reinterpret_cast<uintptr_t>(buf) <= UINTPTR_MAX - n;
}

// Cheapest test first: most calls are nowhere near the window.
inline bool stages(const void *buf, size_t n) {
    return adsm::preload::touches_window(buf, n) && plausible(buf, n) && !adsm::inside_runtime();
}
inline bool stages(const struct iovec *iov, int iovcnt) {
    if (adsm::preload::g_window_size.load(std::memory_order_relaxed) == 0 || !iov || adsm::inside_runtime()) return false;
    size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) {
        if (!plausible(iov[i].iov_base, iov[i].iov_len) || iov[i].iov_len > SSIZE_MAX - total) return false;
        total += iov[i].iov_len;
    }
    return touches_shared(iov, iovcnt);
}

inline size_t total_of(const struct iovec *iov, int iovcnt) {
    size_t t = 0;
    for (int i = 0; i < iovcnt; ++i) t += iov[i].iov_len;
    return t;
}

inline void chaos_tick() {
    if (adsm::preload::g_chaos.load(std::memory_order_relaxed)) adsm::preload::chaos_tick();
}

// Device copies still filling or draining the thread's staging buffers.
// The real calls are cancellation points: a thread cancelled at one
// unwinds through here, and its staging buffers go when it ends, so the
// copies must be over first (else the copy engine wrote into, or read
// from, memory unmapped under it).
struct CopiesInFlight {
    uint64_t ticket[2] = {0, 0};
    CopiesInFlight() = default;
    CopiesInFlight(const CopiesInFlight &) = delete;
    CopiesInFlight &operator=(const CopiesInFlight &) = delete;
    // Waits for both; false if some copy failed.
    bool wait() {
        bool ok = true;
        for (uint64_t &t : ticket) {
            if (t) ok &= adsm::preload::wait_copies(t) == adsmSuccess;
            t = 0;
        }
        return ok;
    }
    ~CopiesInFlight() { wait(); }
};

// Data into memory.  call(iov, iovcnt, done) makes one real call; with
// `rounds` a complete round is followed by another (regular files), and the
// rounds alternate staging buffers so that one round's copies to the device
// overlap the next round's call.
template <class Call>
inline ssize_t staged_in(const struct iovec *iov, int iovcnt, bool rounds, Call &&call) {
    const int entry_errno = errno;  // what a call that succeeds leaves, whatever the runtime did
    chaos_tick();
    const size_t want = total_of(iov, iovcnt);
    StagingCall bracket(true, want);
    size_t done = 0;
    ssize_t result = -1;
    int err = 0;
    Staged st[2];
    // (After the buffers: destroyed first, it waits before a buffer of the
    // call's own is unmapped.)
    CopiesInFlight in_flight;
    uint64_t *pending = in_flight.ticket;
    // Bytes whose copy into shared memory failed were read from the file but
    // are not in the program's buffer: the call fails with EIO.
    bool lost = false;
    for (int round = 0;; ++round) {
        int b = round & 1;
        lost |= adsm::preload::wait_copies(pending[b]) != adsmSuccess;  // this buffer's last round has landed
        pending[b] = 0;
        if (lost) break;
        st[b].layout(iov, iovcnt, done, b);
        if (st[b].requested() == 0) {
            if (st[b].out_of_staging() && done == 0) err = ENOMEM;  // not an end of file
            result = err ? -1 : static_cast<ssize_t>(done);
            break;
        }
        ssize_t r = call(st[b].iov(), st[b].iovcnt(), done);
        if (r < 0) {
            err = errno;
            result = done ? static_cast<ssize_t>(done) : -1;
            break;
        }
        bool more = rounds && r > 0 && static_cast<size_t>(r) == st[b].requested() && done + static_cast<size_t>(r) < want;
        bool failed;
        pending[b] = st[b].scatter(static_cast<size_t>(r), more, &failed);
        lost |= failed;
        done += static_cast<size_t>(r);
        if (!more) {
            result = static_cast<ssize_t>(done);
            break;
        }
    }
    // The data is in place when the call returns.
    lost |= !in_flight.wait();
    if (lost) {
        result = -1;
        err = EIO;
    }
    bracket.set_result(lost ? 0 : done);
    errno = result < 0 ? err : entry_errno;
    return result;
}

// Data out of memory: rounds go on while each one was taken whole, which is
// what one big blocking call does; the next round is gathered from the
// device while this round's call runs.
template <class Call>
inline ssize_t staged_out(const struct iovec *iov, int iovcnt, Call &&call) {
    const int entry_errno = errno;
    chaos_tick();
    const size_t want = total_of(iov, iovcnt);
    StagingCall bracket(false, want);
    size_t done = 0;
    Staged st[2];
    CopiesInFlight in_flight;
    uint64_t *ticket = in_flight.ticket;
    st[0].layout(iov, iovcnt, 0, 0);
    if (st[0].requested() == 0) {
        if (!st[0].out_of_staging()) {
            errno = entry_errno;
            return 0;
        }
        errno = ENOMEM;  // (returning 0 would leave the program retrying for ever)
        return -1;
    }
    if (!st[0].gather(&ticket[0])) {
        errno = EFAULT;
        return -1;
    }
    ssize_t result = -1;
    int err = 0;
    for (int round = 0;; ++round) {
        int b = round & 1, n = 1 - b;
        size_t next_at = done + st[b].requested();
        bool prefetched = false;
        if (next_at < want) {
            st[n].layout(iov, iovcnt, next_at, n);
            prefetched = st[n].requested() > 0 && st[n].gather(&ticket[n]);
        }
        if (adsm::preload::wait_copies(ticket[b]) != adsmSuccess) {
            // This round's bytes never came from the device: write none of them.
            err = EIO;
            result = done ? static_cast<ssize_t>(done) : -1;
            break;
        }
        ssize_t r = call(st[b].iov(), st[b].iovcnt(), done);
        if (r < 0) {
            err = errno;
            result = done ? static_cast<ssize_t>(done) : -1;
            break;
        }
        done += static_cast<size_t>(r);
        if (static_cast<size_t>(r) < st[b].requested() || done >= want || !prefetched) {
            result = static_cast<ssize_t>(done);
            break;
        }
    }
    in_flight.wait();
    bracket.set_result(done);
    errno = result < 0 ? err : entry_errno;
    return result;
}

}  // namespace adsm::interpose
