// The memory manager and one protocol (ADSM_PROTOCOL, ADSM_BLOCK_SIZE,
// ADSM_DIRTY_TRACKING: one CTest entry per combination) on a recording
// device, with no runtime, interposer or device process around them:
//  * the exact transfers a scripted sequence causes (delta sends exactly the
//    pages the CPU wrote; the others what their design says);
//  * failures injected into device copies, commits and protection changes,
//    one kind at a time and then at random points: each is reported to the
//    call that caused it (or as SIGBUS to an access that cannot be served),
//    no byte that was current before it is lost, and nothing hangs.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/recording_device.h"
#include "memory/address_space.h"
#include "memory/fault_engine.h"
#include "memory/manager.h"
#include "memory/region.h"
#include "memory/region_table.h"
#include "os/fault_injection.h"
#include "os/invariant.h"
#include "os/uffd.h"
#include "unit/kernel_may_write.h"
#include "protocols/protocol.h"
#include "support/stats.h"

namespace {

using adsm::Status;
using adsm::testing::DeviceOp;
using adsm::testing::RecordingDevice;
namespace inj = adsm::os::injection;

constexpr size_t kPage = 4096;

struct Core {
    adsm::Config config;
    adsm::AddressSpace space;
    adsm::RegionTable table;
    RecordingDevice device;
    std::unique_ptr<adsm::os::UffdTracker> tracker;
    std::unique_ptr<adsm::Protocol> protocol;
    std::unique_ptr<adsm::Manager> manager;
};

Core &core() {
    static Core *c = [] {
        auto *c = new Core;
        Status s = adsm::parse_config([](const char *n) { return static_cast<const char *>(getenv(n)); }, &c->config);
        if (s == adsmSuccess) s = c->space.init(c->config.va_base, 1ull << 32);
        if (s == adsmSuccess) s = c->table.init(c->space.base(), c->space.size());
        if (s == adsmSuccess)
            s = c->device.attach_window(c->space.base(), c->space.size(), c->space.host_fd(),
                                        c->space.alias(c->space.base()));
        const adsm::ProtocolInfo *info = adsm::find_protocol(c->config.protocol);
        const char *why = "";
        if (s == adsmSuccess && info && info->tracks_writes && c->config.dirty_tracking == "uffd" &&
            adsm::os::UffdTracker::available(&why)) {
            c->tracker = std::make_unique<adsm::os::UffdTracker>();
            const char *step = "";
            if (c->tracker->init(c->space.base(), c->space.size(), &step) != 0) s = adsmErrorInitialization;
        }
        adsm::ProtocolEnv env{&c->device, &c->config, c->tracker.get()};
        if (s == adsmSuccess) s = adsm::make_protocol(c->config.protocol, env, &c->protocol);
        if (s == adsmSuccess) {
            c->manager = std::make_unique<adsm::Manager>(c->config, c->space, c->table, std::vector<adsm::Device *>{&c->device}, *c->protocol);
            if (c->protocol->uses_faults())
                s = adsm::install_fault_engine(&c->table, c->protocol.get(), c->manager.get(), adsm::RacePolicy::sync);
        }
        if (s != adsmSuccess) {
            fprintf(stderr, "cannot build the core: %s\n", adsm::last_detail());
            abort();
        }
        printf("core: protocol %s, block %zu, tracking %s\n", c->protocol->name(), c->config.block_size,
               c->tracker ? "uffd" : "mprotect");
        return c;
    }();
    return *c;
}

std::string protocol() { return core().protocol->name(); }
bool faults() { return core().protocol->uses_faults(); }

uint8_t *alloc(size_t n, bool zero = true) {
    void *p = nullptr;
    EXPECT_EQ(core().manager->alloc(n, zero, &p), adsmSuccess) << adsm::last_detail();
    return static_cast<uint8_t *>(p);
}

Status call(std::function<void(RecordingDevice &)> kernel = nullptr) {
    core().device.kernel = std::move(kernel);
    return core().manager->call(adsm::LaunchDesc{});
}

Status sync() { return core().manager->sync(); }

void disarm() {
    for (auto s : {inj::Site::device_copy, inj::Site::device_commit, inj::Site::protect}) inj::arm(s, 0);
}

// CPU accesses that a failed fetch turns into SIGBUS: the handler jumps
// back, injection is switched off, and the access runs again.
sigjmp_buf g_jump;
volatile sig_atomic_t g_bus_errors = 0;
void on_bus(int, siginfo_t *, void *) { siglongjmp(g_jump, 1); }

template <class F>
void cpu(F &&f) {
    struct sigaction sa = {}, old;
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGBUS, &sa, &old);
    if (sigsetjmp(g_jump, 1)) {
        g_bus_errors = g_bus_errors + 1;
        disarm();
    }
    f();
    sigaction(SIGBUS, &old, nullptr);
}

class CoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        core();
        disarm();
        g_bus_errors = 0;
    }
    void TearDown() override {
        disarm();
        EXPECT_EQ(sync(), adsmSuccess);
        for (uint8_t *p : objects_) EXPECT_EQ(core().manager->free(p), adsmSuccess);
    }
    uint8_t *object(size_t n, bool zero = true) {
        uint8_t *p = alloc(n, zero);
        objects_.push_back(p);
        return p;
    }
    std::vector<uint8_t *> objects_;
};

// Prefetches whose copies to the host the recording device holds until the
// test lands them, into objects of several blocks (not batch's or lazy's
// whole ones).
class PrefetchRaceTest : public CoreTest {
protected:
    // Three blocks of 1s, all closed, the device's copy current.
    uint8_t *closed_blocks() {
        const size_t bs = core().config.block_size;
        uint8_t *p = object(3 * bs);
        memset(p, 1, 3 * bs);
        EXPECT_EQ(call(), adsmSuccess);
        EXPECT_EQ(sync(), adsmSuccess);
        return p;
    }
    // Bounded waits, long enough for a thread to get through if a block
    // opened too early (none must; the tests hold either way).
    static void within(const std::atomic<bool> &done) {
        for (int i = 0; i < 100 && !done; ++i) usleep(1000);
    }
    // A prefetch of [p, p+n) whose copy lands while the object is locked
    // (past the landing's patience).
    static void land_on_a_locked_object(uint8_t *p, size_t n) {
        RecordingDevice &dev = core().device;
        adsm::Region *r = core().table.find(reinterpret_cast<uintptr_t>(p));
        ASSERT_NE(r, nullptr);
        dev.hold_to_host = true;
        ASSERT_EQ(core().manager->prefetch(p, n, adsm::Manager::kHost), adsmSuccess);
        r->lock.lock();
        dev.land();
        r->lock.unlock();
        dev.hold_to_host = false;
    }
};

TEST_F(CoreTest, ACycleSendsWhatTheProtocolPromises) {
    const size_t n = 64 * kPage;
    uint8_t *p = object(n);
    ASSERT_EQ(call(), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    core().device.clear();
    p[3 * kPage + 1] = 7;
    p[40 * kPage + 2] = 9;
    bool seen = false;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  seen = d.at(reinterpret_cast<uintptr_t>(p))[3 * kPage + 1] == 7 &&
                         d.at(reinterpret_cast<uintptr_t>(p))[40 * kPage + 2] == 9;
              }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the kernel did not find the CPU's writes in device memory";
    size_t sent = core().device.bytes(DeviceOp::to_device);
    const size_t bs = core().config.block_size;
    bool one_block = 3 * kPage / bs == 40 * kPage / bs;
    if (protocol() == "delta" && (core().tracker || !one_block)) {
        EXPECT_EQ(sent, 2 * kPage) << "delta sends exactly the written pages";
    } else if (protocol() == "delta") {
        // Found by faults, a block's second written page sends it whole.
        EXPECT_EQ(sent, std::min(n, bs)) << "delta sends a block written in two pages whole";
    } else if (protocol() == "rolling") {
        size_t blocks = one_block ? 1 : 2;
        EXPECT_EQ(sent, std::min(n, blocks * bs)) << "rolling sends the written blocks whole";
    } else {
        EXPECT_EQ(sent, n) << protocol() << " sends the whole object";
    }
}

// The CPU writes all over an object of more blocks than rolling's list
// holds, again and again, between two calls: whatever a protocol sends
// ahead, no block crosses more than twice (once ahead, once at the call).
TEST_F(CoreTest, WritesAllOverAnObjectSendEachBlockAtMostTwicePerCall) {
    const size_t bs = core().config.block_size;
    const size_t blocks = core().config.rolling_size + 4, n = blocks * bs;
    uint8_t *p = object(n);
    ASSERT_EQ(call(), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    core().device.clear();
    const int rounds = 20;
    for (int round = 0; round < rounds; ++round)
        for (size_t k = 0; k < blocks; ++k) p[k * bs + static_cast<size_t>(round)] = static_cast<uint8_t>(round + k);
    bool seen = true;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  const uint8_t *dev = d.at(reinterpret_cast<uintptr_t>(p));
                  for (size_t k = 0; k < blocks; ++k)
                      for (int round = 0; round < rounds; ++round)
                          seen &= dev[k * bs + static_cast<size_t>(round)] == static_cast<uint8_t>(round + k);
              }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the kernel did not find every write in device memory";
    EXPECT_LE(core().device.bytes(DeviceOp::to_device), 2 * n) << protocol();
}

