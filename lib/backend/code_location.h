// Names a function by the loaded module that holds it and its offset there,
// so another process running the same program image (the sim device) can
// find the same code although its modules load at other addresses.
#pragma once

#include <cstdint>
#include <string>

namespace adsm {

struct CodeLocation {
    std::string module_path;  // "" for the main program
    uint64_t offset = 0;      // address minus the module's load bias
    uint64_t dev = 0, ino = 0;  // identity of the module file
};

// The file of the running program.  /proc/self/exe names it even if it was
// replaced on disk, but under a tool that runs the program (valgrind, say)
// the kernel's link names the tool; the path the program was started from
// names the program in both cases, as long as it is still there.
std::string main_program_path();

// Finds the module holding `addr`; false (and a reason) if none does, as for
// code generated at run time.
bool locate_code(const void *addr, CodeLocation *out, std::string *err);

// The address of the same code in this process, loading the module if it is
// not loaded yet; nullptr (and a reason) if the module cannot be found or is
// not the same file.
void *resolve_code(const CodeLocation &loc, std::string *err);

}  // namespace adsm
