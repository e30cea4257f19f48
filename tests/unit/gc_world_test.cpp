// Stopping the world (gc/world.h) and the data roots (gc/roots.h): what a
// stopped thread publishes is where its values are, threads that come and
// go, sleep in the kernel or block signals are all handled, and the data
// segments are the writable ones of every object.
#include "gc/world.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gc/proc_self.h"
#include "gc/roots.h"
#include "os/deferred_signals.h"
#include "os/fault_signals.h"
#include "os/stop_signal.h"

using adsm::Status;
using adsm::gc::Range;
using adsm::gc::RangeBuffer;
using adsm::gc::World;

extern "C" uintptr_t adsm_gc_caller_regs[];

namespace {

constexpr uint64_t kMask = 0x5a17c0de00000000ull;

World &world() {
    static World w;
    return w;
}

pid_t tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

size_t count_threads() {
    size_t n = 0;
    adsm::gc::for_each_thread([](void *arg, pid_t) { ++*static_cast<size_t *>(arg); }, &n);
    return n;
}

// Every aligned word of the ranges equal to value, as a scanner would read
// them (other threads' stacks hold the sanitizer's poisoned red zones).
__attribute__((no_sanitize("address"))) std::vector<uintptr_t> find_word(const RangeBuffer &rb, uint64_t value) {
    std::vector<uintptr_t> at;
    at.reserve(64);
    for (const Range &r : rb)
        for (uintptr_t a = (r.lo + 7) & ~uintptr_t{7}; a + 8 <= r.hi; a += 8)
            if (*reinterpret_cast<volatile const uint64_t *>(a) == value && at.size() < at.capacity()) at.push_back(a);
    return at;
}

bool covered(const RangeBuffer &rb, const void *p, size_t n = 1) {
    auto a = reinterpret_cast<uintptr_t>(p);
    for (const Range &r : rb)
        if (a >= r.lo && a + n <= r.hi) return true;
    return false;
}

bool near(uintptr_t a, uintptr_t b) { return (a > b ? a - b : b - a) < 256 * 1024; }

class WorldTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { ASSERT_EQ(World::init(), adsmSuccess) << adsm::last_detail(); }
    // The stopped threads' ranges, the world started again before any
    // assertion can leave the test.
    static Status stopped_thread_ranges(RangeBuffer *rb) {
        if (Status s = world().stop(nullptr, 0); s != adsmSuccess) return s;
        Status st = world().thread_ranges(rb);
        world().start();
        return st;
    }
};

// ---- (a) a value held only by a stopped thread is in its ranges

std::atomic<bool> g_release{false};

struct Holder {
    uint64_t key;
    bool in_register;
    std::atomic<uintptr_t> hint{0};  // an address in the holder's frame
};