TEST_F(CoreTest, AKernelsResultsReachTheCpu) {
    const size_t n = 10 * kPage + 123;
    uint8_t *p = object(n);
    ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), 0xab, n); }), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 0xab) << "byte " << i;
    EXPECT_GE(core().device.bytes(DeviceOp::to_host), n);
}

// A GPU driver may read the program's memory inside a launch (its
// environment strings, for getenv).  Such a read of an object the call just
// released faults on the launching thread, which holds the context's lock:
// it is served there, not made to wait for that lock (it waited for ever).
TEST_F(CoreTest, AReadInsideTheLaunchItselfIsServed) {
    const size_t n = 4 * kPage;
    uint8_t *p = object(n);
    memset(p, 0x5a, n);
    // A thread waiting for itself ends the test, not the suite.  (Not by a
    // signal: the runtime defers them while it holds a context's lock.)
    std::atomic<bool> done{false};
    std::thread watchdog([&] {
        for (int i = 0; i < 6000 && !done; ++i) usleep(10000);
        if (!done) {
            fprintf(stderr, "the launch's own read waited for a minute\n");
            _exit(1);
        }
    });
    uint8_t seen = 0;
    EXPECT_EQ(call([&](RecordingDevice &) { seen = *static_cast<volatile uint8_t *>(p + n / 2); }), adsmSuccess);
    done = true;
    watchdog.join();
    EXPECT_EQ(seen, 0x5a);
    ASSERT_EQ(sync(), adsmSuccess);
    for (size_t i = 0; i < n; i += kPage / 2) ASSERT_EQ(p[i], 0x5a) << i;
}

// A launch whose checks assumed the context had synced no further than a
// point (its kernel heaps were open then) is refused, with nothing released
// or launched, when a sync came in between; at that point it goes ahead.
TEST_F(CoreTest, ACallPastItsSyncLimitIsRefusedAndLaunchesNothing) {
    ASSERT_EQ(call(), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    adsm::Context *ctx = core().manager->current();
    const uint64_t synced = ctx->synced_calls.load(), calls = ctx->calls.load();
    ASSERT_GT(synced, 0u);
    core().device.clear();
    EXPECT_EQ(core().manager->call(adsm::LaunchDesc{}, nullptr, synced - 1), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsm::last_detail()).find("was closed by its context's sync"), std::string::npos)
        << adsm::last_detail();
    EXPECT_TRUE(core().device.ops().empty());
    EXPECT_EQ(ctx->calls.load(), calls);
    EXPECT_EQ(ctx->unsynced_calls.load(), 0u);
    EXPECT_EQ(core().manager->call(adsm::LaunchDesc{}, nullptr, synced), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(ctx->calls.load(), calls + 1);
}

TEST_F(CoreTest, AFailedReleaseIsReportedAndLosesNothing) {
    const size_t n = 24 * kPage;
    uint8_t *p = object(n);
    memset(p, 1, n);
    ASSERT_EQ(call(), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    memset(p, 2, n);
    inj::arm(inj::Site::device_copy, 1);
    bool ran = false;
    EXPECT_NE(call([&](RecordingDevice &) { ran = true; }), adsmSuccess) << "a release whose copy failed succeeded";
    EXPECT_FALSE(ran) << "the kernel ran on data that never reached the device";
    EXPECT_EQ(inj::injected(inj::Site::device_copy) > 0, true);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 2) << "the CPU's data was lost at byte " << i;
    bool right = false;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  const uint8_t *q = d.at(reinterpret_cast<uintptr_t>(p));
                  right = true;
                  for (size_t i = 0; i < n; ++i) right = right && q[i] == 2;
              }),
              adsmSuccess)
        << adsm::last_detail();
    EXPECT_TRUE(right) << "the retried call did not send what the failed one could not";
}

TEST_F(CoreTest, AFailedAcquireIsReportedAndASecondSyncBringsTheData) {
    const size_t n = 8 * kPage;
    uint8_t *p = object(n);
    ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), 5, n); }), adsmSuccess);
    Status first = adsmSuccess;
    if (!faults()) {
        // Batch copies everything back at the sync.
        inj::arm(inj::Site::device_copy, 1);
        first = sync();
        EXPECT_NE(first, adsmSuccess) << "a sync whose copy failed succeeded";
        disarm();
    }
    ASSERT_EQ(sync(), adsmSuccess);
    cpu([&] {
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 5) << "byte " << i;
    });
    EXPECT_EQ(g_bus_errors, 0);
}

