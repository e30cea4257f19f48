// Model-based randomized test of the coherence protocols: long random
// sequences of CPU reads and writes from several threads, bulk operations
// through the runtime (adsmMemset, adsmMemcpy), kernels that read and write
// random ranges, frees and new allocations, and syncs, with every byte
// checked against a plain reference copy kept by the test.
//
// Half the calls name the objects their kernel uses (adsmCallWith); with
// ADSM_MODEL_NAMED_CALLS every one does, one call at a time, so that a
// device smaller than the objects (ADSM_SIM_MEMORY) evicts them in turn.
// With several devices (ADSM_DEVICE=sim,sim) the objects also move between
// devices: the whole context (adsmSetDevice) or one object handed to a
// context on another device and back (adsmMigrate), whatever state their
// blocks are in.  With ADSM_MODEL_PLACES a fifth of the objects are
// host-resident, a fifth replicated on every device (kernels only read
// those) and a fifth kept on a preferred device.
//
// The protocol, block size and dirty tracker come from the environment (one
// CTest entry per combination).  ADSM_MODEL_SEED picks the sequence and
// ADSM_MODEL_PHASES its length: CI runs fixed seeds for a few hundred
// phases; `ADSM_MODEL_PHASES=1000000` runs millions of steps locally.
#include <adsm.hpp>
#include <gtest/gtest.h>

#include "gpu/doubles/fake_module.hpp"
#include "protocols/model_kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    size_t below(size_t n) { return n ? next() % n : 0; }
    bool chance(unsigned percent) { return below(100) < percent; }
};

struct Object {
    uint8_t *p = nullptr;
    size_t n = 0;
    std::vector<uint8_t> model;
    bool replicated = false;  // kernels only read it
};

// Every phase draws from the same mix of steps.  The sanitizer build looks
// for memory errors, which the first half of a sequence shows as well as
// the whole (it runs the release build's sequences, half as long): the
// model tests were a third of its run.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kDefaultPhases = 75;
#else
constexpr uint64_t kDefaultPhases = 150;
#endif

class ModelTest : public ::testing::Test {
protected:
    void SetUp() override {
        const char *seed = getenv("ADSM_MODEL_SEED");
        const char *phases = getenv("ADSM_MODEL_PHASES");
        rng_.s = seed ? strtoull(seed, nullptr, 0) : 20261122;
        phases_ = phases ? strtoull(phases, nullptr, 0) : kDefaultPhases;
        if (const char *t = getenv("ADSM_MODEL_THREADS")) max_threads_ = static_cast<unsigned>(atoi(t));
        if (const char *o = getenv("ADSM_MODEL_OBJECTS")) objects_wanted_ = static_cast<unsigned>(atoi(o));
        named_always_ = getenv("ADSM_MODEL_NAMED_CALLS") != nullptr;
        places_ = getenv("ADSM_MODEL_PLACES") != nullptr;
        adsmDeviceInfo info;
        ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
        block_ = info.block_size;
        printf("model test: device %s, protocol %s, block %zu, tracking %s, seed %llu, %llu phases\n", info.name,
               info.protocol, block_, info.dirty_tracking, static_cast<unsigned long long>(rng_.s),
               static_cast<unsigned long long>(phases_));
    }

    void TearDown() override {
        for (Object &o : objects_) adsmFree(o.p);
        for (void *keep : parked_) adsmFree(keep);
    }

    // A context on each device for objects to visit, kept alive (after its
    // thread has gone) by an allocation of its own.
    void park_contexts() {
        int n = 0;
        ASSERT_EQ(adsmGetDeviceCount(&n), adsmSuccess);
        for (int d = 0; d < n; ++d)
            std::thread([&, d] {
                ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << adsmGetLastErrorDetail();
                parked_.push_back(adsmAlloc(1));
                parking_.push_back(adsmGetContext());
            }).join();
    }

