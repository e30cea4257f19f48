// I/O on shared memory goes through staging.  A system call cannot take a
// fault on a closed page of shared memory (it returns EFAULT), so every call
// whose buffers touch shared memory is rewritten: shared pieces become
// slices of a per-thread staging buffer, ordinary pieces stay as they are,
// and exactly one real system call is made with the rewritten iovecs, so
// its result (short counts, EOF, EINTR, EFAULT at an unmapped byte) is the
// one the program would have seen.  Then the data moves between staging and
// shared memory through the protocol: a block the call overwrites whole is
// sent to the device without ever being fetched.
//
// Big transfers on regular files repeat the call in rounds (which is what
// one big call does for them), only while each round was complete, and
// alternate two staging buffers: the copy engine moves one round's data
// between staging and the device while the next round's system call runs.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "support/profile.h"

namespace adsm::interpose {

constexpr size_t kStageBytes = 4u << 20;  // per round
constexpr int kMaxIov = 64;               // pieces per round; more go to later rounds

// One round of a call: the program's buffers as pieces, with shared ones
// mapped onto one of the thread's two staging buffers.
class Staged {
public:
    Staged() = default;
    ~Staged();
    Staged(const Staged &) = delete;
    Staged &operator=(const Staged &) = delete;

    // Lays out the program's iovecs from byte `skip` on, on staging buffer
    // `buffer` (0 or 1); stops at the staging or iovec limits.
    void layout(const struct iovec *iov, int iovcnt, size_t skip, int buffer);

    const struct iovec *iov() const { return out_; }
    int iovcnt() const { return n_; }
    size_t requested() const { return requested_; }
    // No staging memory could be mapped for a shared piece: the round
    // stopped before it (and the call must not look like end of file).
    bool out_of_staging() const { return out_of_staging_; }

    // Before a call that reads from memory (write, send): copies the shared
    // pieces into staging; with `ticket` the device part may still be under
    // way on return (wait before the call).  False if the runtime could not.
    bool gather(uint64_t *ticket = nullptr);
    // After a call that wrote `done` bytes into memory (read, recv): moves
    // the staged part to shared memory; with async, returns the ticket of
    // device copies still reading from staging.  *failed: some bytes did
    // not reach shared memory (their copy to the device failed at once).
    uint64_t scatter(size_t done, bool async, bool *failed);

private:
    struct Slot {
        uint8_t *shared;  // where in shared memory (nullptr: ordinary)
        uint8_t *stage;
        size_t len;
    };
    uint8_t *stage_buffer(int buffer);

    struct iovec out_[kMaxIov];
    Slot slots_[kMaxIov];
    int n_ = 0;
    size_t requested_ = 0;
    bool out_of_staging_ = false;
    uint8_t *owned_ = nullptr;  // a buffer of this call's own (nested in a signal handler)
    int thread_buffer_ = -1;    // else which of the thread's two it uses
};

// Brackets a whole interposed call: the thread's staging buffers belong to
// the outermost one, and a call nested in a signal handler gets its own.
// It also accounts the call (statistics and trace): `in` for calls that
// fill memory, `bytes` asked for, and what set_result says was moved.
class StagingCall {
public:
    StagingCall(bool in, size_t bytes);
    ~StagingCall();
    StagingCall(const StagingCall &) = delete;
    StagingCall &operator=(const StagingCall &) = delete;
    void set_result(size_t moved) { moved_ = moved; }

private:
    profile::Cause cause_;  // the program's code that made the call
    bool in_;
    size_t bytes_, moved_ = 0;
    uint64_t start_;
};

// How many staged calls the thread has under way, nested ones included, as
// staging counts them (the tests read it).
int calls_under_way();

// Whether any of the iovecs touches the shared window.
bool touches_shared(const struct iovec *iov, int iovcnt);

// Regular files read and write whole rounds; pipes and sockets may not.
bool is_regular(int fd);

}  // namespace adsm::interpose