TEST_F(CoreTest, AFetchThatFailsOnceIsTriedAgain) {
    const size_t n = 8 * kPage;
    uint8_t *p = object(n);
    ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), 7, n); }), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    const uint64_t retried_before = adsm::stats().get(adsm::Counter::retried_faults);
    const uint64_t injected_before = inj::injected(inj::Site::device_copy);
    inj::arm(inj::Site::device_copy, 1);
    volatile uint8_t v = 0;
    cpu([&] { v = p[100]; });
    disarm();
    EXPECT_EQ(v, 7) << "the access ran on stale data";
    EXPECT_EQ(g_bus_errors, 0) << "a fetch that failed once raised SIGBUS";
    if (faults()) {
        EXPECT_EQ(inj::injected(inj::Site::device_copy), injected_before + 1) << "no fetch failed";
        EXPECT_EQ(adsm::stats().get(adsm::Counter::retried_faults), retried_before + 1);
    }
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 7) << "byte " << i;
}

TEST_F(CoreTest, AFetchThatFailsTwiceRaisesSigbusAndLosesNothing) {
    const size_t n = 8 * kPage;
    uint8_t *p = object(n);
    ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), 6, n); }), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    uint64_t failed_before = adsm::stats().get(adsm::Counter::failed_faults);
    inj::arm(inj::Site::device_copy, 1, 2);
    volatile uint8_t v = 0;
    cpu([&] { v = p[100]; });
    EXPECT_EQ(v, 6) << "the access ran on stale data";
    if (faults()) {
        EXPECT_EQ(g_bus_errors, 1) << "a fetch that failed was not reported to the program";
        EXPECT_EQ(adsm::stats().get(adsm::Counter::failed_faults), failed_before + 1);
    } else {
        EXPECT_EQ(g_bus_errors, 0) << "batch brought the data at the sync: nothing to fetch";
    }
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 6) << "byte " << i;
}

TEST_F(CoreTest, AProtectionThatCannotBeSplitFallsBackToCoarserBlocks) {
    const size_t n = 64 * kPage;
    uint8_t *p = object(n);
    ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), 3, n); }), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    uint64_t coarse_before = adsm::stats().get(adsm::Counter::coarsened_regions);
    inj::arm(inj::Site::protect, 1);
    cpu([&] {
        for (size_t i = 0; i < n; i += 997) ASSERT_EQ(p[i], 3) << "byte " << i;
        p[5 * kPage] = 9;
    });
    EXPECT_EQ(g_bus_errors, 0);
    if (faults()) {
        EXPECT_EQ(adsm::stats().get(adsm::Counter::coarsened_regions), coarse_before + 1);
    }
    bool seen = false;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  const uint8_t *q = d.at(reinterpret_cast<uintptr_t>(p));
                  seen = q[5 * kPage] == 9 && q[5 * kPage + 1] == 3 && q[n - 1] == 3;
              }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the coarsened region did not reach the device";
    ASSERT_EQ(sync(), adsmSuccess);
    for (size_t i = 0; i < n; i += 4093) ASSERT_EQ(p[i], i == 5 * kPage ? 9 : 3) << "byte " << i;
}

TEST_F(CoreTest, ACommitThatFailsLeavesTheObjectOnTheHostUntilACallNeedsIt) {
    const uint64_t used = core().device.used();
    inj::arm(inj::Site::device_commit, 1);
    void *v = nullptr;
    ASSERT_EQ(core().manager->alloc(3 * kPage, true, &v), adsmSuccess) << adsm::last_detail();
    auto *p = static_cast<uint8_t *>(v);
    objects_.push_back(p);
    EXPECT_EQ(core().device.used(), used) << "no device memory behind it yet";
    cpu([&] {
        EXPECT_EQ(p[2 * kPage + 5], 0);
        p[kPage] = 4;
    });
    // The call commits it and sends it whole: its zeros and the CPU's write.
    bool seen = false;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  const uint8_t *q = d.at(reinterpret_cast<uintptr_t>(p));
                  seen = q[kPage] == 4 && q[0] == 0 && q[3 * kPage - 1] == 0;
              }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the object did not reach the device";
    EXPECT_EQ(core().device.used(), used + 3 * kPage);
    ASSERT_EQ(sync(), adsmSuccess);
    EXPECT_EQ(p[kPage], 4);
}

