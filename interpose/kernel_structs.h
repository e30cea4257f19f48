// One structure of the program's that the kernel fills or reads, for one
// call: the kernel cannot take the runtime's fault, so a structure in
// shared memory whose block was closed (its data on the device) made such
// a call fail with EFAULT.  Each is small, so the call gets a copy of it
// on the stack, loaded from the program's memory first (a call may leave
// parts as they were: a wait that reaps no child writes no status) and
// stored back after a call that did not fail.  Used by kernel_structs.cpp
// and by the socket calls' addresses and control data (io.cpp).
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>

#include "api/preload.h"
#include "interpose/staged_calls.h"

namespace adsm::interpose {

// The program's structure [p, p+n) for one call: a copy on the stack when it
// is one piece of shared memory, else p itself (the kernel's to use or
// refuse, as without the runtime).
class Local {
public:
    // `out`: the call may write it (else it only reads it, and nothing is
    // stored back).
    Local(const void *p, size_t n, bool out = true) : p_(const_cast<void *>(p)), n_(n), out_(out) {
        if (!p || n > sizeof copy_ || !stages(p, n)) return;
        adsm::preload::Piece piece;
        if (adsm::preload::split(p, n, &piece, 1) != 1 || !piece.shared || piece.n != n) return;
        copied_ = true;
        const int saved = errno;  // (a call that succeeds leaves errno as it was)
        loaded_ = adsm::preload::read_shared(p, copy_, n) == adsmSuccess;
        errno = saved;
    }
    Local(const Local &) = delete;
    Local &operator=(const Local &) = delete;

    template <class T>
    T *get() {
        return static_cast<T *>(copied_ ? static_cast<void *>(copy_) : p_);
    }
    // Whether the call gets the copy (the structure is shared memory).
    bool copied() const { return copied_; }
    // False when the program's bytes could not be read.
    bool loaded() const { return !copied_ || loaded_; }
    // False when the kernel's bytes could not be stored.
    bool store() { return !copied_ || !out_ || adsm::preload::write_shared(p_, copy_, n_) == adsmSuccess; }

private:
    void *p_;
    size_t n_;
    bool out_;
    bool copied_ = false, loaded_ = false;
    // (The largest: struct utsname, 390 bytes.)
    alignas(16) unsigned char copy_[512];
};

// Makes call() on the structures' copies.  A structure that cannot be
// loaded or stored fails the call with EFAULT, as the kernel's own copy
// would have; then undo(r) gives back what the call made (descriptors), as
// the kernel does when its copy fails.  A call that failed stores nothing
// back, errno its own.
template <class R, class Call, class Undo, class... Locals>
R filled_or_undone(Call &&call, Undo &&undo, Locals &...locals) {
    if (!(locals.loaded() && ...)) {
        errno = EFAULT;
        return static_cast<R>(-1);
    }
    R r = call();
    if (r == static_cast<R>(-1)) return r;
    const int saved = errno;
    if (!(locals.store() & ...)) {
        undo(r);
        errno = EFAULT;
        return static_cast<R>(-1);
    }
    errno = saved;
    return r;
}
template <class R, class Call, class... Locals>
R filled(Call &&call, Locals &...locals) {
    return filled_or_undone<R>(call, [](R) {}, locals...);
}

// The common case: one structure at p, which call(copy) fills.
template <class R = int, class T, class Call>
R one(T *p, Call &&call) {
    Local l(p, sizeof *p);
    return filled<R>([&] { return call(l.get<T>()); }, l);
}

// A socket address and its length, which the call reads (the room there is)
// and writes (the address's size).
struct Address {
    Local len;
    Local addr;
    Address(void *a, socklen_t *l) : len(l, sizeof *l), addr(a, room(a, l, len)) {}

private:
    // The room at a, when a is shared memory: the length's copy, or the
    // length read as the kernel would, so that a bad pointer is the
    // kernel's to report, not a crash here.
    static size_t room(const void *a, socklen_t *l, Local &len) {
        if (!a || !l || !stages(a, 1)) return 0;
        if (len.copied()) return len.loaded() ? *len.get<socklen_t>() : 0;
        socklen_t n = 0;
        struct iovec mine = {&n, sizeof n}, theirs = {l, sizeof n};
        return process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0) == sizeof n ? n : 0;
    }
};

}  // namespace adsm::interpose
