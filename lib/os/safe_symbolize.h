// Naming a code address from inside a signal handler: the module that
// maps it and the function symbol that holds it, read from /proc/self/maps
// and the module's ELF symbol tables through system calls into buffers on
// the stack.  No heap, no lock, and no C library function that another
// library may interpose (the runtime's own I/O interposers among them): a
// fault can stop a thread anywhere, inside malloc or the loader included.
// (The unwinder's naming cannot promise that: libunwind 1.6 allocates to
// build the module's path.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::os {

struct CodeName {
    char function[192];  // the symbol as the module spells it (mangled); "" if none holds the address
    uintptr_t offset;    // from the function's start
    char module[96];     // the mapped file's base name, or a mapping's own name ([vdso]); "" if unknown
};

// Names the code at `ip`; `lookup` is the address whose function is meant
// (a caller's return address minus one, so a call at a function's very end
// still names that function).  False when no mapping holds `lookup`.
bool name_code_address(uintptr_t ip, uintptr_t lookup, CodeName *out);

}  // namespace adsm::os
