// Virtual-memory primitives: memfds, shared mappings, protection.  Thin over
// the system calls, which they make directly: the runtime's own mappings
// never pass through the interposed mmap family (interpose/mmap.cpp), which
// guards the shared window against the program.  Functions return 0 or a
// negative errno unless they say otherwise.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace adsm::os {

constexpr size_t kPageSize = 4096;
constexpr size_t kPageShift = 12;

constexpr uintptr_t page_down(uintptr_t a) { return a & ~(uintptr_t(kPageSize) - 1); }
constexpr uintptr_t page_up(uintptr_t a) { return (a + kPageSize - 1) & ~(uintptr_t(kPageSize) - 1); }

// True and sets *out when `n` rounded up to pages does not overflow.
inline bool page_round(size_t n, size_t *out) {
    if (n > SIZE_MAX - (kPageSize - 1)) return false;
    *out = (n + kPageSize - 1) & ~(kPageSize - 1);
    return true;
}

// A sparse memfd of `size` bytes (close-on-exec); returns the fd or -errno.
int memfd_sized(const char *name, uint64_t size);
// For the message of a mapping that failed with err: where the process has
// an address-space limit (RLIMIT_AS, `ulimit -v`) and err is ENOMEM, a
// note saying how much it may map; else "".
std::string address_limit_note(int err);
// What the process may still map under its address-space limit (RLIMIT_AS
// less what it maps now), or UINT64_MAX where it has none.
uint64_t address_room();

// Maps [off, off+len) of fd shared.  With `at` != 0 the mapping must land
// exactly there without replacing anything (MAP_FIXED_NOREPLACE); with
// `replace` it overwrites what is there (MAP_FIXED).  Returns the address or
// MAP_FAILED with errno set.
void *map_shared(int fd, uint64_t off, size_t len, int prot, uintptr_t at = 0, bool replace = false);

// Anonymous PROT_NONE reservation that the kernel never commits.  With
// `at` != 0 it lands exactly there, without replacing anything unless
// `replace` (then it overwrites whatever is there).
void *reserve(size_t len, uintptr_t at = 0, bool replace = false);

// Private anonymous memory, or MAP_FAILED with errno set.
void *map_anon(size_t len, int prot, bool noreserve = false);
int unmap(void *addr, size_t len);
int protect(void *addr, size_t len, int prot);
// Whether the CPU may read the byte at addr, asked of the kernel without
// touching it (so without a fault): for invariant checks of what a page's
// protection should be.  1: it may, 0: it would fault, -1: the kernel would
// not say (the system call is filtered), or asking would make the page (it
// is not in memory).  Async-signal-safe.
int readable(const void *addr);
// Copies n bytes from another place of this process as the kernel copies
// a system call's argument: false (the kernel's EFAULT) where some byte is
// not readable, or writable for copy_checked_to, rather than a fault.
// Where a sandbox filters the copy's system call, copied plainly.
bool copy_checked_from(void *to, const void *from, size_t n);
bool copy_checked_to(void *to, const void *from, size_t n);
// Whether any page of [addr, addr+len) exists, as mincore sees it (a page
// of a shared mapping is in memory once made; one swapped out reads as not
// made).  True where the kernel will not say.  Async-signal-safe.
bool any_page_made(const void *addr, size_t len);
// Moves the mapping at from (len bytes) to exactly `to`, replacing what is there.
int remap_fixed(void *from, size_t len, void *to);

// Maps the pages behind [addr, addr+len) into the page tables as a write
// (or a read) fault would, without a fault per page (MADV_POPULATE_WRITE,
// MADV_POPULATE_READ; Linux 5.14); 0 or -errno.
int populate(void *addr, size_t len, bool for_write);
// Populates for writing the pages of [addr, addr+len) (whole pages, of a
// shared mapping) that already exist, and makes none: another process
// wrote them.  Best effort.
void populate_made_pages(void *addr, size_t len);

// Gives the pages of [off, off+len) in fd back to the system; they read as zeros after.
int punch_hole(int fd, uint64_t off, uint64_t len);

// Sorted, disjoint [begin, end) ranges (os/data_runs.h).
using Runs = std::vector<std::pair<uint64_t, uint64_t>>;

// The system page size, verified once against kPageSize.
bool page_size_supported();

}  // namespace adsm::os
