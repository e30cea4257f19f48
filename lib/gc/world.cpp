#include "gc/world.h"

#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "gc/proc_self.h"
#include "os/clock.h"
#include "os/deferred_signals.h"
#include "os/error_text.h"
#include "os/fault_signals.h"
#include "os/futex.h"
#include "os/invariant.h"
#include "os/raw_syscall.h"
#include "os/real_libc.h"
#include "os/stop_signal.h"
#include "os/vm.h"
#include "os/write_hold.h"
#include "support/log.h"

// The caller's callee-saved registers, stored by thread_ranges before any
// compiled code can change them (see there); extern "C" for the assembly.
extern "C" __attribute__((visibility("hidden"))) uintptr_t adsm_gc_caller_regs[12];
uintptr_t adsm_gc_caller_regs[12];

namespace adsm::gc {
namespace {

// Enough for any program we know of; beyond it stop() fails clearly.
constexpr uint32_t kMaxThreads = 1u << 16;
// Linux's PID_MAX_LIMIT on 64-bit: thread ids index g_tids directly.
constexpr pid_t kMaxTid = 1 << 22;
// Below the stack pointer, leaf code may keep data without moving it (x86-64).
constexpr uintptr_t kRedZone = 128;
// A thread that has not stopped after this is named in a warning.
constexpr uint64_t kPatienceNs = 2'000'000'000ull;

// A slot's state is its generation (which stop() it belongs to) and its phase.
enum Phase : uint32_t { kSignalled, kClaimed, kStopped, kLeft, kGone };
constexpr uint64_t pack(uint32_t gen, Phase p) { return uint64_t{gen} << 32 | p; }

struct Slot {
    uint64_t state;  // atomic (__atomic builtins: the table is mmap'd memory)
    pid_t tid;       // atomic
    bool warned;     // stop()'s own
    bool on_alt_stack;
    bool idle;  // a runtime thread waiting for work (os::IdleStack)
    // Written by the thread in the handler before it says it stopped.
    uintptr_t sp, uc, tp;
    os::FaultFrame fault;  // a fault frame left behind on the alternate stack
};

Slot *g_slots;         // kMaxThreads, written by stop() and the slot's thread
uint64_t *g_tids;      // tid -> generation << 32 | slot, for the handler to find its slot
uint32_t g_nslots;     // slots used in this generation
uint32_t g_ngone;      // of which the thread exited unstopped
bool g_stopped;        // between a successful stop() and start()
pid_t g_stop_pid;      // the process that stopped the world last
std::atomic<uint32_t> g_gen{0};       // the current (or last) stop
std::atomic<uint32_t> g_released{0};  // the last generation start() let go: a futex word
std::atomic<uint32_t> g_acked{0};     // threads stopped in this generation: a futex word
std::atomic<uint32_t> g_left{0};      // threads that left the handler: a futex word
std::atomic<int> g_instances{0};

// Never destroyed: a collection may run while the process exits.
// Module ids up to this have their dynamic TLS blocks scanned.
constexpr size_t kMaxTlsModules = 4096;

struct State {
    RangeBuffer tls;  // static TLS blocks, relative to a thread's thread pointer (kTlsBias)
    Mappings maps;    // read while stopped
    // Every module's TLS block size by module id, for its dynamic blocks.
    uint64_t tls_size[kMaxTlsModules] = {};
    size_t tls_modules = 0;  // highest id noted, plus one
};
alignas(State) unsigned char g_state_bytes[sizeof(State)];
State *g_state;

// A static TLS block's offset from the thread pointer is negative on x86-64
// and may end at 0; stored biased, the ranges never wrap.
constexpr uintptr_t kTlsBias = uintptr_t{1} << 63;

uintptr_t thread_pointer() { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }

uintptr_t interrupted_sp(const ucontext_t *uc) {
#if defined(__x86_64__)
    return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
    return uc->uc_mcontext.sp;
#else
#error "the collector knows x86-64 and aarch64 signal contexts"
#endif
}

pid_t sys_gettid() { return static_cast<pid_t>(os::raw_syscall(SYS_gettid)); }

int signal_thread(pid_t pid, pid_t tid) {
    return os::raw_syscall(SYS_tgkill, pid, tid, os::kStopSignal) == 0 ? 0 : -errno;
}

uint64_t slot_state(const Slot &s) { return __atomic_load_n(&s.state, __ATOMIC_ACQUIRE); }

// The signalled thread, in its handler.  Claiming the slot first makes a
// duplicate signal (stop() sends again to slow threads) and a stray one (a
// program's kill) harmless: only the first delivery of this generation's
// request stops the thread.
void stop_here(Slot &s, uint32_t gen, pid_t tid, void *ctx) {
    uint64_t expect = pack(gen, kSignalled);
    if (!__atomic_compare_exchange_n(&s.state, &expect, pack(gen, kClaimed), false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    if (__atomic_load_n(&s.tid, __ATOMIC_RELAXED) != tid) {
        __atomic_store_n(&s.state, pack(gen, kSignalled), __ATOMIC_RELEASE);
        return;
    }
    auto *uc = static_cast<ucontext_t *>(ctx);
    s.sp = interrupted_sp(uc);
    s.uc = reinterpret_cast<uintptr_t>(uc);
    s.tp = thread_pointer();
    // The frame records the thread's alternate stack (not whether it is on it).
    const stack_t &alt = uc->uc_stack;
    s.on_alt_stack = !(alt.ss_flags & SS_DISABLE) && s.sp - reinterpret_cast<uintptr_t>(alt.ss_sp) < alt.ss_size;
    s.idle = os::idle_stack;
    s.fault = os::switched_fault_frame;
    __atomic_store_n(&s.state, pack(gen, kStopped), __ATOMIC_RELEASE);
    g_acked.fetch_add(1, std::memory_order_acq_rel);
    os::futex_wake(&g_acked, 1);
    for (uint32_t r; (r = g_released.load(std::memory_order_acquire)) != gen;) os::futex_wait(&g_released, r);
    __atomic_store_n(&s.state, pack(gen, kLeft), __ATOMIC_RELEASE);
    g_left.fetch_add(1, std::memory_order_acq_rel);
    os::futex_wake(&g_left, 1);
}

// Touches nothing of the runtime but this file's table: safe wherever the
// thread was, the fault handler and the runtime's locks included.
void on_stop_signal(int, siginfo_t *, void *ctx) {
    int saved_errno = errno;
    pid_t tid = sys_gettid();
    uint32_t gen = g_gen.load(std::memory_order_acquire);
    if (gen != 0 && tid > 0 && tid < kMaxTid) {
        uint64_t e = __atomic_load_n(&g_tids[tid], __ATOMIC_ACQUIRE);
        if (e >> 32 == gen) stop_here(g_slots[static_cast<uint32_t>(e)], gen, tid, ctx);
    }
    errno = saved_errno;
}

struct Scan {
    pid_t pid, self;
    const pid_t *exempt;
    size_t nexempt;
    uint32_t gen;
    uint32_t added = 0;
    bool full = false;
};

// One thread listed in /proc/self/task: signalled unless known already.
void add_thread(void *arg, pid_t tid) {
    Scan &sc = *static_cast<Scan *>(arg);
    if (tid == sc.self) return;
    if (tid >= kMaxTid) {  // Linux hands out none; not stopping it would be unsafe
        sc.full = true;
        return;
    }
    for (size_t i = 0; i < sc.nexempt; ++i)
        if (sc.exempt[i] == tid) return;
    uint64_t e = __atomic_load_n(&g_tids[tid], __ATOMIC_RELAXED);
    // Known, unless its thread exited and the id came back.
    if (e >> 32 == sc.gen && slot_state(g_slots[static_cast<uint32_t>(e)]) != pack(sc.gen, kGone)) return;
    // An exited main thread stays listed, a zombie, until the process ends.
    if (tid == sc.pid && !thread_alive(tid)) return;
    if (g_nslots == kMaxThreads) {
        sc.full = true;
        return;
    }
    uint32_t idx = g_nslots++;
    Slot &s = g_slots[idx];
    __atomic_store_n(&s.tid, tid, __ATOMIC_RELAXED);
    s.warned = false;
    __atomic_store_n(&s.state, pack(sc.gen, kSignalled), __ATOMIC_RELEASE);
    __atomic_store_n(&g_tids[tid], uint64_t{sc.gen} << 32 | idx, __ATOMIC_RELEASE);
    ++sc.added;
    if (signal_thread(sc.pid, tid) == -ESRCH) {
        uint64_t expect = pack(sc.gen, kSignalled);
        if (__atomic_compare_exchange_n(&s.state, &expect, pack(sc.gen, kGone), false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            ++g_ngone;
    }
}

// The threads not stopped yet: gone ones are written off, the others
// signalled again (a request merged with a stray stop signal still pending
// is lost), and named once they have kept us waiting too long.
void recheck(pid_t pid, uint32_t gen, uint64_t waited_ns) {
    for (uint32_t i = 0; i < g_nslots; ++i) {
        Slot &s = g_slots[i];
        if (slot_state(s) != pack(gen, kSignalled)) continue;
        pid_t tid = __atomic_load_n(&s.tid, __ATOMIC_RELAXED);
        if (!thread_alive(tid) || signal_thread(pid, tid) == -ESRCH) {
            uint64_t expect = pack(gen, kSignalled);
            if (__atomic_compare_exchange_n(&s.state, &expect, pack(gen, kGone), false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED))
                ++g_ngone;
            continue;
        }
        if (waited_ns >= kPatienceNs && !s.warned) {
            s.warned = true;
            ADSM_LOG(warn,
                     "collector: thread %d has not stopped after %llu s; it probably blocks SIGPWR, the "
                     "collector's stop signal; still waiting",
                     static_cast<int>(tid), static_cast<unsigned long long>(waited_ns / 1000000000ull));
        }
    }
}

// Until every thread signalled in this generation has stopped or exited.
void wait_for_acks(pid_t pid, uint32_t gen) {
    uint64_t t0 = os::now_ns();
    uint64_t next = t0 + 1'000'000;  // a thread on its way out is seen soon
    for (;;) {
        uint32_t seen = g_acked.load(std::memory_order_acquire);
        if (seen + g_ngone >= g_nslots) return;
        uint64_t now = os::now_ns();
        if (now < next) {
            os::futex_wait(&g_acked, seen, next - now);
            continue;
        }
        recheck(pid, gen, now - t0);
        next = now + 10'000'000;
    }
}

// Each loaded module's TLS: its size by module id (for the blocks the
// loader allocates at a thread's first use, push_dynamic_tls), and its
// block for the calling thread as offsets from the thread pointer, which
// are the same in every thread (push_tls keeps a block only where it lies
// in the mapping of the thread's pointer: a dlopen()ed module's may be
// dynamic instead).
int note_tls(struct dl_phdr_info *info, size_t size, void *) {
    if (size < offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof info->dlpi_tls_data) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_TLS) continue;
        const uint64_t bytes = info->dlpi_phdr[i].p_memsz;
        if (size_t id = info->dlpi_tls_modid; id > 0 && id < kMaxTlsModules) {
            g_state->tls_size[id] = bytes;
            if (id >= g_state->tls_modules) g_state->tls_modules = id + 1;
        }
        if (!info->dlpi_tls_data) continue;
        uintptr_t off = reinterpret_cast<uintptr_t>(info->dlpi_tls_data) - thread_pointer() + kTlsBias;
        if (!g_state->tls.push(off, off + bytes)) return 1;
    }
    return 0;
}

// The dynamic TLS blocks of a thread (dlopen()ed modules', which the loader
// allocates with malloc at the thread's first use), found through its
// dynamic thread vector, as glibc lays it out on x86-64: the thread control
// block at the thread pointer holds the vector's address second; entry -1
// holds its length, entry i module i's block (or -1 while unallocated).  A
// stopped thread may be in the middle of changing it: every address is
// checked against the readable mappings before it is read or pushed, and a
// stale block is only scanned conservatively.
bool push_dynamic_tls(RangeBuffer *out, uintptr_t tp, const Range &tp_map) {
#if defined(__x86_64__)
    struct DtvEntry {
        uintptr_t val;
        uintptr_t to_free;
    };
    const Mappings &maps = g_state->maps;
    if (tp + 2 * sizeof(uintptr_t) > tp_map.hi) return true;
    const uintptr_t dtv = reinterpret_cast<const uintptr_t *>(tp)[1];
    Range dm;
    if (!maps.find(dtv - sizeof(DtvEntry), &dm) || dtv + sizeof(DtvEntry) > dm.hi || g_state->tls_modules == 0)
        return true;
    const auto *entries = reinterpret_cast<const DtvEntry *>(dtv);
    // Module ids 1..n: as many as the vector says it holds, the loader
    // knows and its mapping holds.
    size_t n = std::min<size_t>(entries[-1].val, g_state->tls_modules - 1);
    n = std::min<size_t>(n, (dm.hi - dtv) / sizeof(DtvEntry) - 1);
    for (size_t id = 1; id <= n; ++id) {
        const uint64_t bytes = g_state->tls_size[id];
        const uintptr_t block = entries[id].val;
        if (!bytes || block == 0 || block == ~uintptr_t{0}) continue;
        if (block >= tp_map.lo && block < tp_map.hi) continue;  // static: pushed already
        Range bm;
        if (maps.find(block, &bm) && block + bytes <= bm.hi && !out->push(block, block + bytes)) return false;
    }
#else
    (void)out, (void)tp, (void)tp_map;
#endif
    return true;
}

bool push_tls(RangeBuffer *out, uintptr_t tp) {
    Range m;
    if (!g_state->maps.find(tp, &m)) return true;
    for (const Range &r : g_state->tls) {
        uintptr_t lo = tp + (r.lo - kTlsBias), hi = tp + (r.hi - kTlsBias);
        if (lo >= m.lo && hi <= m.hi && lo < hi && !out->push(lo, hi)) return false;
    }
    return push_dynamic_tls(out, tp, m);
}

bool push_stopped(RangeBuffer *out, pid_t pid, const Slot &s) {
    if (s.idle) return push_tls(out, s.tp);
    const Mappings &maps = g_state->maps;
    Range m;
    bool regs_in_stack = false;
    if (maps.find(s.sp, &m)) {
        uintptr_t lo = s.sp - m.lo >= kRedZone ? s.sp - kRedZone : m.lo;
        // The signal frame lies just below the red zone: the registers,
        // vector ones included, and the stack in one range.
        if (s.uc >= m.lo && s.uc < lo) lo = s.uc;
        regs_in_stack = s.uc >= lo && s.uc < m.hi;
        if (!out->push(lo, m.hi)) return false;
    }
    if (!regs_in_stack && !out->push(s.uc, s.uc + sizeof(ucontext_t))) return false;
    // Stopped while the runtime handled a fault off the alternate stack:
    // the program's registers at that fault are in its frame there.
    if (s.fault.lo && !out->push(s.fault.lo, s.fault.hi)) return false;
    if (s.on_alt_stack) {
        Range own = maps.main_stack();
        if (s.tid != pid) {
            if (!maps.find(s.tp, &own)) own = Range{};
        }
        if (!out->push(own.lo, own.hi)) return false;
    }
    return push_tls(out, s.tp);
}

}  // namespace

// The collector's thread: its registers (stored by the entry stub), its
// stack from here to the top of its mapping, its static TLS; then every
// stopped thread's.
extern "C" __attribute__((visibility("hidden"))) Status adsm_gc_thread_ranges(const World *, RangeBuffer *out) {
    if (!g_stopped) return fail(adsmErrorInvalidValue, "collector: thread ranges asked with the world running");
    uintptr_t sp;
#if defined(__x86_64__)
    asm volatile("mov %%rsp, %0" : "=r"(sp));
#else
    asm volatile("mov %0, sp" : "=r"(sp));
#endif
    Range m;
    bool mapped = g_state->maps.find(sp, &m);
    bool ok = out->push(reinterpret_cast<uintptr_t>(adsm_gc_caller_regs),
                        reinterpret_cast<uintptr_t>(adsm_gc_caller_regs + 12)) &&
              (!mapped || out->push(sp, m.hi)) && push_tls(out, thread_pointer());
    uint32_t gen = g_gen.load(std::memory_order_relaxed);
    pid_t pid = getpid();
    for (uint32_t i = 0; ok && i < g_nslots; ++i)
        if (slot_state(g_slots[i]) == pack(gen, kStopped)) ok = push_stopped(out, pid, g_slots[i]);
    if (!ok) return fail(adsmErrorMemoryAllocation, "collector: no memory for the threads' roots");
    // A mapping the kernel did not say: a stack or TLS block may be missing.
    if (g_state->maps.failed()) return fail(adsmErrorInitialization, "collector: /proc/self/maps did not answer");
    return adsmSuccess;
}

Status World::keep_mapped(RangeBuffer *ranges) const {
    if (!g_stopped) return fail(adsmErrorInvalidValue, "collector: mappings asked with the world running");
    const Mappings &maps = g_state->maps;
    bool kept_all = true;
    const size_t listed = ranges->size();
    for (size_t i = 0; i < listed; ++i) {
        const Range r = (*ranges)[i];
        // Its readable pieces: the first takes its place, the others go at
        // the end.  (A gone module's pages are stepped over one by one: a
        // hole may be a guard page with the segment going on past it.)
        bool first = true;
        ranges->set(i, r.lo, r.lo);
        for (uintptr_t x = r.lo; x < r.hi;) {
            Range m;
            if (!maps.find(x, &m)) {
                x = os::page_down(x) + os::kPageSize;
                continue;
            }
            uintptr_t end = m.hi < r.hi ? m.hi : r.hi;
            if (first) ranges->set(i, x, end);
            else kept_all &= ranges->push(x, end);
            first = false;
            x = end;
        }
    }
    if (maps.failed()) return fail(adsmErrorInitialization, "collector: /proc/self/maps did not answer");
    if (!kept_all) return fail(adsmErrorMemoryAllocation, "collector: no memory for the data segments' pieces");
    return adsmSuccess;
}

// The entry is assembly: a compiled function may move a callee-saved
// register's value into its own frame before any statement of it runs, and
// that frame is gone when the collector marks.  The callee-saved registers
// are stored first, then the work is a tail call with the same arguments.
#if defined(__x86_64__)
__attribute__((naked)) Status World::thread_ranges(RangeBuffer *) const {
    asm("movq %rbx, adsm_gc_caller_regs+0(%rip)\n\t"
        "movq %rbp, adsm_gc_caller_regs+8(%rip)\n\t"
        "movq %r12, adsm_gc_caller_regs+16(%rip)\n\t"
        "movq %r13, adsm_gc_caller_regs+24(%rip)\n\t"
        "movq %r14, adsm_gc_caller_regs+32(%rip)\n\t"
        "movq %r15, adsm_gc_caller_regs+40(%rip)\n\t"
        "jmp adsm_gc_thread_ranges");
}
#elif defined(__aarch64__)
__attribute__((naked)) Status World::thread_ranges(RangeBuffer *) const {
    asm("adrp x9, adsm_gc_caller_regs\n\t"
        "add x9, x9, :lo12:adsm_gc_caller_regs\n\t"
        "stp x19, x20, [x9, #0]\n\t"
        "stp x21, x22, [x9, #16]\n\t"
        "stp x23, x24, [x9, #32]\n\t"
        "stp x25, x26, [x9, #48]\n\t"
        "stp x27, x28, [x9, #64]\n\t"
        "str x29, [x9, #80]\n\t"
        "b adsm_gc_thread_ranges");
}
#endif

World::World() {
    int n = g_instances.fetch_add(1, std::memory_order_relaxed);
    ADSM_INVARIANT(n == 0, "one World at a time: the stop signal's handler serves one");
    (void)n;
}

World::~World() { g_instances.fetch_sub(1, std::memory_order_relaxed); }

Status World::init() {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (g_state) return adsmSuccess;
    struct sigaction old;
    if (os::real_sigaction(os::kStopSignal, nullptr, &old) != 0)
        return fail(adsmErrorInitialization, "collector: cannot read SIGPWR's action: %s", os::error_text(errno));
    bool has_handler = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != nullptr
                                                   : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
    if (has_handler)
        return fail(adsmErrorInitialization,
                    "collector: the program handles SIGPWR, the signal the collector stops threads with");
    void *slots = os::map_anon(kMaxThreads * sizeof(Slot), PROT_READ | PROT_WRITE, true);
    if (slots == MAP_FAILED) return fail(adsmErrorMemoryAllocation, "collector: no memory for the thread table");
    void *tids = os::map_anon(kMaxTid * sizeof(uint64_t), PROT_READ | PROT_WRITE, true);
    if (tids == MAP_FAILED) {
        os::unmap(slots, kMaxThreads * sizeof(Slot));
        return fail(adsmErrorMemoryAllocation, "collector: no memory for the thread table");
    }
    g_slots = static_cast<Slot *>(slots);
    g_tids = static_cast<uint64_t *>(tids);
    // Installed past the interposed sigaction, so never wrapped in the
    // deferral trampoline; while it runs the asynchronous signals wait.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_mask = os::async_signals();
    if (os::real_sigaction(os::kStopSignal, &sa, nullptr) != 0) {
        int e = errno;
        os::unmap(slots, kMaxThreads * sizeof(Slot));
        os::unmap(tids, kMaxTid * sizeof(uint64_t));
        return fail(adsmErrorInitialization, "collector: cannot install SIGPWR's handler: %s", os::error_text(e));
    }
    os::stop_signal_taken.store(true, std::memory_order_release);
    g_state = new (g_state_bytes) State;
    return adsmSuccess;
}

Status World::stop(const pid_t *exempt, size_t n) {
    ADSM_INVARIANT(!g_stopped, "stop() twice without start()");
    if (!g_state) return fail(adsmErrorInitialization, "collector: the world was stopped before World::init");
    // A program can still replace the handler past the interposers (a raw
    // system call, a build without them): better an error than a hang.
    struct sigaction cur;
    if (os::real_sigaction(os::kStopSignal, nullptr, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
        cur.sa_sigaction != on_stop_signal)
        return fail(adsmErrorInitialization, "collector: SIGPWR's handler was replaced; threads cannot be stopped");
    g_state->tls.clear();
    std::fill_n(g_state->tls_size, g_state->tls_modules, 0);
    g_state->tls_modules = 0;
    if (dl_iterate_phdr(note_tls, nullptr) != 0)
        return fail(adsmErrorMemoryAllocation, "collector: no memory for the TLS layout");

    // Not while a fork child copies the shared objects, unless this thread
    // is changing them itself; from here on no change waits for that copy
    // (the forking thread may be among those stopped).
    os::write_hold::world_stopping();
    // The last stop's threads out of the handler before its table is reused
    // (in a fork child, they are the parent's: none here).
    pid_t pid = getpid();
    if (g_stop_pid == pid)
        for (uint32_t v; (v = g_left.load(std::memory_order_acquire)) != nthreads_;) os::futex_wait(&g_left, v);
    g_stop_pid = pid;
    uint32_t gen = g_gen.load(std::memory_order_relaxed) + 1;
    if (gen == 0) gen = 1;
    g_nslots = 0;
    g_ngone = 0;
    g_acked.store(0, std::memory_order_relaxed);
    g_left.store(0, std::memory_order_relaxed);
    g_gen.store(gen, std::memory_order_release);
    Scan scan{pid, sys_gettid(), exempt, n, gen};
    Status st = adsmSuccess;
    // Until a reading of the list finds no thread that was not stopped: a
    // stopped thread creates none, so the set is then complete.
    for (;;) {
        scan.added = 0;
        int r = for_each_thread(add_thread, &scan);
        if (r < 0) st = fail(adsmErrorInitialization, "collector: cannot list /proc/self/task (errno %d)", -r);
        else if (scan.full)
            st = fail(adsmErrorMemoryAllocation, "collector: more than %u threads to stop, or a thread id past %d",
                      kMaxThreads, kMaxTid);
        wait_for_acks(scan.pid, gen);
        if (st != adsmSuccess || scan.added == 0) break;
    }
    nthreads_ = g_acked.load(std::memory_order_acquire);
    g_stopped = true;
    if (st == adsmSuccess) {
        if (int r = g_state->maps.read(); r < 0)
            st = fail(adsmErrorInitialization, "collector: cannot read /proc/self/maps (errno %d)", -r);
    }
    if (st != adsmSuccess) start();
    return st;
}

void World::start() {
    if (!g_stopped) return;
    uint32_t gen = g_gen.load(std::memory_order_relaxed);
    g_released.store(gen, std::memory_order_release);
    os::futex_wake(&g_released);
    g_stopped = false;
    os::write_hold::world_started();
}

}  // namespace adsm::gc
