// Lines written to stderr from anywhere, signal handlers included: no
// malloc, no stdio, one write(2) per line so that threads never interleave.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::os {

// Writes all of [p, p+n) to stderr (its kept copy once the program closed
// it, os/kept_stderr.h), leaving errno as it was (diagnostics must not
// disturb the program's errno).
void write_stderr(const char *p, size_t n);

class SafeLine {
public:
    SafeLine &str(const char *s);
    SafeLine &dec(uint64_t v);
    SafeLine &hex(uint64_t v);
    void write_stderr();  // appends '\n'

private:
    char buf_[1024];
    size_t len_ = 0;
};

}  // namespace adsm::os