bool any_page_made(const uint8_t *p, size_t n) {
    std::vector<unsigned char> v(n / kPage);
    EXPECT_EQ(mincore(const_cast<uint8_t *>(p), n, v.data()), 0);
    for (unsigned char b : v)
        if (b & 1) return true;
    return false;
}

// A file read or a copy into memory the CPU never touched is on its way to
// a kernel: the device takes it and the host's pages are not made (making
// them costs several times the copy).  The CPU reading it after all fetches it.
TEST_F(CoreTest, ALargeStoreIntoUntouchedMemoryGoesToTheDeviceAlone) {
    const size_t n = 256 * kPage;
    uint8_t *p = object(n, false);
    std::vector<uint8_t> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 7 + i / 4096);
    core().device.clear();
    ASSERT_EQ(core().manager->memcpy(p, src.data(), n), adsmSuccess) << adsm::last_detail();
    // Fault-driven protocols open fresh memory read-only where faults find
    // the writes; a write tracker opens it writable, its writes unseen, so
    // there the host copy takes the bytes as well.  (Batch writes the host
    // copy, sent at the call.)
    if (faults() && !core().tracker) {
        EXPECT_EQ(core().device.bytes(DeviceOp::to_device), n);
        EXPECT_FALSE(any_page_made(p, n)) << protocol() << " made the host's pages";
    }
    bool seen = false;
    ASSERT_EQ(call([&](RecordingDevice &d) { seen = memcmp(d.at(reinterpret_cast<uintptr_t>(p)), src.data(), n) == 0; }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the kernel did not find the stored bytes";
    ASSERT_EQ(sync(), adsmSuccess);
    EXPECT_EQ(memcmp(p, src.data(), n), 0) << "the CPU did not read the stored bytes";
}

// A large store into a block the device holds (a kernel wrote it) goes to
// the device without fetching the block first, however little of it it covers.
TEST_F(CoreTest, ALargeStoreIntoAClosedBlockFetchesNothing) {
    const size_t n = 512 * kPage, off = 128 * kPage, len = 32 * kPage;
    uint8_t *p = object(n, false);
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  uint8_t *q = d.at(reinterpret_cast<uintptr_t>(p));
                  for (size_t i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(i % 251);
              }),
              adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    std::vector<uint8_t> src(len, 0xc3);
    core().device.clear();
    ASSERT_EQ(core().manager->memcpy(p + off, src.data(), len), adsmSuccess) << adsm::last_detail();
    if (faults()) {
        EXPECT_EQ(core().device.bytes(DeviceOp::to_host), 0u) << protocol() << " fetched before storing";
    }
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(p[i], i >= off && i < off + len ? 0xc3 : static_cast<uint8_t>(i % 251)) << i;
}

// A prefetch's copy writes the host copy when it lands, whenever that is:
// its blocks must stay closed until then, whoever else waits on the object.
// Laid out by hand: block 0's prefetch landed while the object was locked
// (its landing gave up, leaving the block incoming), a thread waits for it,
// and block 1's prefetch is being submitted (no ticket yet) when that
// thread finds block 0's copy done.  Block 1 must not open before its copy
// lands, or the landing overwrites what the CPU wrote there meanwhile.
TEST_F(PrefetchRaceTest, ABlockStaysClosedUntilItsPrefetchLandsWhateverElseEnds) {
    RecordingDevice &dev = core().device;
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    adsm::Region *r = core().table.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(r, nullptr);
    ASSERT_GE(r->nblocks, 3u);
    dev.hold_to_host = true;

    ASSERT_EQ(core().manager->prefetch(p, 1, adsm::Manager::kHost), adsmSuccess);
    r->lock.lock();
    dev.land();  // its landing cannot take the lock and gives up
    r->lock.unlock();

    dev.stop_waits = true;
    std::atomic<bool> read{false};
    std::thread reader([&] {
        EXPECT_EQ(*reinterpret_cast<volatile uint8_t *>(p), 1);
        read = true;
    });
    while (dev.waiting.load() == 0) sched_yield();

    dev.stop_submits = true;
    std::thread prefetcher([&] { EXPECT_EQ(core().manager->prefetch(p + bs, 1, adsm::Manager::kHost), adsmSuccess); });
    while (dev.submitting.load() == 0) sched_yield();

    dev.stop_waits = false;  // the reader finds block 0's copy done
    within(read);
    std::atomic<bool> written{false};
    std::thread writer([&] {
        p[bs] = 7;
        written = true;
    });
    within(written);
    dev.stop_submits = false;
    while (dev.submitting.load() != 0) sched_yield();
    dev.land();
    reader.join();
    prefetcher.join();
    writer.join();
    dev.hold_to_host = false;
    EXPECT_EQ(p[bs], 7) << "block 1's prefetch landed over the CPU's write";
    EXPECT_EQ(p[bs + 1], 1);
    EXPECT_EQ(p[0], 1);
}

