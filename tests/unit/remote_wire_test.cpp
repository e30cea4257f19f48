// What the device server accepts from a client: framing, each operation's
// body, and ranges inside the client's own committed memory.  Random and
// mutated messages never get past the checks unnoticed.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/remote/handshake.h"
#include "backend/remote/wire.h"
#include "support/status.h"

using namespace adsm::remote;

namespace {

template <class Body>
std::vector<uint8_t> message(Op op, const Body *body, uint32_t declared = sizeof(Body)) {
    RequestHeader h{kWireMagic, op, 7, declared, 0};
    std::vector<uint8_t> m(sizeof h + (body ? sizeof(Body) : 0));
    memcpy(m.data(), &h, sizeof h);
    if (body) memcpy(m.data() + sizeof h, body, sizeof(Body));
    return m;
}

std::vector<uint8_t> bye() {
    RequestHeader h{kWireMagic, Op::bye, 9, 0, 0};
    std::vector<uint8_t> m(sizeof h);
    memcpy(m.data(), &h, sizeof h);
    return m;
}

}  // namespace

TEST(RemoteWireTest, WellFormedRequestsParse) {
    Request r;
    AttachBody a{0x300000000000, 1ull << 30};
    auto m = message(Op::attach, &a);
    ASSERT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(r.header.op, Op::attach);
    EXPECT_EQ(r.header.seq, 7u);
    EXPECT_EQ(r.body.attach.window_size, 1ull << 30);
    auto b = bye();
    EXPECT_EQ(parse_request(b.data(), b.size(), &r), adsmSuccess);
    FillBody f{0x300000001000, 4096, 0xab, 0};
    m = message(Op::fill, &f);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess);
}

TEST(RemoteWireTest, MalformedRequestsAreRefused) {
    Request r;
    uint8_t tiny[3] = {};
    EXPECT_EQ(parse_request(tiny, sizeof tiny, &r), adsmErrorInvalidValue);
    AttachBody a{0x300000000000, 1ull << 30};
    auto m = message(Op::attach, &a);
    m[0] ^= 1;  // magic
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
    m = message(Op::attach, &a, sizeof a + 8);  // declares more than it carries
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
    m = message(static_cast<Op>(99), &a);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsm::last_detail()).find("unknown operation"), std::string::npos);
    AttachBody odd{0x300000000001, 1 << 20}, huge{0, kMaxWindow * 2}, wraps{~0ull - 4095, 1ull << 20};
    for (const AttachBody *bad : {&odd, &huge, &wraps}) {
        m = message(Op::attach, bad);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
    }
    FillBody f{0x300000001000, 4096, 256, 0};
    m = message(Op::fill, &f);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue) << "a fill value is a byte";
}

TEST(RemoteWireTest, SyncHeartbeatsWithinBounds) {
    Request r;
    for (uint32_t ms : {0u, kMinHeartbeatMs, 500u, kMaxHeartbeatMs}) {
        SyncBody s{3, ms, 0, 0};
        auto m = message(Op::sync, &s);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << ms << ": " << adsm::last_detail();
        EXPECT_EQ(r.body.sync.heartbeat_ms, ms);
    }
    for (uint32_t ms : {1u, kMinHeartbeatMs - 1, kMaxHeartbeatMs + 1, 0xffffffffu}) {
        SyncBody s{3, ms, 0, 0};
        auto m = message(Op::sync, &s);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue) << ms;
    }
    SyncBody spans{3, 500, kSendSpans, 0}, unknown{3, 500, 2, 0};
    auto m = message(Op::sync, &spans);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    m = message(Op::sync, &unknown);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue) << "unknown sync flags";
}

