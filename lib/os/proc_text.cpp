#include "os/proc_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace adsm::os {

bool read_proc_text(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

int thread_count() {
    char stat[1024];
    if (!read_proc_text("/proc/self/stat", stat, sizeof stat)) return -1;
    // The fields after the name (which may hold spaces and parentheses):
    // num_threads is the 20th of the line, the 18th after the name.
    const char *at = strrchr(stat, ')');
    if (!at) return -1;
    for (int field = 2; field < 20; ++field) {
        at = strchr(at + 1, ' ');
        if (!at) return -1;
    }
    return atoi(at + 1);
}

}  // namespace adsm::os