// A landing that finds its object locked past its patience (its holder
// busy for longer, as on a loaded machine) is left to the lock's next
// holder: its bytes are in the host copy already, so nothing is fetched
// twice.
TEST_F(PrefetchRaceTest, ALandingThatFindsTheObjectLockedIsNotFetchedAgain) {
    RecordingDevice &dev = core().device;
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    const uint64_t deferred = adsm::stats().get(adsm::Counter::landings_handed_off);
    dev.clear();
    land_on_a_locked_object(p, 2 * bs);
    EXPECT_GT(adsm::stats().get(adsm::Counter::landings_handed_off), deferred);
    EXPECT_EQ(p[0], 1);
    EXPECT_EQ(p[2 * bs - 1], 1);
    EXPECT_EQ(dev.bytes(DeviceOp::to_host), 2 * bs) << "the landed blocks were fetched again";
}

// A deferred landing whose blocks a release closed before anyone landed it
// must never put its bytes, older than the kernel's, in the host copy; and
// its run goes back to the pool (more cycles than the pool has runs, each
// prefetch still in the background).
TEST_F(PrefetchRaceTest, ADeferredLandingNeverOutlivesItsBlocks) {
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    adsm::Region *r = core().table.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(r, nullptr);
    const uint64_t deferred = adsm::stats().get(adsm::Counter::landings_handed_off);
    const int cycles = 1100;  // the pool holds 1024
    uint64_t prefetched = 0;
    for (int i = 0; i < cycles; ++i) {
        // Block 0 closed again, the device's copy current; a protocol that
        // predicts reads may have fetched it ahead already at the sync.
        ASSERT_EQ(call(), adsmSuccess);
        ASSERT_EQ(sync(), adsmSuccess);
        r->lock.lock();
        prefetched += r->state(0) == adsm::block::kInvalid &&
                      !(r->blocks[0] & (adsm::block::kLanded | adsm::block::kIncoming));
        r->lock.unlock();
        land_on_a_locked_object(p, 1);
        const auto v = static_cast<uint8_t>(2 + i % 200);
        ASSERT_EQ(call([&](RecordingDevice &d) { memset(d.at(reinterpret_cast<uintptr_t>(p)), v, bs); }), adsmSuccess);
        ASSERT_EQ(sync(), adsmSuccess);
        ASSERT_EQ(p[0], v) << "cycle " << i << ": a deferred landing put bytes older than the kernel's";
    }
    EXPECT_GT(prefetched, 0u);
    EXPECT_EQ(adsm::stats().get(adsm::Counter::landings_handed_off), deferred + prefetched)
        << "prefetches stopped going to the background: deferred runs were never given back";
}

// A region whose protection cannot be split any more opens whole: a
// prefetch still on its way into one of its blocks must land before that,
// or it lands over what the CPU writes there once the region is open.
TEST_F(PrefetchRaceTest, ARegionTurningCoarseLetsItsPrefetchesLandFirst) {
    RecordingDevice &dev = core().device;
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    uint64_t coarse_before = adsm::stats().get(adsm::Counter::coarsened_regions);
    dev.hold_to_host = true;
    ASSERT_EQ(core().manager->prefetch(p, 1, adsm::Manager::kHost), adsmSuccess);  // block 0 coming

    inj::arm(inj::Site::protect, 1);  // block 1's opening fails: the region turns coarse
    std::atomic<bool> written1{false}, written0{false};
    std::thread writer1([&] {
        p[bs] = 5;
        written1 = true;
    });
    within(written1);
    std::thread writer0([&] {
        p[0] = 9;
        written0 = true;
    });
    within(written0);
    dev.land();
    writer1.join();
    writer0.join();
    dev.hold_to_host = false;
    EXPECT_EQ(adsm::stats().get(adsm::Counter::coarsened_regions), coarse_before + 1);
    EXPECT_EQ(p[0], 9) << "block 0's prefetch landed over the CPU's write";
    EXPECT_EQ(p[1], 1);
    EXPECT_EQ(p[bs], 5);
}

