// Requests the kernel carries out on its own, long after the call that
// made them (POSIX's asynchronous I/O in async_io.cpp, Linux's in
// linux_aio.cpp), run on private bounce buffers when their buffer is
// shared memory: the kernel cannot take the runtime's fault.  What both
// keep: a record per request on a bounce buffer, in one list.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>

#include "api/preload.h"
#include "os/futex_lock.h"
#include "os/vm.h"

namespace adsm::interpose {

// Whether [buf, buf+n) is one shared allocation, whole: such a buffer is
// bounced; any other (one that runs off its allocation into other memory)
// goes to the kernel as it is, which says what it says about it.
bool bounces(const void *buf, size_t n);

// A private buffer of n bytes (*mapped: its mapping's size), holding the
// shared memory at `from` when given (a write's bytes); nullptr where none
// could be made (errno EAGAIN) or `from` could not be read (EIO).
void *make_bounce(size_t n, const void *from, size_t *mapped);

// The records of requests on bounce buffers.  Record has `next`, `bounce`
// and `mapped`, and is made with new inside the runtime (preload::Scope).
template <class Record>
class BounceRecords {
public:
    os::FutexLock lock;
    Record *head = nullptr;

    // While there are none, the calls that settle requests cost one load.
    bool any() const { return count_.load(std::memory_order_relaxed) != 0; }

    void link(Record *r) {
        std::lock_guard<os::FutexLock> hold(lock);
        r->next = head;
        head = r;
        count_.fetch_add(1, std::memory_order_relaxed);
    }

    // Unlinks r, and frees it with its bounce buffer.
    void forget(Record *r) {
        {
            std::lock_guard<os::FutexLock> hold(lock);
            for (Record **at = &head; *at; at = &(*at)->next)
                if (*at == r) {
                    *at = r->next;
                    break;
                }
            count_.fetch_sub(1, std::memory_order_relaxed);
        }
        os::unmap(r->bounce, r->mapped);
        preload::Scope inside;
        delete r;
    }

private:
    std::atomic<size_t> count_{0};
};

}  // namespace adsm::interpose
