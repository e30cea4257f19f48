// Which loaded object (the program, a shared library) holds an address.
// dladdr answers that too, but also searches the object's symbols for the
// nearest one, linearly: the preload asked it four times of the C library
// at start, a third of what the preload added to each process's start.
#pragma once

namespace adsm::os {

// An identity of the object holding addr (equal for two addresses of one
// object), or nullptr when no loaded object holds it.
const void *object_of(const void *addr);

// The file name the object holding addr was loaded by ("" for the program
// itself), or nullptr when no loaded object holds it.
const char *object_file(const void *addr);

}  // namespace adsm::os