    // Objects move between devices, whatever state their blocks are in.
    void device_phase() {
        if (parking_.size() < 2) return;
        if (rng_.chance(50)) {
            int to = static_cast<int>(rng_.below(parking_.size()));
            ASSERT_EQ(adsmSetDevice(to), adsmSuccess) << adsmGetLastErrorDetail();
            return;
        }
        Object &o = objects_[rng_.below(objects_.size())];
        ASSERT_EQ(adsmMigrate(o.p, parking_[rng_.below(parking_.size())]), adsmSuccess) << adsmGetLastErrorDetail();
        // The CPU may touch it while it is away (no kernel uses it).
        for (int k = 0; k < 4; ++k) {
            size_t i = rng_.below(o.n);
            uint8_t v = static_cast<uint8_t>(rng_.next());
            o.p[i] = v;
            o.model[i] = v;
        }
        ASSERT_EQ(adsmMigrate(o.p, nullptr), adsmSuccess) << adsmGetLastErrorDetail();
    }

    // Sizes that matter: below a page, around pages and blocks, many blocks.
    size_t random_size() {
        switch (rng_.below(6)) {
        case 0: return 1 + rng_.below(200);
        case 1: return 1000 + rng_.below(3096);
        case 2: return 4096 * (1 + rng_.below(4));
        case 3: return block_ * (1 + rng_.below(3)) + (rng_.chance(50) ? 1 + rng_.below(4000) : 0);
        case 4: return 3 * block_ - 1;
        default: return (1 << 20) + rng_.below(3 << 20);
        }
    }

    void add_object() {
        Object o;
        o.n = random_size();
        bool zeroed = rng_.chance(25);
        if (places_) {
            // Host-resident and replicated objects among the others.
            adsmAllocAttr a{};
            a.zero = zeroed;
            unsigned pick = static_cast<unsigned>(rng_.below(5));
            a.place = pick == 0   ? ADSM_PLACE_HOST
                      : pick == 1 ? ADSM_PLACE_EVERY_DEVICE
                      : pick == 2 ? ADSM_PLACE_PREFERRED_DEVICE
                                  : ADSM_PLACE_DEVICE;
            a.device = static_cast<int>(rng_.below(parking_.empty() ? 1 : parking_.size()));
            o.p = static_cast<uint8_t *>(adsmAllocEx(o.n, &a));
            if (!o.p && adsmGetLastError() == adsmErrorNotSupported) {  // a device that cannot reach the host's
                a.place = ADSM_PLACE_DEVICE;
                o.p = static_cast<uint8_t *>(adsmAllocEx(o.n, &a));
            }
            o.replicated = a.place == ADSM_PLACE_EVERY_DEVICE;
        } else {
            o.p = static_cast<uint8_t *>(zeroed ? adsmCalloc(o.n, 1) : adsmAlloc(o.n));
        }
        ASSERT_NE(o.p, nullptr) << adsmGetLastErrorDetail();
        o.model.assign(o.n, 0);
        if (!zeroed) {
            // Uninitialised memory has no defined value: give it one.
            for (size_t i = 0; i < o.n; ++i) o.model[i] = static_cast<uint8_t>(rng_.next());
            memcpy(o.p, o.model.data(), o.n);
        }
        objects_.push_back(std::move(o));
    }

    struct Segment {
        size_t obj, begin, end;
    };

    // Where an object's memory and its model differ in [begin, end).
    struct Difference {
        size_t first = 0, last = 0, count = 0;
    };
    static Difference difference(const Object &o, size_t begin, size_t end) {
        Difference d;
        for (size_t k = begin; k < end; ++k) {
            if (o.p[k] == o.model[k]) continue;
            if (!d.count++) d.first = k;
            d.last = k;
        }
        return d;
    }

