// Buffers a program gives a stdio stream (setvbuf, setbuffer, setbuf).  The
// C library fills and drains a stream's buffer with its own read and write
// system calls, made inside it where no interposer sees them, and the kernel
// cannot take the runtime's fault: in shared memory whose block was closed
// those calls failed with EFAULT, and the stream read as empty (its first
// fgetc found the end of the file) or lost what it held for writing (when
// a call had sent its buffer to the device).  The C standard leaves the array's contents
// indeterminate while the stream uses it, so a stream given a buffer in the
// window gets a private one of the same size in its place; that one goes
// when the stream stops using it (fclose, freopen, another setvbuf).
#include <stdio.h>
#include <sys/mman.h>

#include <mutex>
#include <new>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/stream_buffers.h"
#include "os/futex_lock.h"
#include "os/vm.h"

namespace {

// A stream's private buffer in place of the program's.
struct InPlace {
    FILE *stream;
    void *buffer;
    size_t bytes;  // mapped
    InPlace *next;
};
adsm::os::FutexLock g_lock;
InPlace *g_in_place = nullptr;
// Streams with one: fclose of any other costs one load.
std::atomic<size_t> g_count{0};

// Unlinks the stream's entry; the caller unmaps its buffer.
InPlace *take(FILE *stream) {
    std::lock_guard<adsm::os::FutexLock> hold(g_lock);
    for (InPlace **at = &g_in_place; *at; at = &(*at)->next) {
        if ((*at)->stream != stream) continue;
        InPlace *e = *at;
        *at = e->next;
        g_count.fetch_sub(1, std::memory_order_relaxed);
        return e;
    }
    return nullptr;
}

void drop(InPlace *e) {
    if (!e) return;
    adsm::os::unmap(e->buffer, e->bytes);
    adsm::preload::Scope inside;
    delete e;
}

void forget(FILE *stream) {
    if (g_count.load(std::memory_order_relaxed) != 0) drop(take(stream));
}

// Whether a program's buffer must be replaced.
bool in_window(const char *buf, size_t size) {
    return buf && size > 0 && adsm::preload::touches_window(buf, size);
}

}  // namespace

namespace adsm::interpose {

void forget_stream_buffer(FILE *stream) { forget(stream); }

}  // namespace adsm::interpose

INTERCEPTOR(int, setvbuf, FILE *stream, char *buf, int mode, size_t size) {
    if (mode == _IONBF || !in_window(buf, size)) {
        int r = REAL(setvbuf)(stream, buf, mode, size);
        if (r == 0) forget(stream);  // the stream no longer uses a private buffer it had
        return r;
    }
    size_t bytes = adsm::os::page_up(size);
    void *mine = adsm::os::map_anon(bytes, PROT_READ | PROT_WRITE);
    if (mine == MAP_FAILED) return REAL(setvbuf)(stream, nullptr, mode, size);  // the C library's own, as for a null buffer
    if (int r = REAL(setvbuf)(stream, static_cast<char *>(mine), mode, size); r != 0) {
        adsm::os::unmap(mine, bytes);
        return r;
    }
    InPlace *before = take(stream);
    InPlace *e;
    {
        adsm::preload::Scope inside;
        e = new (std::nothrow) InPlace{stream, mine, bytes, nullptr};
    }
    if (!e) {
        drop(before);
        return 0;  // (the stream keeps the private buffer, which then outlives it)
    }
    {
        std::lock_guard<adsm::os::FutexLock> hold(g_lock);
        e->next = g_in_place;
        g_in_place = e;
        g_count.fetch_add(1, std::memory_order_relaxed);
    }
    drop(before);
    return 0;
}

// (setbuf and setbuffer call the C library's setvbuf inside it.)
INTERCEPTOR(void, setbuffer, FILE *stream, char *buf, size_t size) {
    setvbuf(stream, buf, buf ? _IOFBF : _IONBF, size);
}

INTERCEPTOR(void, setbuf, FILE *stream, char *buf) { setvbuf(stream, buf, buf ? _IOFBF : _IONBF, BUFSIZ); }

INTERCEPTOR(int, fclose, FILE *stream) {
    if (stream == stderr) adsm::preload::before_stderr_closes();
    if (g_count.load(std::memory_order_relaxed) == 0) return REAL(fclose)(stream);
    InPlace *e = take(stream);
    int r = REAL(fclose)(stream);  // flushes from the private buffer
    drop(e);
    return r;
}