// A fetch of several closed blocks (a fork child's, a prefetch's fallback)
// whose first opening fails: the region turns coarse, opening every block,
// and the fetch goes on with the rest open already (a debug build's
// invariant stopped the program there), without fetching them twice.
TEST_F(PrefetchRaceTest, AFetchOfSeveralBlocksSurvivesTheRegionTurningCoarse) {
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    uint64_t coarse_before = adsm::stats().get(adsm::Counter::coarsened_regions);
    core().device.clear();
    inj::arm(inj::Site::protect, 1);  // block 0's opening fails: coarse
    ASSERT_EQ(core().manager->fetch_to_host(p, 3 * bs), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(adsm::stats().get(adsm::Counter::coarsened_regions), coarse_before + 1);
    EXPECT_EQ(core().device.bytes(DeviceOp::to_host), 3 * bs) << "blocks fetched twice";
    cpu([&] { p[2 * bs] = 4; });
    EXPECT_EQ(g_bus_errors, 0);
    bool seen = false;
    ASSERT_EQ(call([&](RecordingDevice &d) {
                  const uint8_t *q = d.at(reinterpret_cast<uintptr_t>(p));
                  seen = q[2 * bs] == 4 && q[0] == 1 && q[3 * bs - 1] == 1;
              }),
              adsmSuccess);
    EXPECT_TRUE(seen) << "the kernel did not find the CPU's write after the coarsening";
}

// The same with no failure during the fetch: a region coarse since an
// earlier cycle, its blocks closed again by the release.
TEST_F(PrefetchRaceTest, AFetchIntoARegionCoarseSinceAnEarlierCycle) {
    const size_t bs = core().config.block_size;
    uint8_t *p = closed_blocks();
    inj::arm(inj::Site::protect, 1);
    cpu([&] { p[bs] = 5; });  // block 1's opening fails: coarse
    disarm();
    ASSERT_EQ(call(), adsmSuccess);
    ASSERT_EQ(sync(), adsmSuccess);
    ASSERT_EQ(core().manager->fetch_to_host(p, 3 * bs), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(p[bs], 5);
    EXPECT_EQ(p[0], 1);
    EXPECT_EQ(p[3 * bs - 1], 1);
}

// A hold (a fork's, a chaos cycle's) closes every object the program wrote
// and its end opens them all again, data unchanged.  Objects closed whole
// are closed and opened in one change per run of neighbours: one per
// object made a chaos cycle over thousands of small objects cost
// milliseconds.
TEST_F(CoreTest, AHoldClosesWrittenObjectsTogetherAndItsEndOpensThem) {
    std::atomic<bool> done{false};
    std::thread other([&] {
        while (!done) usleep(1000);
    });
    const size_t n = core().config.block_size;
    std::vector<uint8_t *> p;
    for (int i = 0; i < 8; ++i) p.push_back(object(n));
    for (int i = 0; i < 8; ++i) memset(p[i], i + 1, n);
    // Runs of neighbours among every live object the protocol holds whole.
    uint64_t runs = 0;
    uintptr_t end = 0;
    std::vector<std::pair<uintptr_t, size_t>> spans;
    core().table.for_each_live([&](adsm::Region &r) {
        if (r.kind != adsm::RegionKind::device && r.host && core().protocol->holds_by_span(r))
            spans.emplace_back(r.host, r.span);
    });
    std::sort(spans.begin(), spans.end());
    for (auto [at, len] : spans) {
        if (at != end) ++runs;
        end = at + len;
    }
    const uint64_t before = inj::injected(inj::Site::protect);
    if (runs) inj::arm(inj::Site::protect, runs + 1);  // one change more would fail
    ASSERT_TRUE(core().manager->hold_writes());
    EXPECT_EQ(inj::injected(inj::Site::protect), before);
    for (int i = 0; i < 8; ++i) EXPECT_FALSE(kernel_may_write(p[i] + n / 2)) << i;
    if (runs) inj::arm(inj::Site::protect, runs + 1);
    core().manager->resume_writes();
    disarm();
    EXPECT_EQ(inj::injected(inj::Site::protect), before);
    for (int i = 0; i < 8; ++i) {
        adsm::Region *r = core().table.find(reinterpret_cast<uintptr_t>(p[i]));
        ASSERT_NE(r, nullptr);
        EXPECT_FALSE(r->writes_held.load()) << i;
        if (core().protocol->holds_by_span(*r)) {
            EXPECT_TRUE(kernel_may_write(p[i] + n / 2)) << i;
        }
        EXPECT_EQ(p[i][0], i + 1);
        EXPECT_EQ(p[i][n - 1], i + 1);
        memset(p[i], 0x55, n);  // writable again, by faults where the protocol takes them
    }
    done = true;
    other.join();
}

// Random programs with failures injected at random points: after each
// failure the call is retried; every byte is checked against a model.
TEST_F(CoreTest, RandomFailuresLoseNothing) {
    uint64_t rng = 0x9e3779b97f4a7c15ull * (1 + strtoull(getenv("ADSM_MODEL_SEED") ? getenv("ADSM_MODEL_SEED") : "1",
                                                          nullptr, 0));
    auto next = [&] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    const size_t block = core().config.block_size;
    std::vector<size_t> sizes = {100, 3 * kPage + 5, 2 * block + 7 * kPage};
    std::vector<uint8_t *> objs;
    std::vector<std::vector<uint8_t>> model;
    for (size_t n : sizes) {
        objs.push_back(object(n));
        model.emplace_back(n, 0);
    }
    unsigned failed_calls = 0, failed_syncs = 0;
    for (int step = 0; step < 400; ++step) {
        if (next() % 3 == 0) {
            auto site = static_cast<inj::Site>(next() % 3);
            inj::arm(site, 1 + next() % 6);
        }
        size_t o = next() % objs.size(), n = sizes[o];
        switch (next() % 4) {
        case 0: {  // the CPU writes a range
            size_t b = next() % n, len = 1 + next() % (n - b);
            uint8_t v = static_cast<uint8_t>(next());
            cpu([&] { memset(objs[o] + b, v, len); });
            memset(model[o].data() + b, v, len);
            break;
        }
        case 1: {  // a kernel transforms every object
            auto kernel = [&](RecordingDevice &d) {
                for (size_t i = 0; i < objs.size(); ++i) {
                    uint8_t *q = d.at(reinterpret_cast<uintptr_t>(objs[i]));
                    for (size_t j = 0; j < sizes[i]; ++j) q[j] = static_cast<uint8_t>(q[j] * 3 + 1);
                }
            };
            Status s = call(kernel);
            if (s != adsmSuccess) {
                ++failed_calls;
                disarm();
                ASSERT_EQ(call(kernel), adsmSuccess) << adsm::last_detail();
            }
            for (auto &m : model)
                for (uint8_t &x : m) x = static_cast<uint8_t>(x * 3 + 1);
            Status y = sync();
            if (y != adsmSuccess) {
                ++failed_syncs;
                disarm();
                ASSERT_EQ(sync(), adsmSuccess) << adsm::last_detail();
            }
            break;
        }
        case 2: {  // the CPU reads everything
            bool same = true;
            size_t at = 0;
            cpu([&] {
                same = memcmp(objs[o], model[o].data(), n) == 0;
                for (at = 0; !same && at < n && objs[o][at] == model[o][at]; ++at) {
                }
            });
            ASSERT_TRUE(same) << "object " << o << " differs at byte " << at << " at step " << step;
            break;
        }
        default: {  // the runtime writes for the program (I/O, adsmMemset)
            size_t b = next() % n, len = 1 + next() % (n - b);
            uint8_t v = static_cast<uint8_t>(next());
            Status s = core().manager->program_fill(objs[o] + b, v, len);
            if (s != adsmSuccess) {
                disarm();
                ASSERT_EQ(core().manager->program_fill(objs[o] + b, v, len), adsmSuccess) << adsm::last_detail();
            }
            memset(model[o].data() + b, v, len);
            break;
        }
        }
    }
    disarm();
    for (size_t o = 0; o < objs.size(); ++o)
        ASSERT_EQ(memcmp(objs[o], model[o].data(), sizes[o]), 0) << "object " << o << " at the end";
    printf("random failures: %u calls and %u syncs failed and were retried, %d accesses got SIGBUS\n", failed_calls,
           failed_syncs, static_cast<int>(g_bus_errors));
    EXPECT_GT(failed_calls + failed_syncs + g_bus_errors, 0u) << "no failure was injected where it matters";
}

#if ADSM_CHECK_INVARIANTS
// Builds with invariants (Debug, ADSM_INVARIANTS) check at each release that
// every block's page protection agrees with its state, so a page opened
// behind the protocol's back stops the program there, not later as stale
// data.  (Batch keeps no block states; its configuration leaves this out.)
TEST(BlockStateDeathTest, APageOpenedBehindTheProtocolsBackStopsTheNextRelease) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            uint8_t *p = alloc(4 * kPage);
            if (call() != adsmSuccess || sync() != adsmSuccess) abort();
            // The release left the blocks Invalid (closed); open one anyway.
            mprotect(p, kPage, PROT_READ);
            call();
        },
        "broken invariant.*may not touch is open");
}
#endif

}  // namespace