    // CPU work from several threads at once, each on its own disjoint
    // segments, which interleave finely inside blocks so the threads fault
    // on the same blocks together.
    void cpu_phase() {
        unsigned threads = 1 + static_cast<unsigned>(rng_.below(max_threads_));
        std::vector<std::vector<Segment>> work(threads);
        for (size_t i = 0; i < objects_.size(); ++i) {
            if (!rng_.chance(60)) continue;
            size_t pos = 0, n = objects_[i].n;
            while (pos < n) {
                size_t len = 1 + rng_.below(std::min<size_t>(n - pos, rng_.chance(70) ? 512 : 64 * 1024));
                work[rng_.below(threads)].push_back({i, pos, pos + len});
                pos += len;
            }
        }
        std::vector<uint64_t> seeds(threads);
        for (auto &s : seeds) s = rng_.next();
        std::atomic<int> failures{0};
        // What the first failures were, for the report.
        std::mutex why_mu;
        std::string why;
        auto failed = [&](const char *what, const Segment &sg, size_t at, int want, int got) {
            failures++;
            std::lock_guard<std::mutex> lock(why_mu);
            if (std::count(why.begin(), why.end(), '\n') >= 4) return;
            char line[256];
            snprintf(line, sizeof line, "%s: object %zu, segment [%zu, %zu), byte %zu: model %d, memory %d\n", what,
                     sg.obj, sg.begin, sg.end, at, want, got);
            why += line;
        };
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                Rng r{seeds[t]};
                for (const Segment &sg : work[t]) {
                    Object &o = objects_[sg.obj];
                    size_t len = sg.end - sg.begin;
                    switch (r.below(7)) {
                    case 0:  // read and check
                        if (memcmp(o.p + sg.begin, o.model.data() + sg.begin, len) != 0) {
                            Difference d = difference(o, sg.begin, sg.end);
                            char what[64];
                            snprintf(what, sizeof what, "read (%zu bytes differ, the last at %zu)", d.count, d.last);
                            failed(what, sg, d.first, o.model[d.first], o.p[d.first]);
                        }
                        break;
                    case 1:  // scattered writes
                        for (int k = 0; k < 8; ++k) {
                            size_t i = sg.begin + r.below(len);
                            uint8_t v = static_cast<uint8_t>(r.next());
                            o.p[i] = v;
                            o.model[i] = v;
                        }
                        break;
                    case 2: {  // a run of writes
                        uint8_t v = static_cast<uint8_t>(r.next());
                        memset(o.p + sg.begin, v, len);
                        memset(o.model.data() + sg.begin, v, len);
                        break;
                    }
                    case 3: {  // through the runtime: adsmMemset
                        uint8_t v = static_cast<uint8_t>(r.next());
                        if (adsmMemset(o.p + sg.begin, v, len) != adsmSuccess) failed("adsmMemset failed", sg, 0, 0, 0);
                        memset(o.model.data() + sg.begin, v, len);
                        break;
                    }
                    case 4: {  // through the runtime: adsmMemcpy from private memory
                        std::vector<uint8_t> buf(len);
                        for (auto &b : buf) b = static_cast<uint8_t>(r.next());
                        if (adsmMemcpy(o.p + sg.begin, buf.data(), len) != adsmSuccess) failed("adsmMemcpy failed", sg, 0, 0, 0);
                        memcpy(o.model.data() + sg.begin, buf.data(), len);
                        break;
                    }
                    case 5:  // a prefetch to the host, landing while the other threads go on
                        if (adsmPrefetch(o.p + sg.begin, len, ADSM_HOST) != adsmSuccess)
                            failed("adsmPrefetch to the host failed", sg, 0, 0, 0);
                        break;
                    default: {  // read-modify-write
                        for (size_t i = sg.begin; i < sg.end; i += 1 + r.below(97)) {
                            if (o.p[i] != o.model[i]) failed("read-modify-write", sg, i, o.model[i], o.p[i]);
                            o.p[i] = static_cast<uint8_t>(o.p[i] + 1);
                            o.model[i] = static_cast<uint8_t>(o.model[i] + 1);
                        }
                        break;
                    }
                    }
                }
            });
        for (auto &th : pool) th.join();
        ASSERT_EQ(failures.load(), 0) << "CPU saw data that differs from the model:\n" << why;
    }

    // Picks two non-overlapping ranges (src may be in the same object).
    bool pick_ranges(size_t *so, size_t *sb, size_t *dobj, size_t *db, size_t *len) {
        *so = rng_.below(objects_.size());
        *dobj = rng_.below(objects_.size());
        size_t max = std::min(objects_[*so].n, objects_[*dobj].n);
        *len = 1 + rng_.below(rng_.chance(50) ? std::min<size_t>(max, 4096) : max);
        *sb = rng_.below(objects_[*so].n - *len + 1);
        *db = rng_.below(objects_[*dobj].n - *len + 1);
        if (*so == *dobj && *sb < *db + *len && *db < *sb + *len) return false;
        return !objects_[*dobj].replicated;  // what a kernel writes there is not kept
    }

    void kernel_phase() {
        int launches = 1 + static_cast<int>(rng_.below(3));
        for (int l = 0; l < launches; ++l) {
            size_t so, sb, dob, db, len;
            if (!pick_ranges(&so, &sb, &dob, &db, &len)) continue;
            Object &s = objects_[so], &d = objects_[dob];
            // Half the calls name their two objects (the source read-only),
            // the others release the whole context; all of them name theirs
            // where device memory is too small for the whole context.
            bool named = named_always_ || rng_.chance(50);
            std::initializer_list<adsmObjectUse> uses = {{s.p, so != dob}, {d.p, 0}};
            if (rng_.chance(25) && d.n - db >= 8) {
                uint64_t h = fnv(s.model.data() + sb, len);
                if (named) checksum_.with(uses, 1, 1, s.p + sb, len, d.p + db);
                else checksum_(1, 1, s.p + sb, len, d.p + db);
                memcpy(d.model.data() + db, &h, 8);
            } else {
                uint8_t a = static_cast<uint8_t>(rng_.next() | 1), b = static_cast<uint8_t>(rng_.next());
                if (named) transform_.with(uses, adsm::blocks_for(len, 256), 256, s.p + sb, d.p + db, len, a, b);
                else transform_(adsm::blocks_for(len, 256), 256, s.p + sb, d.p + db, len, a, b);
                for (size_t i = 0; i < len; ++i) d.model[db + i] = transform(s.model[sb + i], a, b);
            }
            // A small device holds one call's objects at a time.
            if (named_always_) {
                ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
            }
        }
        ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    }

    void check_all() {
        for (size_t i = 0; i < objects_.size(); ++i) {
            const Object &o = objects_[i];
            Difference d = difference(o, 0, o.n);
            if (!d.count) continue;
            ADD_FAILURE() << "object " << i << " (" << o.n << " bytes) differs at byte " << d.first << ": model "
                          << int(o.model[d.first]) << ", memory " << int(o.p[d.first]) << "; " << d.count
                          << " bytes differ, the last at " << d.last;
            return;
        }
    }

    Rng rng_{0};
    uint64_t phases_ = 0;
    unsigned max_threads_ = 4;
    unsigned objects_wanted_ = 8;
    bool named_always_ = false;
    bool places_ = false;
    size_t block_ = 0;
    std::vector<Object> objects_;
    std::vector<adsmContext_t> parking_;
    std::vector<void *> parked_;
    adsm::kernel<transform_kernel> transform_ = adsm_test::device_kernel<transform_kernel>("model.transform");
    adsm::kernel<checksum_kernel> checksum_ = adsm_test::device_kernel<checksum_kernel>("model.checksum");
};

