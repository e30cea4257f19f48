// A timeline of what the runtime did, written at exit in the Chrome
// trace-event JSON format that Perfetto and chrome://tracing open
// (ADSM_TRACE=FILE).  Host threads get one track each; the device gets a
// process of its own with a track per stream and one per direction of its
// copy engine.
//
// Recording is async-signal-safe and takes no lock: events go into one
// preallocated buffer at an index taken with a fetch_add, so the fault
// handler records like any other code.  When the buffer is full, further
// events are counted and dropped, and the file says how many.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/status.h"

namespace adsm::trace {

enum class Kind : uint16_t {
    kernel,      // device stream track; a: stream, b: failed
    copy_h2d,    // a: bytes, b: device address
    copy_d2h,
    read_fault,  // thread track; a: address
    write_fault,
    call,        // adsmCall and interposed launches; name: the kernel
    sync,
    alloc,       // a: bytes, b: address
    free,        // b: address
    io_read,     // interposed I/O on shared memory; a: bytes asked, b: bytes moved
    io_write,
    count_
};

// Where an event is drawn.  Threads are the default; device tracks are
// named by these ids.
constexpr uint32_t kThreadTrack = 0;
constexpr uint32_t kCopyH2DTrack = 1;
constexpr uint32_t kCopyD2HTrack = 2;
constexpr uint32_t stream_track(uint32_t stream) { return 16 + stream; }

namespace detail {
extern std::atomic<bool> g_enabled;
}

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// Starts recording, to be written to `path` at exit (see file_for_process).
// `device` names the device's process in the viewer; `capacity` events fit.
constexpr size_t kDefaultCapacity = size_t{2} << 20;
Status start(const char *path, const char *device, size_t capacity = kDefaultCapacity);

// Records one event from start_ns to end_ns (os::now_ns clock).  `name`
// (optional, copied) replaces the kind's own name.  Async-signal-safe.
void record(Kind kind, uint64_t start_ns, uint64_t end_ns, uint64_t a = 0, uint64_t b = 0, const char *name = nullptr,
            uint32_t track = kThreadTrack);

// Draws a copy of n bytes to or from device address `dev` that began at
// start_ns and ends now.  A copy the calling thread waits for is drawn on
// its track, inside the fault, call or sync that needed it; a background
// copy (the copy engine's) on the device's track for its direction, where
// such copies follow one another.  (Slices on one track must nest, so
// copies from several threads at once cannot share a track.)
void copy(bool to_device, uint64_t n, uint64_t dev, uint64_t start_ns, bool background);

// Runs `hook` first thing when the file is written, for the layers that
// gather events late (the device's kernel times).
void before_writing(void (*hook)());

// Writes the file now (the exit handler calls it; a forked child never does).
void write_file();
// For a process that never started the runtime: a timeline with nothing on
// it but the process, so that asking for a trace always gives a file.  It
// fills `pattern`'s file only where it is missing or empty, so that a
// process that did use shared memory (a child of this one writing the same
// file) keeps its timeline.
void write_unused(const char *pattern);
// In a fork child: nothing recorded here belongs to the child.
void disable_in_child();

}  // namespace adsm::trace
