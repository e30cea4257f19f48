// One buffer of the program's, of a size the program gives, that the
// kernel fills or reads in one call outside the I/O families (random
// bytes, readiness arrays, extended attributes, directory entries,
// messages): the kernel cannot take the runtime's fault, so such a buffer
// in shared memory whose block was closed (its data on the device) made
// the call fail with EFAULT.  It goes to the call as one slice of the
// thread's staging buffer (staging.h), for one real call whose result and
// errno are the program's.  Unlike read's, these calls are never repeated
// in rounds: each one's effect (a message taken off a queue, a directory's
// position) happens once.
#pragma once

#include <errno.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "api/preload.h"
#include "interpose/staged_calls.h"
#include "interpose/staging.h"

namespace adsm::interpose {

// The program's buffer on staging for one call.  The calls need it in one
// piece: one that straddles shared and other memory (which no single
// allocation does), or is larger than a staging round, goes to the kernel
// as it is, and the result is the kernel's.
class OnStaging {
public:
    // `in`: the call fills the buffer (accounted as a read), else reads it.
    OnStaging(void *buf, size_t n, bool in = true) : bracket_(in, n), whole_{buf, n} { st_.layout(&whole_, 1, 0, 0); }
    const Staged &staged() const { return st_; }
    void *whole() const {
        return st_.iovcnt() == 1 && st_.requested() == whole_.iov_len ? st_.iov()[0].iov_base : nullptr;
    }
    // The program's bytes into staging, for a call that reads them.
    bool gather() {
        uint64_t ticket = 0;
        bool ok = st_.gather(&ticket) && adsm::preload::wait_copies(ticket) == adsmSuccess;
        if (ok) bracket_.set_result(whole_.iov_len);
        return ok;
    }
    // The first n staged bytes into the program's buffer; false when some
    // did not reach shared memory.
    bool scatter(size_t n) {
        bool failed = false;
        st_.scatter(n, false, &failed);
        bracket_.set_result(failed ? 0 : n);
        return !failed;
    }

private:
    StagingCall bracket_;  // first: it owns the staging buffer while the call lasts
    struct iovec whole_;
    Staged st_;
};

// A call that fills up to n bytes at buf and returns a count, or -1 with
// errno: call(p) makes it on p, the staged copy when buf is shared memory.
// written(r) is how many bytes a result r wrote.  Bytes the kernel wrote
// that cannot reach shared memory fail the call with `lost` (EIO where
// the call took something that cannot be given again, as read's do).
template <class R, class Call, class Written>
R filled_buffer(void *buf, size_t n, int lost, Call &&call, Written &&written) {
    if (n == 0 || !stages(buf, n)) return call(buf);
    const int entry = errno;  // what a call that succeeds leaves, whatever the runtime did
    OnStaging on(buf, n);
    void *staged = on.whole();
    errno = entry;
    if (!staged) return call(buf);
    R r = call(staged);
    if (r < 0) return r;  // (the kernel wrote nothing the program may read)
    if (!on.scatter(written(r))) {
        errno = lost;
        return static_cast<R>(-1);
    }
    errno = entry;
    return r;
}

// A call that reads n bytes at buf: call(p) makes it on p, a staged copy of
// the program's bytes when buf is shared memory.  Bytes that cannot be read
// fail the call with EFAULT before it is made, as the kernel's own copy
// would have.
template <class R, class Call>
R read_buffer(const void *buf, size_t n, Call &&call) {
    if (n == 0 || !stages(buf, n)) return call(buf);
    const int entry = errno;
    OnStaging on(const_cast<void *>(buf), n, false);
    void *staged = on.whole();
    errno = entry;
    if (!staged) return call(buf);
    if (!on.gather()) {
        errno = EFAULT;
        return static_cast<R>(-1);
    }
    errno = entry;
    return call(static_cast<const void *>(staged));
}

}  // namespace adsm::interpose
