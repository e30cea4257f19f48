#include "interpose/staging.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstring>

#include "api/preload.h"
#include "os/clock.h"
#include "os/raw_syscall.h"
#include "os/stack_switches.h"
#include "os/vm.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm::interpose {
namespace {

// Two staging buffers per thread, mapped on first use.  Once the thread has
// staged kPinAfter bytes they are pinned by the device where it pins host
// memory: copies from pageable memory run at a fifth of the link's speed on
// a GPU and hold the CPU while they do, but pinning a buffer costs what
// making its pages costs (1.5 ms for 4 MiB on an H100 host), which a thread
// reading a small input once would never win back.
constexpr uint64_t kPinAfter = 8 * kStageBytes;
__attribute__((tls_model("initial-exec"))) thread_local uint8_t *tls_stage[2] = {nullptr, nullptr};
__attribute__((tls_model("initial-exec"))) thread_local bool tls_pinned[2] = {false, false};
__attribute__((tls_model("initial-exec"))) thread_local bool tls_pin_tried[2] = {false, false};
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tls_staged_bytes = 0;
__attribute__((tls_model("initial-exec"))) thread_local int tls_depth = 0;

// A call can be left unfinished: a signal handler that interrupted its
// system call may longjmp out of it (a timeout by alarm).  Its depth stayed
// counted, and every later call of the thread took the nested path (a
// buffer mapped for each call, never pinned): 64 KiB reads ran five times
// slower (37.7 us against 7.2).  So the outermost call's place on the stack
// is kept, with the last copies issued on each of the thread's buffers: a
// call made higher on the same stack than that place, not on the signal
// stack, is past the outer call's frame, which is gone.  Not judged so
// across a switch of stacks (swapcontext, setcontext) since the outer call
// began.
__attribute__((tls_model("initial-exec"))) thread_local const void *tls_outer = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tls_outer_switches = 0;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tls_stage_ticket[2] = {0, 0};

bool on_signal_stack() {
    stack_t ss;
    return os::raw_syscall(SYS_sigaltstack, nullptr, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

// Whether the outermost call counted is gone, seen from a new call at `here`.
bool outer_call_gone(const void *here) {
    return tls_outer && here > tls_outer && os::stack_switches() == tls_outer_switches && !on_signal_stack();
}

// Forgets the calls left unfinished, once their copies have landed (their
// buffers are the thread's, which the next call takes).
void forget_unfinished_calls() {
    for (uint64_t &t : tls_stage_ticket) {
        preload::wait_copies(t);
        t = 0;
    }
    tls_depth = 0;
    tls_outer = nullptr;
}

// At a thread's exit its buffers go, pins first.
pthread_key_t g_exit_key;
pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

void release_thread_stage(void *) {
    for (int b = 0; b < 2; ++b) {
        if (!tls_stage[b]) continue;
        if (tls_pinned[b]) preload::unpin_staging(tls_stage[b]);
        os::unmap(tls_stage[b], kStageBytes);
        tls_stage[b] = nullptr;
        tls_pinned[b] = tls_pin_tried[b] = false;
    }
}

void make_exit_key() { pthread_key_create(&g_exit_key, &release_thread_stage); }

}  // namespace

StagingCall::StagingCall(bool in, size_t bytes) : in_(in), bytes_(bytes), start_(trace::enabled() ? os::now_ns() : 0) {
    if (tls_depth > 0 && outer_call_gone(this)) forget_unfinished_calls();
    if (tls_depth == 0) {
        tls_outer = this;
        tls_outer_switches = os::stack_switches();
    }
    ++tls_depth;
    if (tls_staged_bytes < kPinAfter) tls_staged_bytes += bytes;
}

StagingCall::~StagingCall() {
    // The outermost call ends every call nested in it, finished or not.
    if (this == tls_outer) {
        tls_depth = 0;
        tls_outer = nullptr;
    } else if (tls_depth > 0) {
        --tls_depth;
    }
    stats().add(Counter::io_calls);
    stats().add(Counter::io_bytes, moved_);
    if (start_) trace::record(in_ ? trace::Kind::io_read : trace::Kind::io_write, start_, os::now_ns(), bytes_, moved_);
}

int calls_under_way() { return tls_depth; }

bool touches_shared(const struct iovec *iov, int iovcnt) {
    for (int i = 0; i < iovcnt; ++i)
        if (preload::touches_window(iov[i].iov_base, iov[i].iov_len)) return true;
    return false;
}

bool is_regular(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

uint8_t *Staged::stage_buffer(int buffer) {
    if (tls_depth > 1) {
        // Nested in a signal handler while the thread's own call is under
        // way: its buffers may be in use, so this call maps one for itself.
        if (!owned_) {
            void *m = os::map_anon(kStageBytes, PROT_READ | PROT_WRITE);
            owned_ = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
        }
        return owned_;
    }
    thread_buffer_ = buffer;
    if (!tls_stage[buffer]) {
        void *m = os::map_anon(kStageBytes, PROT_READ | PROT_WRITE);
        if (m == MAP_FAILED) return nullptr;
        tls_stage[buffer] = static_cast<uint8_t *>(m);
        pthread_once(&g_exit_once, &make_exit_key);
        pthread_setspecific(g_exit_key, tls_stage);
    }
    // Between rounds: no copy uses the buffer now.
    if (!tls_pin_tried[buffer] && tls_staged_bytes >= kPinAfter) {
        tls_pin_tried[buffer] = true;
        tls_pinned[buffer] = preload::pin_staging(tls_stage[buffer], kStageBytes);
    }
    return tls_stage[buffer];
}

Staged::~Staged() {
    if (owned_) os::unmap(owned_, kStageBytes);
}

void Staged::layout(const struct iovec *iov, int iovcnt, size_t skip, int buffer) {
    n_ = 0;
    requested_ = 0;
    out_of_staging_ = false;
    uint8_t *stage = nullptr;
    size_t staged = 0;
    for (int i = 0; i < iovcnt && n_ < kMaxIov; ++i) {
        size_t len = iov[i].iov_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        preload::Piece pieces[kMaxIov];
        size_t np = preload::split(static_cast<uint8_t *>(iov[i].iov_base) + skip, len - skip, pieces,
                                   static_cast<size_t>(kMaxIov - n_));
        size_t covered = 0;
        for (size_t k = 0; k < np; ++k) covered += pieces[k].n;
        const bool whole = covered == len - skip;
        skip = 0;
        for (size_t k = 0; k < np && n_ < kMaxIov; ++k) {
            if (!pieces[k].shared) {
                out_[n_] = {pieces[k].p, pieces[k].n};
                slots_[n_++] = {nullptr, nullptr, pieces[k].n};
                requested_ += pieces[k].n;
                continue;
            }
            if (!stage && !(stage = stage_buffer(buffer))) {
                out_of_staging_ = true;
                return;
            }
            size_t take = pieces[k].n < kStageBytes - staged ? pieces[k].n : kStageBytes - staged;
            if (take == 0) return;
            out_[n_] = {stage + staged, take};
            slots_[n_++] = {pieces[k].p, stage + staged, take};
            staged += take;
            requested_ += take;
            if (take < pieces[k].n) return;  // staging full: the rest waits for the next round
        }
        if (!whole) return;  // out of slots: the rest of this buffer waits for the next round
    }
}

bool Staged::gather(uint64_t *ticket) {
    const int saved = errno;  // (a call that succeeds leaves errno as it was)
    bool ok = true;
    for (int i = 0; i < n_ && ok; ++i)
        if (slots_[i].shared &&
            preload::read_shared(slots_[i].shared, slots_[i].stage, slots_[i].len, ticket) != adsmSuccess)
            ok = false;
    if (ticket && *ticket && thread_buffer_ >= 0) tls_stage_ticket[thread_buffer_] = *ticket;
    errno = saved;
    return ok;
}

uint64_t Staged::scatter(size_t done, bool async, bool *failed) {
    int saved = errno;
    uint64_t ticket = 0;
    *failed = false;
    for (int i = 0; i < n_ && done > 0; ++i) {
        size_t len = slots_[i].len < done ? slots_[i].len : done;
        if (slots_[i].shared &&
            preload::write_shared(slots_[i].shared, slots_[i].stage, len, async ? &ticket : nullptr) != adsmSuccess)
            *failed = true;
        done -= len;
    }
    if (ticket && thread_buffer_ >= 0) tls_stage_ticket[thread_buffer_] = ticket;
    errno = saved;
    return ticket;
}

}  // namespace adsm::interpose