// Only this thread ever computes key ^ kMask.
__attribute__((noinline)) void hold_on_stack(Holder *h) {
    volatile uint64_t v = h->key ^ kMask;
    h->hint.store(reinterpret_cast<uintptr_t>(&v));
    while (!g_release.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
}

__attribute__((noinline)) void hold_in_register(Holder *h) {
    uint64_t v = h->key ^ kMask;
    asm volatile("" : "+r"(v));
    h->hint.store(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
    while (!g_release.load(std::memory_order_relaxed)) asm volatile("" : "+r"(v));
    asm volatile("" ::"r"(v));
}

TEST_F(WorldTest, AValueOnlyAStoppedThreadHoldsIsInItsRanges) {
    constexpr int kThreads = 8;
    g_release = false;
    std::vector<Holder> holders(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        holders[i].key = 0x1234567ull * (i + 1);
        holders[i].in_register = i % 2;
        threads.emplace_back([h = &holders[i]] { h->in_register ? hold_in_register(h) : hold_on_stack(h); });
    }
    for (auto &h : holders)
        while (!h.hint.load()) std::this_thread::yield();

    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    ASSERT_EQ(world().stop(nullptr, 0), adsmSuccess) << adsm::last_detail();
    size_t stopped = world().stopped();
    Status st = world().thread_ranges(&rb);
    world().start();
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_GE(stopped, size_t{kThreads});

    for (auto &h : holders) {
        bool found = false;
        for (uintptr_t a : find_word(rb, h.key ^ kMask)) found |= near(a, h.hint.load());
        EXPECT_TRUE(found) << "key " << h.key << (h.in_register ? " in a register" : " on the stack");
    }
    g_release = true;
    for (auto &t : threads) t.join();
}

// A runtime thread waiting for work (a device's kernel worker) holds only
// what finished kernels left: its stack is not a root, or it would keep
// their objects alive for good.
__attribute__((noinline)) void hold_while_idle(Holder *h) {
    volatile uint64_t v = h->key ^ kMask;
    adsm::os::IdleStack idle;
    h->hint.store(reinterpret_cast<uintptr_t>(&v));
    while (!g_release.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
}

TEST_F(WorldTest, AnIdleRuntimeThreadsStackIsNotScanned) {
    g_release = false;
    Holder idle, busy;
    idle.key = 0x7777777ull;
    busy.key = 0x8888888ull;
    std::thread a([&] { hold_while_idle(&idle); }), b([&] { hold_on_stack(&busy); });
    while (!idle.hint.load() || !busy.hint.load()) std::this_thread::yield();
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    Status st = stopped_thread_ranges(&rb);
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_FALSE(covered(rb, reinterpret_cast<const void *>(idle.hint.load()))) << "an idle worker's stack was scanned";
    EXPECT_TRUE(covered(rb, reinterpret_cast<const void *>(busy.hint.load())));
    g_release = true;
    a.join();
    b.join();
}

// A thread stopped while the runtime handles a fault of its off the
// alternate stack: the fault's frame there, with the program's registers at
// the fault, is scanned too (here a page no other range covers stands for it).
TEST_F(WorldTest, AFaultFrameLeftOnTheAlternateStackIsScanned) {
    g_release = false;
    auto *frame = static_cast<uint64_t *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(frame, MAP_FAILED);
    Holder with, without;
    with.key = 0x9999999ull;
    without.key = 0xaaaaaaaull;
    auto hold = [frame](Holder *h, bool in_fault) {
        if (in_fault) {
            auto lo = reinterpret_cast<uintptr_t>(frame);
            adsm::os::switched_fault_frame = {lo, lo + 4096};
        }
        hold_on_stack(h);
        adsm::os::switched_fault_frame = {};
    };
    std::thread a(hold, &with, true), b(hold, &without, false);
    while (!with.hint.load() || !without.hint.load()) std::this_thread::yield();
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    Status st = stopped_thread_ranges(&rb);
    g_release = true;
    a.join();
    b.join();
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    size_t times = 0;
    for (const Range &r : rb) times += r.lo <= reinterpret_cast<uintptr_t>(frame) && reinterpret_cast<uintptr_t>(frame + 512) <= r.hi;
    EXPECT_EQ(times, 1u) << "the fault frame is scanned once, for the one thread in a fault";
    munmap(frame, 4096);
}

// A thread stopped in a handler on its alternate signal stack (the runtime's
// fault handler runs there for kernels) still has its own stack scanned.
std::atomic<bool> g_in_alt_handler{false};

void spin_on_alt_stack(int) {
    g_in_alt_handler = true;
    while (!g_release.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
}

__attribute__((noinline)) void hold_then_take_signal(Holder *h) {
    volatile uint64_t v = h->key ^ kMask;
    h->hint.store(reinterpret_cast<uintptr_t>(&v));
    pthread_kill(pthread_self(), SIGUSR1);
    asm volatile("" ::: "memory");
}

TEST_F(WorldTest, AThreadOnItsAlternateStackHasItsOwnStackScanned) {
    g_release = false;
    g_in_alt_handler = false;
    struct sigaction sa = {}, old = {};
    sa.sa_handler = spin_on_alt_stack;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    Holder h{0xa17a17ull, false};
    std::thread t([&] {
        constexpr size_t kAltSize = 64 * 1024;
        void *mem = mmap(nullptr, kAltSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        stack_t alt = {};
        alt.ss_sp = mem;
        alt.ss_size = kAltSize;
        sigaltstack(&alt, nullptr);
        hold_then_take_signal(&h);
        alt.ss_flags = SS_DISABLE;
        sigaltstack(&alt, nullptr);
        munmap(mem, kAltSize);
    });
    while (!g_in_alt_handler.load()) std::this_thread::yield();

    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    Status st = stopped_thread_ranges(&rb);
    bool found = false;  // looked for while the thread's stacks are there
    for (uintptr_t a : find_word(rb, h.key ^ kMask)) found |= near(a, h.hint.load());
    g_release = true;
    t.join();
    sigaction(SIGUSR1, &old, nullptr);
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_TRUE(found);
}

#if defined(__x86_64__)
// The caller's own callee-saved registers are published as they were at the call.
__attribute__((noinline)) Status ranges_with_r15(RangeBuffer *rb, uint64_t key) {
    register uint64_t v asm("r15") = key ^ kMask;
    asm volatile("" : "+r"(v));
    Status st = world().thread_ranges(rb);
    asm volatile("" ::"r"(v));
    return st;
}

TEST_F(WorldTest, TheCallersRegistersAreInItsRanges) {
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    ASSERT_EQ(world().stop(nullptr, 0), adsmSuccess) << adsm::last_detail();
    Status st = ranges_with_r15(&rb, 0xfeedf00dull);
    world().start();
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_TRUE(covered(rb, adsm_gc_caller_regs, 6 * sizeof(uintptr_t)));
    EXPECT_EQ(adsm_gc_caller_regs[5], 0xfeedf00dull ^ kMask);  // r15's place
}
#endif

// ---- static TLS, the caller's and a stopped thread's

thread_local uint64_t t_var = 1;

// Runs `where` on a thread of its own, which then waits while the world is
// stopped and the threads' ranges taken into *rb; returns what `where`
// returned (an address in that thread's storage).
const void *ranges_with_a_waiting_thread(RangeBuffer *rb, const void *(*where)(), Status *st) {
    std::atomic<const void *> other{nullptr};
    std::atomic<bool> done{false};
    std::thread t([&] {
        other.store(where());
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!other.load()) std::this_thread::yield();
    *st = world().stop(nullptr, 0);
    if (*st == adsmSuccess) {
        *st = world().thread_ranges(rb);
        world().start();
    }
    done = true;
    t.join();
    return other.load();
}

TEST_F(WorldTest, StaticThreadLocalStorageIsInTheRanges) {
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    Status st;
    const void *other = ranges_with_a_waiting_thread(&rb, []() -> const void * {
        t_var = 2;
        return &t_var;
    }, &st);
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_TRUE(covered(rb, &t_var, sizeof t_var));
    EXPECT_TRUE(covered(rb, other, sizeof t_var));
}

// ---- (b) threads that come and go while the world stops and starts

TEST_F(WorldTest, StopAndStartWhileThreadsComeAndGo) {
    std::atomic<bool> quit{false};
    std::atomic<uint64_t> made{0};
    auto churn = [&] {
        while (!quit.load()) {
            std::thread a([&] {
                std::thread nested([&] { made.fetch_add(1); });
                nested.join();
                made.fetch_add(1);
            });
            std::thread b([&] { made.fetch_add(1); });
            a.join();
            b.join();
        }
    };
    std::thread c1(churn), c2(churn);
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    int failures = 0;
    for (int i = 0; i < 300; ++i) {
        rb.clear();
        if (world().stop(nullptr, 0) != adsmSuccess) ++failures;
        else {
            if (world().thread_ranges(&rb) != adsmSuccess) ++failures;
            world().start();
        }
    }
    quit = true;
    c1.join();
    c2.join();
    EXPECT_EQ(failures, 0);
    EXPECT_GT(made.load(), 0u);
}

// ---- (c) threads in a blocking system call, or with other signals blocked

TEST_F(WorldTest, ThreadsInTheKernelOrBlockingOtherSignalsStop) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::atomic<long> got{-2};
    std::atomic<bool> masked_ready{false}, done{false};
    std::thread reader([&] {
        char c;
        got.store(read(fds[0], &c, 1));  // SA_RESTART: the stop must not end it
    });
    std::thread masked([&] {
        sigset_t async = adsm::os::async_signals();
        pthread_sigmask(SIG_BLOCK, &async, nullptr);
        masked_ready = true;
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!masked_ready.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the reader is in read()

    size_t others = count_threads() - 1;
    ASSERT_EQ(world().stop(nullptr, 0), adsmSuccess) << adsm::last_detail();
    size_t stopped = world().stopped();
    world().start();
    EXPECT_EQ(stopped, others);
    EXPECT_EQ(got.load(), -2);
    ASSERT_EQ(write(fds[1], "x", 1), 1);
    reader.join();
    EXPECT_EQ(got.load(), 1);
    done = true;
    masked.join();
    close(fds[0]);
    close(fds[1]);
}

TEST_F(WorldTest, ExemptThreadsRunOn) {
    std::atomic<bool> done{false};
    std::atomic<pid_t> marker_tid{0};
    std::atomic<uint64_t> ticks{0};
    std::thread marker([&] {
        marker_tid = tid();
        while (!done.load()) ticks.fetch_add(1);
    });
    std::thread sleeper([&] {
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!marker_tid.load()) std::this_thread::yield();
    pid_t exempt = marker_tid.load();
    size_t others = count_threads() - 2;
    ASSERT_EQ(world().stop(&exempt, 1), adsmSuccess) << adsm::last_detail();
    uint64_t before = ticks.load();
    while (ticks.load() < before + 1000) {
    }
    size_t stopped = world().stopped();
    world().start();
    EXPECT_EQ(stopped, others);
    done = true;
    marker.join();
    sleeper.join();
}

// ---- (d) a thread that blocks the stop signal is waited for, and named

// Runs fn with stderr going to a memory file; returns what was written.
template <class Fn>
std::string capture_stderr(Fn fn) {
    int mem = memfd_create("stderr", 0);
    int saved = dup(2);
    dup2(mem, 2);
    fn();
    dup2(saved, 2);
    close(saved);
    std::string text;
    char buf[4096];
    ssize_t n;
    lseek(mem, 0, SEEK_SET);
    while ((n = read(mem, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(mem);
    return text;
}

TEST_F(WorldTest, AThreadBlockingTheStopSignalIsNamedAndWaitedFor) {
    std::atomic<pid_t> blocker_tid{0};
    std::thread blocker([&] {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, adsm::os::kStopSignal);
        pthread_sigmask(SIG_BLOCK, &one, nullptr);
        blocker_tid = tid();
        std::this_thread::sleep_for(std::chrono::milliseconds(3000));
        pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    });
    while (!blocker_tid.load()) std::this_thread::yield();
    size_t others = count_threads() - 1;
    Status st = adsmErrorNotSupported;
    size_t stopped = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::string err = capture_stderr([&] {
        st = world().stop(nullptr, 0);
        stopped = world().stopped();
        if (st == adsmSuccess) world().start();
    });
    auto waited = std::chrono::steady_clock::now() - t0;
    blocker.join();
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(stopped, others);
    EXPECT_GE(waited, std::chrono::milliseconds(2500));
    EXPECT_NE(err.find("thread " + std::to_string(blocker_tid.load()) + " has not stopped"), std::string::npos) << err;
    EXPECT_NE(err.find("SIGPWR"), std::string::npos) << err;
}

// ---- the stop signal belongs to the collector once it holds it

void program_handler(int) {}

TEST_F(WorldTest, TheProgramCannotTakeTheStopSignal) {
    struct sigaction sa = {};
    sa.sa_handler = program_handler;
    sigemptyset(&sa.sa_mask);
    std::string err = capture_stderr([&] {
        errno = 0;
        EXPECT_EQ(sigaction(adsm::os::kStopSignal, &sa, nullptr), -1);
        EXPECT_EQ(errno, EINVAL);
        EXPECT_EQ(signal(adsm::os::kStopSignal, SIG_IGN), SIG_ERR);
    });
    EXPECT_NE(err.find("refused"), std::string::npos) << err;
    struct sigaction now = {};
    EXPECT_EQ(sigaction(adsm::os::kStopSignal, nullptr, &now), 0);  // asking is fine
    EXPECT_NE(now.sa_handler, program_handler);
    EXPECT_FALSE(adsm::os::deferrable(adsm::os::kStopSignal));
    ASSERT_EQ(world().stop(nullptr, 0), adsmSuccess) << adsm::last_detail();
    world().start();
}

// ---- (e) data segments

int g_data = 1;
int g_bss;
const int kConst = 5;
int *const kRelro = &g_data;  // relocated at load, then read-only

struct Mapping {
    uintptr_t lo, hi;
    bool writable;
};

std::vector<Mapping> read_maps() {
    std::vector<Mapping> maps;
    std::ifstream in("/proc/self/maps");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string span, perms;
        s >> span >> perms;
        size_t dash = span.find('-');
        maps.push_back({std::stoull(span.substr(0, dash), nullptr, 16), std::stoull(span.substr(dash + 1), nullptr, 16),
                        perms[1] == 'w'});
    }
    return maps;
}

bool writable(const std::vector<Mapping> &maps, uintptr_t lo, uintptr_t hi) {
    // Adjacent writable mappings may together hold one segment.
    while (lo < hi) {
        bool step = false;
        for (const Mapping &m : maps)
            if (m.writable && lo >= m.lo && lo < m.hi) {
                lo = m.hi;
                step = true;
            }
        if (!step) return false;
    }
    return true;
}

TEST(RootsTest, DataSegmentsAreTheWritableDataOfEveryObject) {
    void *lib = dlopen(ADSM_GC_TEST_LIB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto lib_data = reinterpret_cast<int *(*)()>(dlsym(lib, "gc_test_lib_data"));
    auto lib_bss = reinterpret_cast<int *(*)()>(dlsym(lib, "gc_test_lib_bss"));
    ASSERT_TRUE(lib_data && lib_bss);

    RangeBuffer rb;
    adsm::gc::LoadedObjects seen;
    ASSERT_EQ(adsm::gc::data_segments(&rb, &seen), adsmSuccess);
    EXPECT_TRUE(covered(rb, &g_data, sizeof g_data));
    EXPECT_TRUE(covered(rb, &g_bss, sizeof g_bss));
    EXPECT_TRUE(covered(rb, lib_data(), sizeof(int)));
    EXPECT_TRUE(covered(rb, lib_bss(), sizeof(int)));
    EXPECT_FALSE(covered(rb, &kConst));
    std::vector<Mapping> maps = read_maps();
    // Relocated constants are out, unless they share the last page of the
    // relocation-read-only part, which stays writable.
    if (!writable(maps, reinterpret_cast<uintptr_t>(&kRelro), reinterpret_cast<uintptr_t>(&kRelro) + 1)) {
        EXPECT_FALSE(covered(rb, &kRelro));
    }
    for (const Range &r : rb) EXPECT_TRUE(writable(maps, r.lo, r.hi)) << std::hex << r.lo << "-" << r.hi;
    dlclose(lib);
}

// A library loaded or unloaded after the data segments were listed is
// noticed (a collection then frees nothing).
TEST(RootsTest, ALibraryLoadedOrUnloadedSinceTheListingIsNoticed) {
    // A copy, so that dlopen maps it afresh and dlclose unmaps it.
    char path[] = "/tmp/adsm-roots-test-lib-XXXXXX.so";
    int out = mkstemps(path, 3);
    ASSERT_GE(out, 0);
    {
        std::ifstream in(ADSM_GC_TEST_LIB, std::ios::binary);
        std::stringstream bytes;
        bytes << in.rdbuf();
        const std::string b = bytes.str();
        ASSERT_EQ(write(out, b.data(), b.size()), ssize_t(b.size()));
        close(out);
    }
    RangeBuffer rb;
    adsm::gc::LoadedObjects before, loaded;
    ASSERT_EQ(adsm::gc::data_segments(&rb, &before), adsmSuccess);
    EXPECT_GT(before.count, 2u);
    EXPECT_TRUE(adsm::gc::loaded_objects_unchanged(before));
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    EXPECT_FALSE(adsm::gc::loaded_objects_unchanged(before)) << "a library loaded since was not noticed";
    rb.clear();
    ASSERT_EQ(adsm::gc::data_segments(&rb, &loaded), adsmSuccess);
    EXPECT_EQ(loaded.count, before.count + 1);
    EXPECT_TRUE(adsm::gc::loaded_objects_unchanged(loaded));
    dlclose(lib);
    EXPECT_FALSE(adsm::gc::loaded_objects_unchanged(loaded)) << "a library unloaded since was not noticed";
    unlink(path);
}

// So is one dlmopen()ed into a namespace of its own, whose data
// dl_iterate_phdr lists as roots too (where glibc chains the namespaces'
// lists: 2.35 and later).
TEST(RootsTest, ALibraryLoadedIntoANamespaceOfItsOwnIsNoticed) {
    RangeBuffer rb;
    adsm::gc::LoadedObjects before;
    ASSERT_EQ(adsm::gc::data_segments(&rb, &before), adsmSuccess);
    size_t segments_before = rb.size();
    void *lib = dlmopen(LM_ID_NEWLM, ADSM_GC_TEST_LIB_PLAIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    EXPECT_FALSE(adsm::gc::loaded_objects_unchanged(before)) << "a library in a new namespace was not noticed";
    adsm::gc::LoadedObjects loaded;
    rb.clear();
    ASSERT_EQ(adsm::gc::data_segments(&rb, &loaded), adsmSuccess);
    EXPECT_GT(loaded.count, before.count);
    EXPECT_GT(rb.size(), segments_before) << "its data is not listed as roots";
    EXPECT_TRUE(adsm::gc::loaded_objects_unchanged(loaded));
    dlclose(lib);
}

// ---- dynamic TLS: a dlopen()ed library's, the caller's and a stopped thread's

// Whether a lies in the mapping that holds the calling thread's pointer
// (where static TLS is): a dynamic block is elsewhere, in the C heap.
bool in_static_tls_mapping(const void *a) {
    auto tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer()), at = reinterpret_cast<uintptr_t>(a);
    for (const Mapping &m : read_maps())
        if (tp >= m.lo && tp < m.hi) return at >= m.lo && at < m.hi;
    return false;
}

void **(*g_lib_tls)();  // the loaded library's accessor, for the thread's function

TEST_F(WorldTest, DynamicThreadLocalStorageOfLoadedLibrariesIsInTheRanges) {
    void *lib = dlopen(ADSM_GC_TEST_LIB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto lib_tls = reinterpret_cast<void **(*)()>(dlsym(lib, "gc_test_lib_tls"));
    ASSERT_NE(lib_tls, nullptr);
    void **mine = lib_tls();
    ASSERT_FALSE(in_static_tls_mapping(mine)) << "the loader put the library's TLS in the static block: this "
                                                 "test would not see the dynamic one";
    g_lib_tls = lib_tls;
    RangeBuffer rb;
    ASSERT_TRUE(rb.reserve(4096));
    Status st;
    const void *other = ranges_with_a_waiting_thread(&rb, []() -> const void * { return g_lib_tls(); }, &st);
    ASSERT_EQ(st, adsmSuccess) << adsm::last_detail();
    EXPECT_NE(static_cast<const void *>(mine), other);
    EXPECT_TRUE(covered(rb, mine, 4 * sizeof(void *))) << "the collector's own thread";
    EXPECT_TRUE(covered(rb, other, 4 * sizeof(void *))) << "a stopped thread";
}

// The mappings the world's stop relies on, asked of the kernel one address
// at a time (PROCMAP_QUERY, where it answers) and read from the whole file:
// the same answers for a stack, the heap, data, code, a thread's TLS, an
// unreadable mapping and no mapping at all.
int g_mapped_data = 1;

TEST(MappingsTest, AskingTheKernelAndReadingTheFileAgree) {
    adsm::gc::Mappings asked, read;
    ASSERT_EQ(asked.read(), 0);
    ASSERT_EQ(read.read(false), 0);
    int local = 0;
    std::unique_ptr<int> heap(new int(0));
    void *none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(none, MAP_FAILED);
    const uintptr_t addrs[] = {reinterpret_cast<uintptr_t>(&local), reinterpret_cast<uintptr_t>(heap.get()),
                               reinterpret_cast<uintptr_t>(&g_mapped_data), reinterpret_cast<uintptr_t>(&read_maps),
                               reinterpret_cast<uintptr_t>(__builtin_thread_pointer()),
                               reinterpret_cast<uintptr_t>(none), 4096};
    const bool mapped[] = {true, true, true, true, true, false, false};
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; ++i) {
        Range a{}, b{};
        bool fa = asked.find(addrs[i], &a), fb = read.find(addrs[i], &b);
        EXPECT_EQ(fa, mapped[i]) << "address " << i << " asked";
        EXPECT_EQ(fb, mapped[i]) << "address " << i << " read";
        if (fa && fb) {
            EXPECT_EQ(a.lo, b.lo) << "address " << i;
            EXPECT_EQ(a.hi, b.hi) << "address " << i;
            EXPECT_TRUE(addrs[i] >= a.lo && addrs[i] < a.hi) << "address " << i;
        }
    }
    // (gtest runs this on the main thread.)
    Range sa = asked.main_stack(), sb = read.main_stack();
    EXPECT_EQ(sa.lo, sb.lo);
    EXPECT_EQ(sa.hi, sb.hi);
    EXPECT_TRUE(reinterpret_cast<uintptr_t>(&local) >= sb.lo && reinterpret_cast<uintptr_t>(&local) < sb.hi);
    EXPECT_FALSE(asked.failed());
    munmap(none, 4096);
}

}  // namespace
