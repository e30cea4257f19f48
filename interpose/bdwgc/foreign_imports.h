// One collector per process.  A program written for bdwgc gets adsm's
// collector by preloading the runtime, which then serves every GC_ symbol
// the program imports; an import the runtime lacks would still come from
// libgc, and two collectors would share the program's objects, each
// freeing what only the other can see.  So at start every loaded object's
// imports of GC_ symbols are checked against what the runtime exports, and
// a program that would mix the two is refused with a message naming each
// symbol and the object that imports it.
//
// Objects loaded later come through dlopen, which the runtime does not
// interpose: dlopen finds libraries relative to its caller (its RUNPATH,
// $ORIGIN, its namespace), so a wrapper in the runtime would change which
// libraries a program finds.  GC_dlopen (bdwgc's own wrapper, which
// programs built with GC_THREADS call in place of dlopen) checks what it
// loaded and refuses it.
#pragma once

#include <cstdint>

namespace adsm::bdwgc {

struct GcImport {
    const char *object;  // the importing object's path (the program's own too)
    const char *symbol;
    bool weak;
};

// Calls fn for every undefined GC_* symbol in the dynamic symbol table of
// every loaded object but the one that holds `self` (an address in it).
void for_each_gc_import(const void *self, void (*fn)(const GcImport &, void *), void *arg);

// Whether the import binds to the definition in the object holding `self`
// (or to the program's copy of one of its variables); else why not, in
// `why` (for a message).
bool served_by(const void *self, const GcImport &import, const char **why);

// Checks every loaded object; prints a message for each import the runtime
// does not serve (`what` names what is refused, a dlopen; null: the program) and
// returns false if there was one.
bool check_gc_imports(const char *what);

// After GC_dlopen(path): false (with a message) when what it loaded must
// be refused.
bool accept_after_dlopen(const char *path);

}  // namespace adsm::bdwgc
