// What a start of the runtime that failed must have given back: the
// driver's objects (as its double counts them), the host mirror, and the
// threads it started.  Shared by the device tests and the start-failure
// probe; no test framework here.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace device_test {

// Mappings and open files of the runtime's host mirror in this process.
inline int host_mirrors_left() {
    int n = 0;
    char line[512];
    if (FILE *f = fopen("/proc/self/maps", "r")) {
        while (fgets(line, sizeof line, f)) n += strstr(line, "memfd:adsm-host") != nullptr;
        fclose(f);
    }
    if (DIR *d = opendir("/proc/self/fd")) {
        while (dirent *e = readdir(d)) {
            char path[300];
            char target[256] = {};
            snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
            if (readlink(path, target, sizeof target - 1) > 0) n += strstr(target, "adsm-host") != nullptr;
        }
        closedir(d);
    }
    return n;
}

inline int threads_in_process() {
    int n = 0;
    if (DIR *d = opendir("/proc/self/task")) {
        while (dirent *e = readdir(d)) n += e->d_name[0] != '.';
        closedir(d);
    }
    return n;
}

// The threads once those that were joined have left: a joined thread is
// listed a little longer, until the kernel has finished its exit.  Waits
// up to two seconds for there to be `expected`.
inline int threads_settled_to(int expected) {
    int n = threads_in_process();
    for (int ms = 0; n != expected && ms < 2000; ms += 5) {
        usleep(5000);
        n = threads_in_process();
    }
    return n;
}

}  // namespace device_test
