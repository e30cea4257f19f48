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

// The readable mappings of /proc/self/maps.  Where the kernel answers
// questions about one address (PROCMAP_QUERY, Linux 6.11+), each find()
// asks it; else read() copies the whole list, which took 60% of the
// world's stop (0.1 ms a collection with 40 mappings, more with more).
class Mappings {
public:
    ~Mappings();
    // Reads them again (or opens the file to ask it, where the kernel
    // answers and ask_kernel holds).  0 or -errno.
    int read(bool ask_kernel = true);
    // The readable mapping that holds address a.
    bool find(uintptr_t a, Range *out) const;
    // The main thread's stack ("[stack]"); empty if not found.
    Range main_stack() const;
    // Whether a question went unanswered since read() (not "no mapping":
    // an error), so that what find() said cannot be trusted.
    bool failed() const { return failed_; }

private:
    bool parse(const char *line, size_t len);

    int fd_ = -1;  // the file asked, when the kernel answers questions
    mutable bool failed_ = false;
    RangeBuffer maps_;
    Range stack_;
};

}  // namespace adsm::gc
