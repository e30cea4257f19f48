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
// one big call does for them), and only while each round was complete.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace adsm::interpose {

constexpr size_t kStageBytes = 4u << 20;  // per round
constexpr int kMaxIov = 64;               // pieces per round; more go to later rounds

// One round of a call: the program's buffers as pieces, with shared ones
// mapped onto staging.
class Staged {
public:
    // Lays out the program's iovecs from byte `skip` on; stops at the staging
    // or iovec limits.  requested() says how many bytes this round covers.
    Staged(const struct iovec *iov, int iovcnt, size_t skip);
    ~Staged();
    Staged(const Staged &) = delete;
    Staged &operator=(const Staged &) = delete;

    bool any_shared() const { return shared_; }
    const struct iovec *iov() const { return out_; }
    int iovcnt() const { return n_; }
    size_t requested() const { return requested_; }

    // Before a call that reads from memory (write, send): copies the shared
    // pieces into staging.  False if the runtime could not (EFAULT).
    bool gather();
    // After a call that wrote `done` bytes into memory (read, recv): moves
    // the staged part of them to shared memory.
    void scatter(size_t done);

private:
    struct Slot {
        uint8_t *shared;  // where in shared memory (nullptr: ordinary)
        uint8_t *stage;
        size_t len;
    };
    struct iovec out_[kMaxIov];
    Slot slots_[kMaxIov];
    int n_ = 0;
    size_t requested_ = 0;
    bool shared_ = false;
    uint8_t *stage_ = nullptr;
    bool owned_ = false;  // a buffer of this call's own (nested in a signal handler)
};

// Whether any of the iovecs touches the shared window.
bool touches_shared(const struct iovec *iov, int iovcnt);

// Regular files read and write whole rounds; pipes and sockets may not.
bool is_regular(int fd);

}  // namespace adsm::interpose
