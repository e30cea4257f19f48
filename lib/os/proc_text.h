// The process's small /proc files, read with nothing but system calls (the
// fork handlers read them, where little else may run).
#pragma once

#include <cstddef>

namespace adsm::os {

// The text of a small file, NUL-terminated in buf; false when it cannot be read.
bool read_proc_text(const char *path, char *buf, size_t size);

// The number of threads in this process (from /proc/self/stat), or -1 when
// it cannot be read.
int thread_count();

}  // namespace adsm::os
