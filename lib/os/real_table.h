// The one table of real functions: every C library function that the
// preload interposes, and that the runtime or an interposer must still call
// as the C library (or whatever library comes next in lookup order)
// defines it, has one entry here.  Entries are spread over the files that
// need them (ADSM_REAL_FUNCTION; interposers get theirs from INTERCEPTOR in
// interpose/interceptor.h) and gathered by the linker into one section, so
// that one loop resolves them all, at load, with one mechanism:
// dlsym(RTLD_NEXT, name).  How dlsym itself is found is in real_table.cpp.
//
// "At load" is a constructor of the highest user priority, but other
// libraries' constructors (the C++ runtime's, another allocator's) run
// before any of ours and may already call an interposed function.  So the
// first use of an entry that finds the table unresolved resolves the whole
// table on the spot: the check is the test for a null address that any use
// of a function pointer needs anyway.
#pragma once

namespace adsm::os {

// Aligned to its size, so that the section is a plain array.
struct alignas(2 * sizeof(void *)) RealFunction {
    const char *name;
    void *address;  // written once, by resolution
};

// Resolves every entry of the table, unless that is done or under way.
void resolve_real_functions();

// The slow path of real(): resolves the table and returns the entry's
// address.  Null while the calling thread is itself looking names up (the C
// library's lookups may allocate, and the preload's malloc must then make
// do without the next allocator), or when no library defines the name.
void *resolve_real(RealFunction &f);

inline void *real(RealFunction &f) {
    void *p = __atomic_load_n(&f.address, __ATOMIC_RELAXED);
    return __builtin_expect(p != nullptr, 1) ? p : resolve_real(f);
}

}  // namespace adsm::os

// Defines table entry `id` for the function called `name`.  The section's
// name is a C identifier, so the linker defines __start_ and __stop_ symbols
// around the entries of the library (or program) being linked.
#define ADSM_REAL_FUNCTION(id, name) \
    __attribute__((used, section("adsm_real_functions"))) ::adsm::os::RealFunction id = {name, nullptr}