TEST_F(ModelTest, RandomSequencesMatchTheModel) {
    ASSERT_NO_FATAL_FAILURE(park_contexts());
    for (unsigned i = 0; i < objects_wanted_; ++i) ASSERT_NO_FATAL_FAILURE(add_object());
    for (uint64_t phase = 0; phase < phases_; ++phase) {
        SCOPED_TRACE("phase " + std::to_string(phase));
        ASSERT_NO_FATAL_FAILURE(cpu_phase());
        if (rng_.chance(80)) {
            ASSERT_NO_FATAL_FAILURE(kernel_phase());
        }
        if (rng_.chance(30)) {
            ASSERT_NO_FATAL_FAILURE(device_phase());
        }
        if (rng_.chance(10)) {
            // Replace an object, whatever state its blocks are in (dirty ones included).
            size_t k = rng_.below(objects_.size());
            ASSERT_EQ(adsmFree(objects_[k].p), adsmSuccess);
            objects_.erase(objects_.begin() + static_cast<long>(k));
            ASSERT_NO_FATAL_FAILURE(add_object());
        }
        if (rng_.chance(10)) {
            ASSERT_NO_FATAL_FAILURE(check_all());
        }
    }
    ASSERT_NO_FATAL_FAILURE(kernel_phase());
    ASSERT_NO_FATAL_FAILURE(check_all());
}

}  // namespace
