// The runtime's own descriptors (its memory's memfds, the write tracker,
// the simulated device's socket and process): held high in the table and
// known, so that a program's own use of descriptors never reaches them.
// Numbered from 3 up as the kernel gives them, they took the numbers
// programs pick themselves: a shell's `exec 3>file` (dup2 onto 3) replaced
// the host mirror's memfd, and the next command's fork copied the file
// instead; a program that closes every descriptor at its start (closefrom,
// close_range, a loop over /proc/self/fd) took the runtime's with them, and
// a fork child found its objects' data gone.  The interposers
// (interpose/descriptors.cpp) refuse to close them or to put another file
// in their place, as the kernel refuses for a descriptor that is not open.
#pragma once

namespace adsm::os {

// Moves fd up the table (close-on-exec) and records it; returns the
// descriptor to use from now on (fd itself where it cannot move: recorded
// all the same).  A negative fd is returned as it is.
int hold_fd(int fd);
// Forgets and closes a descriptor hold_fd returned.
void close_held(int fd);
// Whether fd is one of the runtime's (async-signal-safe, no lock).
bool is_held(int fd);
// The runtime's descriptors in [first, last], in order: at most max.
int held_in(unsigned first, unsigned last, int *out, int max);

}  // namespace adsm::os
