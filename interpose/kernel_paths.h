// Path names the kernel reads from the program's memory.  As for the
// structures of kernel_structs.cpp, the kernel cannot take the runtime's
// fault: a path inside shared memory whose block was closed (its data on
// the device) made open, stat, unlink and every other call that takes a
// path fail with EFAULT.  A path that starts in the window goes to the call
// as a copy on the stack, read the way the kernel reads one (up to its
// terminating zero, at most PATH_MAX bytes).
#pragma once

#include <errno.h>
#include <limits.h>

#include <cstddef>
#include <type_traits>

#include "interpose/staged_calls.h"

namespace adsm::interpose {

// Reads the string at p as the kernel reads one: a page at a time, up to
// and including its zero, shared memory through the protocol.  Into out
// (room for max bytes), or, with out null, only measured.  Its length with
// the zero, or 0 with errno what the kernel would say: EFAULT where a byte
// cannot be read, `too_long` where no zero comes within max bytes.
size_t read_string(const char *p, char *out, size_t max, int too_long);

// Copies the path at p into out (ENAMETOOLONG past PATH_MAX).
inline bool copy_path(const char *p, char (&out)[PATH_MAX]) { return read_string(p, out, PATH_MAX, ENAMETOOLONG) != 0; }

// What a call that returns R gives back when it fails before it is made.
template <class R>
R failure() {
    if constexpr (std::is_pointer_v<R>) return nullptr;
    else return static_cast<R>(-1);
}

// Out of line, so that the copy's page and more of stack is taken only by
// calls whose path is in the window (a signal handler's open on a small
// alternate stack pays nothing for the rest).
template <class Call>
__attribute__((noinline)) auto call_with_copy(const char *path, Call &call) -> decltype(call(path)) {
    char copy[PATH_MAX];
    const int entry = errno;  // what a call that succeeds leaves
    if (!copy_path(path, copy)) return failure<decltype(call(path))>();
    errno = entry;
    return call(static_cast<const char *>(copy));
}

// call(path), with the path the kernel can read.
template <class Call>
auto with_path(const char *path, Call &&call) -> decltype(call(path)) {
    if (!path || !stages(path, 1)) return call(path);
    return call_with_copy(path, call);
}

// call(a, b) for a call that takes two paths.
template <class Call>
auto with_paths(const char *a, const char *b, Call &&call) -> decltype(call(a, b)) {
    return with_path(a, [&](const char *pa) { return with_path(b, [&](const char *pb) { return call(pa, pb); }); });
}

}  // namespace adsm::interpose
