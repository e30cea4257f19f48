// What the collector reads of /proc/self while the world is stopped: the
// threads, whether one of them is still there, and the readable mappings.
// Raw system calls into buffers on the stack or in private anonymous
// memory: a stopped thread may hold the C library's locks (malloc's, the
// directory stream's).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "gc/range_buffer.h"

namespace adsm::gc {

// Calls fn(arg, tid) for every thread listed in /proc/self/task.  0 or -errno.
int for_each_thread(void (*fn)(void *arg, pid_t tid), void *arg);

// False once the thread has gone: no entry in /proc/self/task any more, or
// a zombie (an exited main thread stays listed until the process ends).
bool thread_alive(pid_t tid);

// The readable mappings of /proc/self/maps, in address order.
class Mappings {
public:
    // Reads them again.  0 or -errno.
    int read();
    // The readable mapping that holds address a, or null.
    const Range *find(uintptr_t a) const;
    // The main thread's stack ("[stack]"); empty if not found.
    Range main_stack() const { return stack_; }

private:
    bool parse(const char *line, size_t len);

    RangeBuffer maps_;
    Range stack_;
};

}  // namespace adsm::gc
