// A structure the kernel reads or writes in the program's own memory, for
// calls whose argument's size the runtime cannot be sure of: a driver may
// use more of an ioctl's argument than its number says, and would then
// write past a copy (kernel_structs.h) into the interposer's stack.  So
// the call keeps the program's pointer, and the CPU touches each page of the
// structure first, as the program's own access would: a read, or for a
// structure the kernel writes an atomic add of nothing, opens its block,
// dirty tracking included (a racing kernel is a race, as for any access).
// The kernel then finds the pages open.  A release on another thread that
// closes the block again before the call reaches the kernel leaves the call
// failing with EFAULT, as it did without this.
#pragma once

#include <cstddef>

namespace adsm::interpose {

// Opens the shared memory in [p, p+n) to the kernel (anything else is the
// kernel's to use or refuse, and is not touched); `write`: the kernel may
// write it.  Whether all of it was shared memory, now open.
bool open_in_place(const void *p, size_t n, bool write);

}  // namespace adsm::interpose
