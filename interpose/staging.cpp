#include "interpose/staging.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>

#include "api/preload.h"
#include "os/vm.h"

namespace adsm::interpose {
namespace {

// One staging buffer per thread, mapped on first use.  A signal handler that
// does I/O on shared memory while its thread is in the middle of a staged
// call gets a buffer of its own.
__attribute__((tls_model("initial-exec"))) thread_local uint8_t *tls_stage = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool tls_stage_busy = false;

}  // namespace

bool touches_shared(const struct iovec *iov, int iovcnt) {
    for (int i = 0; i < iovcnt; ++i)
        if (preload::touches_window(iov[i].iov_base, iov[i].iov_len)) return true;
    return false;
}

bool is_regular(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

Staged::Staged(const struct iovec *iov, int iovcnt, size_t skip) {
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
        skip = 0;
        for (size_t k = 0; k < np && n_ < kMaxIov; ++k) {
            if (!pieces[k].shared) {
                out_[n_] = {pieces[k].p, pieces[k].n};
                slots_[n_++] = {nullptr, nullptr, pieces[k].n};
                requested_ += pieces[k].n;
                continue;
            }
            if (!stage) {
                if (tls_stage_busy || !tls_stage) {
                    void *m = os::map_anon(kStageBytes, PROT_READ | PROT_WRITE);
                    if (m == MAP_FAILED) return;
                    if (!tls_stage_busy) tls_stage = static_cast<uint8_t *>(m);
                    stage = static_cast<uint8_t *>(m);
                } else {
                    stage = tls_stage;
                }
                owned_ = stage != tls_stage;
                if (!owned_) tls_stage_busy = true;
                stage_ = stage;
            }
            size_t take = pieces[k].n < kStageBytes - staged ? pieces[k].n : kStageBytes - staged;
            if (take == 0) return;
            out_[n_] = {stage + staged, take};
            slots_[n_++] = {pieces[k].p, stage + staged, take};
            staged += take;
            requested_ += take;
            shared_ = true;
            if (take < pieces[k].n) return;  // staging full: the rest waits for the next round
        }
    }
}

Staged::~Staged() {
    if (!stage_) return;
    if (owned_) os::unmap(stage_, kStageBytes);
    else tls_stage_busy = false;
}

bool Staged::gather() {
    for (int i = 0; i < n_; ++i)
        if (slots_[i].shared && preload::read_shared(slots_[i].shared, slots_[i].stage, slots_[i].len) != adsmSuccess)
            return false;
    return true;
}

void Staged::scatter(size_t done) {
    int saved = errno;
    for (int i = 0; i < n_ && done > 0; ++i) {
        size_t len = slots_[i].len < done ? slots_[i].len : done;
        if (slots_[i].shared) preload::write_shared(slots_[i].shared, slots_[i].stage, len);
        done -= len;
    }
    errno = saved;
}

}  // namespace adsm::interpose
