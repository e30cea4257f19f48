// The text of an errno value for the runtime's messages, which are built
// anywhere, the fault handler included.  strerror looks the text up through
// the locale's message catalogue, under the catalogue's lock, and allocates
// for a number it does not know; the C library's untranslated table is read
// with neither.
#pragma once

#include <stddef.h>
#include <string.h>

namespace adsm::os {

inline const char *error_text(int e) {
    if (const char *text = strerrordesc_np(e)) return text;
    // The number, in a buffer of this thread's own (no lock, no
    // allocation); good until this thread's next unknown number.
    __attribute__((tls_model("initial-exec"))) static thread_local char buf[32];
    static const char kPrefix[] = "unknown error ";
    char digits[12];
    int n = 0;
    unsigned long long v = e < 0 ? 0ull - static_cast<unsigned long long>(e) : static_cast<unsigned long long>(e);
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    size_t at = 0;
    for (const char *p = kPrefix; *p; ++p) buf[at++] = *p;
    if (e < 0) buf[at++] = '-';
    while (n) buf[at++] = digits[--n];
    buf[at] = '\0';
    return buf;
}

}  // namespace adsm::os
