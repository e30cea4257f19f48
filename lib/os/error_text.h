// The text of an errno value for the runtime's messages, which are built
// anywhere, the fault handler included.  strerror looks the text up through
// the locale's message catalogue, under the catalogue's lock, and allocates
// for a number it does not know; the C library's untranslated table is read
// with neither.
#pragma once

#include <string.h>

namespace adsm::os {

inline const char *error_text(int e) {
    const char *text = strerrordesc_np(e);
    return text ? text : "unknown error";
}

}  // namespace adsm::os
