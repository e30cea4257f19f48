#include "os/write_hold.h"

#include <sched.h>
#include <time.h>

#include "os/clock.h"
#include "os/futex.h"

namespace adsm::os::write_hold {
namespace {

constexpr unsigned kStripes = 64;
struct alignas(64) Stripe {
    std::atomic<uint32_t> changes{0};
};
Stripe g_stripes[kStripes];
std::atomic<uint32_t> g_next_stripe{0};
std::atomic<uint32_t> g_hold{0};           // futex word: 1 while held
std::atomic<uint32_t> g_world_stopped{0};  // the collector's stops under way
std::atomic<uint32_t> g_holds_ended{0};

struct ThreadState {
    uint32_t stripe;  // + 1; 0 until the thread's first change
    uint32_t depth;   // changes entered and not left
    bool holder;
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state = {0, 0, false};

std::atomic<uint32_t> &own_stripe() {
    if (t_state.stripe == 0)
        t_state.stripe = g_next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes + 1;
    return g_stripes[t_state.stripe - 1].changes;
}

bool may_wait() { return !t_state.holder && g_world_stopped.load(std::memory_order_seq_cst) == 0; }

uint32_t changes_under_way() {
    uint32_t n = 0;
    for (Stripe &s : g_stripes) n += s.changes.load(std::memory_order_seq_cst);
    return n;
}

}  // namespace

Change::Change() {
    if (t_state.depth++ > 0) return;
    std::atomic<uint32_t> &mine = own_stripe();
    for (;;) {
        // Counted first, then the hold looked at: hold() sets the hold
        // first, then counts, so one of the two sees the other.
        mine.fetch_add(1, std::memory_order_seq_cst);
        if (g_hold.load(std::memory_order_seq_cst) == 0 || !may_wait()) {
            counted_ = &mine;
            return;
        }
        mine.fetch_sub(1, std::memory_order_seq_cst);
        // (A second at a time: a stop of the world begun meanwhile lets it go.)
        while (g_hold.load(std::memory_order_seq_cst) != 0 && may_wait()) futex_wait(&g_hold, 1, 1'000'000'000ull);
    }
}

Change::~Change() {
    if (counted_) counted_->fetch_sub(1, std::memory_order_seq_cst);
    --t_state.depth;
}

bool hold(uint64_t patience_ns) {
    // (Inside a change of its own the caller would wait for itself.)
    if (t_state.depth > 0 || t_state.holder) return false;
    const uint64_t give_up = now_ns() + patience_ns;
    // One hold at a time: two threads forking, or cycling in chaos mode,
    // each hold until its own copy is done, and the first to end must not
    // end the other's.
    for (uint32_t free = 0; !g_hold.compare_exchange_strong(free, 1, std::memory_order_seq_cst); free = 0) {
        const uint64_t now = now_ns();
        if (now >= give_up) return false;
        futex_wait(&g_hold, 1, give_up - now);
    }
    t_state.holder = true;
    while (changes_under_way() != 0) {
        if (now_ns() > give_up) {
            release();
            return false;
        }
        struct timespec pause = {0, 20'000};
        nanosleep(&pause, nullptr);
    }
    return true;
}

void release() {
    g_holds_ended.fetch_add(1, std::memory_order_seq_cst);
    t_state.holder = false;
    g_hold.store(0, std::memory_order_seq_cst);
    futex_wake(&g_hold);
}

bool held() { return g_hold.load(std::memory_order_relaxed) != 0; }

uint32_t holds_ended() { return g_holds_ended.load(std::memory_order_seq_cst); }

void world_stopping() {
    if (t_state.depth == 0)
        while (g_hold.load(std::memory_order_seq_cst) != 0 && !t_state.holder) futex_wait(&g_hold, 1, 1'000'000'000ull);
    g_world_stopped.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&g_hold);  // changes waiting look again: they may go now
}

void world_started() { g_world_stopped.fetch_sub(1, std::memory_order_seq_cst); }

void reset_after_fork() {
    for (Stripe &s : g_stripes) s.changes.store(0, std::memory_order_relaxed);
    g_hold.store(0, std::memory_order_relaxed);
    g_world_stopped.store(0, std::memory_order_relaxed);
    t_state.holder = false;
    // (Forked from inside a change, which counts on its stripe as it ends.)
    if (t_state.depth > 0) own_stripe().store(1, std::memory_order_relaxed);
}

}  // namespace adsm::os::write_hold