TEST(RemoteWireTest, ModulePartsFunctionsAndDeclarationsWithinBounds) {
    Request r;
    // A part carries exactly the bytes it declares, inside its image.
    auto part = [](uint32_t module, uint32_t length, uint64_t total, uint64_t offset, size_t carried) {
        std::vector<uint8_t> m(sizeof(RequestHeader) + kModuleFixedBytes + carried);
        RequestHeader h{kWireMagic, Op::module, 5, static_cast<uint32_t>(kModuleFixedBytes + carried), 0};
        ModuleBody b{};
        b.module = module, b.length = length, b.total = total, b.offset = offset;
        memcpy(m.data(), &h, sizeof h);
        memcpy(m.data() + sizeof h, &b, kModuleFixedBytes);
        return m;
    };
    auto m = part(1, 100, 300, 200, 100);
    ASSERT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(r.body.module.offset, 200u);
    m = part(kMaxModules, kModulePartBytes, kMaxModuleBytes, 0, kModulePartBytes);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    for (auto bad : {part(0, 100, 300, 0, 100), part(kMaxModules + 1, 100, 300, 0, 100), part(1, 100, 300, 0, 99),
                     part(1, 0, 300, 0, 0), part(1, 100, 300, 250, 100), part(1, 100, kMaxModuleBytes + 1, 0, 100),
                     part(1, kModulePartBytes + 1, 1 << 20, 0, kModulePartBytes + 1)}) {
        EXPECT_EQ(parse_request(bad.data(), bad.size(), &r), adsmErrorInvalidValue);
    }
    FunctionBody f{3, 0, "scale"};
    m = message(Op::function, &f);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    FunctionBody unnamed{3, 0, ""}, nowhere{0, 0, "scale"}, unterminated{3, 0, {}};
    memset(unterminated.kernel, 'k', sizeof unterminated.kernel);
    for (const FunctionBody *bad : {&unnamed, &nowhere, &unterminated}) {
        m = message(Op::function, bad);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
    }
    // A declaration: module 0 (a kernel the server has by name) or one
    // sent, a name, at most kMaxParams sizes of 1 to kMaxLaunchArgs bytes.
    DeclareBody by_name{0, 3, "remote.add", {8, 8, 4}}, own{kMaxModules, 1, "scale", {kMaxLaunchArgs}};
    for (const DeclareBody *fine : {&by_name, &own}) {
        m = message(Op::declare, fine);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess) << adsm::last_detail();
    }
    DeclareBody many{1, kMaxParams + 1, "k", {}}, empty_param{1, 2, "k", {8, 0}}, huge{1, 1, "k", {kMaxLaunchArgs + 1}},
        no_module{kMaxModules + 1, 1, "k", {8}}, no_name{1, 1, "", {8}};
    for (const DeclareBody *bad : {&many, &empty_param, &huge, &no_module, &no_name}) {
        m = message(Op::declare, bad);
        EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue) << bad->kernel;
    }
    RangeBody range{0x300000000000, 4096};
    m = message(Op::push, &range);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmSuccess);
    m = message(Op::pull, &range, sizeof range - 8);
    EXPECT_EQ(parse_request(m.data(), m.size(), &r), adsmErrorInvalidValue);
}

TEST(RemoteWireTest, AClientReachesOnlyWhatItCommitted) {
    const uint64_t base = 0x300000000000, page = 4096;
    ClientMemory m(16 * page);
    EXPECT_EQ(m.commit(base, page), adsmErrorInvalidValue) << "no window yet";
    ASSERT_EQ(m.attach(base, 1 << 20), adsmSuccess);
    EXPECT_EQ(m.attach(base, 1 << 20), adsmErrorInvalidValue) << "once";
    EXPECT_EQ(m.commit(base, 4 * page), adsmSuccess);
    EXPECT_EQ(m.commit(base + 8 * page, 4 * page), adsmSuccess);
    EXPECT_EQ(m.used(), 8 * page);
    EXPECT_EQ(m.commit(base + 2 * page, 4 * page), adsmErrorInvalidValue) << "overlaps";
    EXPECT_EQ(m.commit(base + 7 * page, 2 * page), adsmErrorInvalidValue) << "overlaps the next";
    EXPECT_EQ(m.commit(base - page, page), adsmErrorInvalidValue) << "below the window";
    EXPECT_EQ(m.commit(base + (1 << 20), page), adsmErrorInvalidValue) << "past the window";
    EXPECT_EQ(m.commit(base + 100, page), adsmErrorInvalidValue) << "not whole pages";
    EXPECT_EQ(m.commit(base + 16 * page, 9 * page), adsmErrorMemoryAllocation) << "past the capacity";
    EXPECT_EQ(m.check(base, 4 * page), adsmSuccess);
    EXPECT_EQ(m.check(base + 3 * page, 2 * page), adsmErrorInvalidValue) << "runs into uncommitted memory";
    EXPECT_EQ(m.check(base + 8 * page + 10, 100), adsmSuccess);
    EXPECT_EQ(m.check(~0ull - 10, 100), adsmErrorInvalidValue);
    EXPECT_EQ(m.decommit(base, 2 * page), adsmErrorInvalidValue) << "part of a committed range";
    EXPECT_EQ(m.decommit(base, 4 * page), adsmSuccess);
    EXPECT_EQ(m.decommit(base, 4 * page), adsmErrorInvalidValue) << "twice";
    EXPECT_EQ(m.used(), 4 * page);
    EXPECT_EQ(m.check(base, 1), adsmErrorInvalidValue);
}

// Random bytes and single-byte mutations of valid requests: a message the
// parser accepts is always a request with a known operation whose declared
// body is what it carries, and every range check holds afterwards.
TEST(RemoteWireTest, RandomAndMutatedMessagesNeverSlipThrough) {
    std::mt19937_64 rng(20261126);
    AttachBody a{0x300000000000, 1ull << 30};
    RangeBody c{0x300000000000, 4096};
    FillBody f{0x300000000000, 4096, 1, 0};
    LaunchBody l{};
    snprintf(l.kernel, sizeof l.kernel, "remote.add");
    l.grid[0] = l.grid[1] = l.grid[2] = l.block[0] = l.block[1] = l.block[2] = 1;
    l.args_size = 36;
    auto launch = message(Op::launch, &l, static_cast<uint32_t>(kLaunchFixedBytes + 36));
    launch.resize(sizeof(RequestHeader) + kLaunchFixedBytes + 36);
    Request check;
    ASSERT_EQ(parse_request(launch.data(), launch.size(), &check), adsmSuccess) << adsm::last_detail();
    std::vector<std::vector<uint8_t>> seeds = {message(Op::attach, &a), message(Op::commit, &c),
                                               message(Op::decommit, &c), message(Op::fill, &f), bye(), launch};
    size_t accepted = 0;
    for (int i = 0; i < 200000; ++i) {
        std::vector<uint8_t> m;
        if (i % 3 == 0) {
            m.resize(rng() % 80);
            for (auto &b : m) b = static_cast<uint8_t>(rng());
        } else {
            m = seeds[rng() % seeds.size()];
            for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n && !m.empty(); ++k)
                m[rng() % m.size()] = static_cast<uint8_t>(rng());
            if (rng() % 8 == 0) m.resize(rng() % (m.size() + 16));
        }
        Request r;
        if (parse_request(m.data(), m.size(), &r) != adsmSuccess) continue;
        ++accepted;
        ASSERT_EQ(r.header.magic, kWireMagic);
        ASSERT_EQ(m.size(), sizeof(RequestHeader) + r.header.length);
        if (r.header.op == Op::launch) {
            ASSERT_EQ(r.body.launch.args_size, r.header.length - kLaunchFixedBytes);
            ASSERT_LE(r.body.launch.args_size, kMaxLaunchArgs);
            ASSERT_NE(memchr(r.body.launch.kernel, 0, kKernelNameBytes), nullptr);
        }
        if (r.header.op == Op::attach) {
            ASSERT_EQ(r.body.attach.window_size % 4096, 0u);
            ASSERT_LE(r.body.attach.window_size, kMaxWindow);
        }
        ClientMemory mem(1 << 20);
        ASSERT_EQ(mem.attach(0x300000000000, 1 << 20), adsmSuccess);
        if (r.header.op == Op::commit && mem.commit(r.body.range.addr, r.body.range.len) == adsmSuccess) {
            ASSERT_EQ(mem.check(r.body.range.addr, r.body.range.len), adsmSuccess);
            ASSERT_GE(r.body.range.addr, 0x300000000000u);
            ASSERT_LE(r.body.range.addr + r.body.range.len, 0x300000000000u + (1 << 20));
        }
    }
    EXPECT_GT(accepted, 100u) << "mutations of valid requests are often still valid";
}
