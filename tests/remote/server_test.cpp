// adsm-device-server as clients meet it on loopback: its command line, the
// key, each client's own memory reached by RMA under the keys its commits
// return, hostile requests, the client limit, and clients that vanish.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/remote/fabric.h"
#include "backend/remote/handshake.h"
#include "backend/remote/wire.h"
#include "support/status.h"
#include "remote/server_process.h"

using namespace adsm::remote;
using remote_test::Server;
using remote_test::write_key;

namespace {

constexpr uint64_t kBase = 0x300000000000ull;

class Client {
public:
    Client(const Server &s, const std::string &key) {
        if (connect("127.0.0.1", s.port(), "tcp", 5000, &ep_) != adsmSuccess) return;
        handshake_ = client_handshake(*ep_, key, 5000);
    }
    bool ok() const { return ep_ && handshake_ == adsmSuccess; }
    adsm::Status handshake() const { return handshake_; }
    Endpoint &ep() { return *ep_; }

    // Sends a request, returns the reply (status adsmErrorDeviceLost when
    // none came, the server having closed the connection, or when the reply
    // answers another request).
    template <class Body>
    Reply request(Op op, const Body *body, size_t body_size = sizeof(Body), int wait_ms = 3000) {
        std::vector<uint8_t> m(sizeof(RequestHeader) + body_size);
        RequestHeader h{kWireMagic, op, ++seq_, static_cast<uint32_t>(body_size), 0};
        memcpy(m.data(), &h, sizeof h);
        if (body_size) memcpy(m.data() + sizeof h, body, body_size);
        Reply r{};
        r.status = adsmErrorDeviceLost;
        if (ep_->send(m.data(), m.size()) != adsmSuccess) return r;
        size_t got = 0;
        if (ep_->recv(&r, sizeof r, &got, wait_ms) != adsmSuccess || got != sizeof r) r.status = adsmErrorDeviceLost;
        // An answer to another request, or the turning-away a full server
        // sends unasked, is no answer to this one.
        else if (r.seq != h.seq && r.status == adsmSuccess) r.status = adsmErrorDeviceLost;
        return r;
    }
    Reply attach(uint64_t size = 1ull << 30) {
        AttachBody a{kBase, size};
        return request(Op::attach, &a);
    }
    Reply commit(uint64_t addr, uint64_t len) {
        RangeBody b{addr, len};
        return request(Op::commit, &b);
    }
    // remote.add(v, n, k) over n words at v.
    Reply add(uint64_t v, size_t n, uint32_t k, const char *kernel = "remote.add", uint32_t module = 0) {
        LaunchBody l{};
        snprintf(l.kernel, sizeof l.kernel, "%s", kernel);
        l.module = module;
        l.grid[0] = static_cast<uint32_t>((n + 255) / 256), l.grid[1] = l.grid[2] = 1;
        l.block[0] = 256, l.block[1] = l.block[2] = 1;
        memcpy(l.args, &v, sizeof v);
        memcpy(l.args + 16, &n, sizeof n);
        memcpy(l.args + 32, &k, sizeof k);
        l.args_size = 36;
        return request(Op::launch, &l, kLaunchFixedBytes + l.args_size);
    }
    // A module of the client's own, in one part.
    Reply module(uint32_t number, const char *image) {
        std::unique_ptr<ModuleBody> part(new ModuleBody{});
        part->module = number, part->length = static_cast<uint32_t>(strlen(image) + 1), part->total = part->length;
        memcpy(part->data, image, part->length);
        return request(Op::module, part.get(), kModuleFixedBytes + part->length);
    }
    Reply declare(uint32_t module, const char *kernel, std::vector<uint32_t> sizes) {
        DeclareBody d{};
        d.module = module, d.params = static_cast<uint32_t>(sizes.size());
        snprintf(d.kernel, sizeof d.kernel, "%s", kernel);
        std::copy(sizes.begin(), sizes.end(), d.sizes);
        return request(Op::declare, &d);
    }
    Reply sync(uint32_t stream = 0, int wait_ms = 3000) {
        SyncBody b{stream, 0, 0, 0};
        return request(Op::sync, &b, sizeof b, wait_ms);
    }

private:
    std::unique_ptr<Endpoint> ep_;
    adsm::Status handshake_ = adsmErrorNoDevice;
    uint64_t seq_ = 0;
};

// A client that behaves: attached, with 1 MiB committed at kBase (*range).
void serve_well_behaved(Client &good, Reply *range) {
    ASSERT_TRUE(good.ok()) << adsm::last_detail();
    ASSERT_EQ(good.attach().status, adsmSuccess);
    *range = good.commit(kBase, 1 << 20);
    ASSERT_EQ(range->status, adsmSuccess) << range->message;
}

// Its memory takes `value` and gives it back.
void expect_served(Client &good, const Reply &range, uint8_t value) {
    std::vector<uint8_t> v(4096, value), back(4096);
    ASSERT_EQ(good.ep().write(v.data(), v.size(), 0, range.rma_key, 5000), adsmSuccess) << adsm::last_detail();
    ASSERT_EQ(good.ep().read(back.data(), back.size(), 0, range.rma_key, 5000), adsmSuccess) << adsm::last_detail();
    ASSERT_EQ(back, v);
}

// A command line's words (REMOTE_TEST_SERVER_ARGS).
std::vector<std::string> words(const char *line) {
    std::vector<std::string> out;
    for (const char *p = line; *p;) {
        size_t n = strcspn(p, " ");
        if (n) out.emplace_back(p, n);
        p += n + (p[n] == ' ');
    }
    return out;
}

struct Fixture : ::testing::Test {
    std::string key_text = "the shared key of this test, 40 bytes...";
    std::string key = write_key(key_text + "\n", 0600);
    ~Fixture() override { unlink(key.c_str()); }
    void client_gone_while_its_kernel_runs(const std::vector<std::string> &server_args);
    std::vector<std::string> args(std::vector<std::string> more = {}) {
        std::vector<std::string> a = {"--key", key, "--address", "127.0.0.1", "--port", "0", "--memory", "64M",
                                      "--kernels", ADSM_REMOTE_TEST_KERNELS};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
};

}  // namespace

TEST_F(Fixture, CommandLineAndKeyFileAreChecked) {
    {
        Server s({"--help"});
        EXPECT_EQ(s.exit_status(), 0);
    }
    {
        Server s({"--key", key, "--frobnicate", "1"});
        EXPECT_EQ(s.exit_status(), 2);
        EXPECT_NE(s.log().find("unknown option --frobnicate"), std::string::npos);
    }
    {
        Server s({"--port", "0"});
        EXPECT_EQ(s.exit_status(), 2);
        EXPECT_NE(s.log().find("--key FILE is required"), std::string::npos);
    }
    std::string open_key = write_key(key_text, 0644);
    {
        Server s({"--key", open_key, "--port", "0"});
        EXPECT_EQ(s.exit_status(), 2) << "a key others can read: refuse to start";
        EXPECT_NE(s.log().find("chmod 600"), std::string::npos);
    }
    unlink(open_key.c_str());
    {
        Server s({"--key", key, "--device", "fpga"});
        EXPECT_EQ(s.exit_status(), 2);
        EXPECT_NE(s.log().find("expected sim, cpu, cuda or levelzero"), std::string::npos) << s.log();
    }
    {
        Server s({"--key", key, "--spin-us", "-1"});
        EXPECT_EQ(s.exit_status(), 2);
        EXPECT_NE(s.log().find("--spin-us -1: microseconds, from 0 to 100000, or auto"), std::string::npos) << s.log();
    }
    {
        Server s({"--key", key, "--modules", "kernels.cubin"});
        EXPECT_EQ(s.exit_status(), 2) << "GPU code for a device that runs none";
        EXPECT_NE(s.log().find("only cuda and levelzero run GPU code"), std::string::npos) << s.log();
    }
    {
        Server s({"--key", key, "--device", "cuda", "--modules", "/nonexistent/kernels.cubin"});
        EXPECT_EQ(s.exit_status(), 2) << "a module that cannot be read stops the server at its start";
        EXPECT_NE(s.log().find("/nonexistent/kernels.cubin"), std::string::npos) << s.log();
    }
}

TEST_F(Fixture, AClientWithTheKeyGetsMemoryOfItsOwnByRma) {
    Server s(args());
    ASSERT_NE(s.first_line().find("listening on 127.0.0.1:"), std::string::npos) << s.first_line() << s.log();
    Client c(s, key_text);
    ASSERT_TRUE(c.ok()) << adsm::last_detail();
    Reply a = c.attach();
    ASSERT_EQ(a.status, adsmSuccess) << a.message;
    EXPECT_EQ(a.capacity, 64u << 20);
    Reply m = c.commit(kBase + (1 << 20), 8 << 20);
    ASSERT_EQ(m.status, adsmSuccess) << m.message;
    EXPECT_NE(m.rma_key, 0u);
    std::vector<uint8_t> data(8 << 20), back(8 << 20);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i ^ (i >> 9));
    ASSERT_EQ(c.ep().write(data.data(), data.size(), 0, m.rma_key, 5000), adsmSuccess) << adsm::last_detail();
    ASSERT_EQ(c.ep().read(back.data(), back.size(), 0, m.rma_key, 5000), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(back, data);
    // Filled on the server, read back by RMA.
    FillBody f{kBase + (1 << 20) + 4096, 8192, 0x7e, 0};
    ASSERT_EQ(c.request(Op::fill, &f).status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), 16384, 0, m.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back[4095], data[4095]);
    EXPECT_EQ(back[4096], 0x7e);
    EXPECT_EQ(back[4096 + 8191], 0x7e);
    EXPECT_EQ(back[4096 + 8192], data[4096 + 8192]);
    // Capacity: a commit past it is refused, and the session goes on.
    Reply big = c.commit(kBase + (64 << 20), 60 << 20);
    EXPECT_EQ(big.status, adsmErrorMemoryAllocation);
    EXPECT_NE(std::string(big.message).find("exhausted"), std::string::npos) << big.message;
    // Decommitted: its key reaches nothing any more.
    RangeBody d{kBase + (1 << 20), 8 << 20};
    ASSERT_EQ(c.request(Op::decommit, &d).status, adsmSuccess);
    EXPECT_NE(c.ep().read(back.data(), 4096, 0, m.rma_key, 3000), adsmSuccess);
}

// A range reads as zeros once committed, whatever it held before it was
// given back (the attach's kZeroedCommits): a client's zeroed allocation
// takes no fill of its own.  (Small ranges keep their pages at a decommit.)
TEST_F(Fixture, ACommittedRangeReadsAsZerosThoughItHeldBytesBefore) {
    Server s(args());
    Client c(s, key_text);
    ASSERT_TRUE(c.ok()) << adsm::last_detail();
    Reply a = c.attach();
    ASSERT_EQ(a.status, adsmSuccess) << a.message;
    EXPECT_EQ(a.flags & kZeroedCommits, kZeroedCommits);
    for (size_t len : {size_t(8192), size_t(1) << 20}) {
        Reply m = c.commit(kBase, len);
        ASSERT_EQ(m.status, adsmSuccess) << m.message;
        std::vector<uint8_t> dirt(len, 0xab), back(len, 1);
        ASSERT_EQ(c.ep().write(dirt.data(), len, 0, m.rma_key, 5000), adsmSuccess) << adsm::last_detail();
        RangeBody d{kBase, len};
        ASSERT_EQ(c.request(Op::decommit, &d).status, adsmSuccess);
        m = c.commit(kBase, len);
        ASSERT_EQ(m.status, adsmSuccess) << m.message;
        ASSERT_EQ(c.ep().read(back.data(), len, 0, m.rma_key, 5000), adsmSuccess) << adsm::last_detail();
        EXPECT_EQ(back, std::vector<uint8_t>(len, 0)) << len << " bytes committed again";
        ASSERT_EQ(c.request(Op::decommit, &d).status, adsmSuccess);
    }
}

TEST_F(Fixture, TwoClientsAtTheSameAddressesDoNotSeeEachOther) {
    Server s(args());
    Client a(s, key_text), b(s, key_text);
    ASSERT_TRUE(a.ok() && b.ok()) << adsm::last_detail();
    ASSERT_EQ(a.attach().status, adsmSuccess);
    ASSERT_EQ(b.attach().status, adsmSuccess);
    Reply ka = a.commit(kBase, 1 << 20), kb = b.commit(kBase, 1 << 20);
    ASSERT_EQ(ka.status, adsmSuccess);
    ASSERT_EQ(kb.status, adsmSuccess);
    std::vector<uint8_t> mine(1 << 20, 0xa1), theirs(1 << 20, 0xff);
    ASSERT_EQ(a.ep().write(mine.data(), mine.size(), 0, ka.rma_key, 5000), adsmSuccess);
    ASSERT_EQ(b.ep().read(theirs.data(), theirs.size(), 0, kb.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(theirs, std::vector<uint8_t>(1 << 20, 0)) << "b's memory at the same address is b's own";
    // a's key is nothing on b's connection (each has its own domain).
    EXPECT_NE(b.ep().read(theirs.data(), 4096, 0, ka.rma_key, 3000), adsmSuccess);
}

TEST_F(Fixture, AWrongKeyIsRefusedAndOthersAreServedOn) {
    Server s(args());
    Client bad(s, "not the key, though long enough");
    EXPECT_EQ(bad.handshake(), adsmErrorNoDevice);
    Client good(s, key_text);
    ASSERT_TRUE(good.ok()) << adsm::last_detail();
    EXPECT_EQ(good.attach().status, adsmSuccess);
    EXPECT_TRUE(s.logs("does not hold the key")) << s.log();
}

TEST_F(Fixture, HostileRequestsCloseThatClientAlone) {
    Server s(args());
    Client good(s, key_text);
    Reply gk;
    ASSERT_NO_FATAL_FAILURE(serve_well_behaved(good, &gk));
    // Each hostile client in turn: garbage, a range outside its memory,
    // a fill of memory it never committed, a request before attaching.
    for (int kind = 0; kind < 4; ++kind) {
        Client evil(s, key_text);
        ASSERT_TRUE(evil.ok());
        if (kind != 3) {
            ASSERT_EQ(evil.attach().status, adsmSuccess);
        }
        Reply r;
        if (kind == 0) {
            uint8_t junk[40];
            memset(junk, 0x41, sizeof junk);
            r = evil.request<uint8_t>(Op::bye, junk, sizeof junk);
        } else if (kind == 1) {
            r = evil.commit(kBase - 4096, 8192);
        } else if (kind == 2) {
            FillBody f{kBase, 4096, 1, 0};
            r = evil.request(Op::fill, &f);
        } else {
            r = evil.commit(kBase, 4096);
        }
        EXPECT_NE(r.status, adsmSuccess) << kind;
        Reply after = evil.commit(kBase + (2 << 20), 4096);
        EXPECT_EQ(after.status, adsmErrorDeviceLost) << "the connection is closed after " << kind;
        // The good client is still served, its memory intact.
        ASSERT_NO_FATAL_FAILURE(expect_served(good, gk, static_cast<uint8_t>(kind + 1))) << kind;
    }
    EXPECT_TRUE(s.logs("closing")) << s.log();
}

TEST_F(Fixture, TheClientLimitTurnsOthersAwayAndFreedPlacesAreReused) {
    Server s(args({"--max-clients", "1"}));
    auto first = std::make_unique<Client>(s, key_text);
    ASSERT_TRUE(first->ok());
    ASSERT_EQ(first->attach().status, adsmSuccess);
    {
        Client second(s, key_text);
        ASSERT_TRUE(second.ok());
        Reply r{};
        size_t got = 0;
        ASSERT_EQ(second.ep().recv(&r, sizeof r, &got, 3000), adsmSuccess);
        EXPECT_EQ(r.status, adsmErrorNoDevice);
        EXPECT_NE(std::string(r.message).find("--max-clients"), std::string::npos) << r.message;
    }
    first.reset();  // vanishes without a bye: its place comes free
    bool served = false;
    for (int i = 0; i < 50 && !served; ++i) {
        Client again(s, key_text);
        served = again.ok() && again.attach().status == adsmSuccess;
        if (!served) usleep(100 * 1000);
    }
    EXPECT_TRUE(served) << s.log();
}

// Sessions that ran kernels on committed memory leave nothing open on the
// server when they end: no device memory, no channel, no descriptor.
TEST_F(Fixture, EndedSessionsLeaveNothingOpenOnTheServer) {
    Server s(args());
    const std::string fd_dir = "/proc/" + std::to_string(s.pid()) + "/fd";
    auto open_fds = [&] {
        int n = 0;
        if (DIR *d = opendir(fd_dir.c_str())) {
            while (readdir(d)) ++n;
            closedir(d);
        }
        return n;
    };
    auto session = [&] {
        Client c(s, key_text);
        ASSERT_TRUE(c.ok());
        ASSERT_EQ(c.attach().status, adsmSuccess);
        Reply m = c.commit(kBase, 8 << 20);
        ASSERT_EQ(m.status, adsmSuccess) << m.message;
        std::vector<uint32_t> ones(4096, 1);
        ASSERT_EQ(c.ep().write(ones.data(), ones.size() * 4, 0, m.rma_key, 5000), adsmSuccess);
        ASSERT_EQ(c.add(kBase, ones.size(), 1).status, adsmSuccess);
        ASSERT_EQ(c.sync().status, adsmSuccess);
    };
    // A session ends on the server shortly after the client leaves.
    auto settled = [&](int at_most) {
        for (int i = 0; i < 100 && open_fds() > at_most; ++i) usleep(50 * 1000);
        return open_fds();
    };
    // What the server opens once, at its first session, is open by then.
    session();
    int baseline = open_fds();
    for (int i = 0; i < 10; ++i) {
        usleep(100 * 1000);
        baseline = std::min(baseline, open_fds());
    }
    for (int i = 0; i < 5; ++i) session();
    EXPECT_LE(settled(baseline), baseline) << "descriptors left open by five ended sessions\n" << s.log();
}

// Connections that never prove the key take no client's place.
TEST_F(Fixture, StrangersInTheHandshakeTakeNoClientsPlace) {
    Server s(args({"--max-clients", "1"}));
    std::vector<std::unique_ptr<Endpoint>> strangers(3);
    for (auto &e : strangers) ASSERT_EQ(connect("127.0.0.1", s.port(), "tcp", 5000, &e), adsmSuccess);
    usleep(200 * 1000);  // (accepted by now, and silent)
    Client c(s, key_text);
    ASSERT_TRUE(c.ok()) << s.log();
    Reply a = c.attach();
    EXPECT_EQ(a.status, adsmSuccess) << a.message << "\n" << s.log();
}

// Each client's device process holds its own client's device memory and
// no other's.
TEST_F(Fixture, AClientsDeviceProcessHoldsNoOtherClientsMemory) {
    const std::string mark = "ADSM_TEST_SERVER_MARK=" + std::to_string(getpid()) + "-apart";
    Server s(args(), {mark});
    Client a(s, key_text), b(s, key_text);
    ASSERT_TRUE(a.ok() && b.ok());
    for (Client *c : {&a, &b}) {
        ASSERT_EQ(c->attach().status, adsmSuccess);
        ASSERT_EQ(c->commit(kBase, 1 << 20).status, adsmSuccess);
        ASSERT_EQ(c->add(kBase, 1024, 1).status, adsmSuccess);  // starts its device process
        ASSERT_EQ(c->sync().status, adsmSuccess);
    }
    // The server's device processes (its environment, handed down, marks
    // them) and the device memories each has open.
    std::vector<int> memories;
    if (DIR *proc = opendir("/proc")) {
        while (dirent *e = readdir(proc)) {
            const std::string dir = std::string("/proc/") + e->d_name;
            std::string env, cmd;
            for (auto [file, into] : {std::pair{"/environ", &env}, std::pair{"/cmdline", &cmd}})
                if (FILE *f = fopen((dir + file).c_str(), "r")) {
                    char buf[4096];
                    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) into->append(buf, n);
                    fclose(f);
                }
            if (cmd.rfind("adsm-sim-device", 0) != 0 || env.find(mark) == std::string::npos) continue;
            int held = 0;
            if (DIR *fds = opendir((dir + "/fd").c_str())) {
                while (dirent *f = readdir(fds)) {
                    char target[256] = {};
                    if (readlink((dir + "/fd/" + f->d_name).c_str(), target, sizeof target - 1) > 0 &&
                        strstr(target, "adsm-sim-device-memory"))
                        ++held;
                }
                closedir(fds);
            }
            memories.push_back(held);
        }
        closedir(proc);
    }
    EXPECT_EQ(memories, std::vector<int>({1, 1})) << "device memories open in each of the server's device processes";
}

// A client that leaves while its sync waits for a long kernel ends that
// kernel: its session is over at once, and the server stops when told.
TEST_F(Fixture, AClientGoneWhileItsKernelRunsEndsTheKernel) {
    for (const char *device : {"sim", "cpu"}) {
        SCOPED_TRACE(device);
        client_gone_while_its_kernel_runs(args({"--device", device}));
    }
}

void Fixture::client_gone_while_its_kernel_runs(const std::vector<std::string> &server_args) {
    Server s(server_args);
    {
        Client c(s, key_text);
        ASSERT_TRUE(c.ok());
        ASSERT_EQ(c.attach().status, adsmSuccess);
        ASSERT_EQ(c.commit(kBase, 1 << 20).status, adsmSuccess);
        LaunchBody nap{};
        snprintf(nap.kernel, sizeof nap.kernel, "remote.nap");
        nap.grid[0] = nap.grid[1] = nap.grid[2] = 1;
        nap.block[0] = nap.block[1] = nap.block[2] = 1;
        const uint32_t ms = 600000;  // ten minutes
        const uint64_t done = kBase;
        memcpy(nap.args, &ms, sizeof ms);
        memcpy(nap.args + 16, &done, sizeof done);
        nap.args_size = 24;
        ASSERT_EQ(c.request(Op::launch, &nap, kLaunchFixedBytes + nap.args_size).status, adsmSuccess);
        // (The kernel naps ten minutes: half a second shows the sync unanswered.)
        EXPECT_EQ(c.sync(0, 500).status, adsmErrorDeviceLost) << "no answer within half a second";
    }  // gone, its sync still waiting on the server
    bool ended = false;
    for (int i = 0; i < 100 && !ended; ++i) {
        ended = s.log().find("disconnected") != std::string::npos || s.log().find("ending") != std::string::npos;
        if (!ended) usleep(100 * 1000);
    }
    EXPECT_TRUE(ended) << s.log();
    kill(s.pid(), SIGTERM);
    int status = -1;
    for (int i = 0; i < 100 && (status = s.exit_status_if_running()) < 0; ++i) usleep(100 * 1000);
    EXPECT_EQ(status, 0) << "the server stopped within 10 s of SIGTERM\n" << s.log();
}

TEST_F(Fixture, KernelsRunOnTheClientsMemoryAtItsAddresses) {
    Server s(args());
    Client c(s, key_text);
    ASSERT_TRUE(c.ok()) << adsm::last_detail();
    ASSERT_EQ(c.attach().status, adsmSuccess);
    const size_t n = 100000;
    const uint64_t v = kBase + (4 << 20);
    Reply m = c.commit(v, 1 << 20);
    ASSERT_EQ(m.status, adsmSuccess) << m.message;
    std::vector<uint32_t> data(n), back(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint32_t>(i);
    ASSERT_EQ(c.ep().write(data.data(), n * 4, 0, m.rma_key, 5000), adsmSuccess);
    Reply l = c.add(v, n, 5);
    ASSERT_EQ(l.status, adsmSuccess) << l.message;
    Reply y = c.sync();
    ASSERT_EQ(y.status, adsmSuccess) << y.message;
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, m.rma_key, 5000), adsmSuccess);
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(back[i], i + 5) << i;
    // What the server cannot run is an answer, and the session goes on.
    Reply unknown = c.add(v, n, 1, "remote.nonexistent");
    EXPECT_EQ(unknown.status, adsmErrorKernelNotFound);
    EXPECT_NE(std::string(unknown.message).find("remote.nonexistent"), std::string::npos) << unknown.message;
    LaunchBody wrong{};
    snprintf(wrong.kernel, sizeof wrong.kernel, "remote.add");
    wrong.grid[0] = wrong.grid[1] = wrong.grid[2] = 1;
    wrong.block[0] = wrong.block[1] = wrong.block[2] = 1;
    wrong.args_size = 8;
    EXPECT_EQ(c.request(Op::launch, &wrong, kLaunchFixedBytes + 8).status, adsmErrorInvalidLaunch);
    // A kernel that faults is reported at the sync; the next one runs.
    LaunchBody crash{};
    snprintf(crash.kernel, sizeof crash.kernel, "remote.crash");
    crash.grid[0] = crash.grid[1] = crash.grid[2] = 1;
    crash.block[0] = crash.block[1] = crash.block[2] = 1;
    ASSERT_EQ(c.request(Op::launch, &crash, kLaunchFixedBytes).status, adsmSuccess);
    Reply fault = c.sync();
    EXPECT_EQ(fault.status, adsmErrorLaunchFailure);
    EXPECT_NE(std::string(fault.message).find("remote.crash"), std::string::npos) << fault.message;
    ASSERT_EQ(c.add(v, n, 1).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, m.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back[n - 1], n - 1 + 6);
}

// Kernels reach the client's committed memory and nothing else: one that
// strays faults, as on a GPU, instead of making pages past --memory; and
// the session goes on.
void expect_kernels_reach_committed_memory_only(Server &s, const std::string &key_text) {
    Client c(s, key_text);
    ASSERT_TRUE(c.ok()) << adsm::last_detail();
    ASSERT_EQ(c.attach().status, adsmSuccess);
    const uint64_t v = kBase + (4 << 20);
    const size_t n = 1024;
    Reply m = c.commit(v, 1 << 20);
    ASSERT_EQ(m.status, adsmSuccess) << m.message;
    ASSERT_EQ(c.add(v, n, 1).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    // Just past its end, where nothing was committed.
    ASSERT_EQ(c.add(v + (1 << 20), n, 1).status, adsmSuccess);
    Reply past = c.sync();
    EXPECT_EQ(past.status, adsmErrorLaunchFailure) << past.message;
    EXPECT_NE(std::string(past.message).find("remote.add"), std::string::npos) << past.message;
    // Given back, it is gone for kernels too.
    RangeBody r{v, 1 << 20};
    ASSERT_EQ(c.request(Op::decommit, &r).status, adsmSuccess);
    ASSERT_EQ(c.add(v, n, 1).status, adsmSuccess);
    EXPECT_EQ(c.sync().status, adsmErrorLaunchFailure);
    // Committed again, it is there (zeroed).
    Reply again = c.commit(v, 1 << 20);
    ASSERT_EQ(again.status, adsmSuccess) << again.message;
    ASSERT_EQ(c.add(v, n, 7).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    std::vector<uint32_t> back(n);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, again.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, std::vector<uint32_t>(n, 7));
}

TEST_F(Fixture, KernelsReachOnlyTheClientsCommittedMemory) {
    Server s(args());
    expect_kernels_reach_committed_memory_only(s, key_text);
}

TEST_F(Fixture, OnCpuKernelsReachOnlyTheClientsCommittedMemory) {
    Server s(args({"--device", "cpu"}));
    expect_kernels_reach_committed_memory_only(s, key_text);
}

// Two clients' kernels at the same addresses, on the server's `device`.
void expect_kernels_on_own_memory(Server &s, const std::string &key_text) {
    Client a(s, key_text), b(s, key_text);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a.attach().status, adsmSuccess);
    ASSERT_EQ(b.attach().status, adsmSuccess);
    const size_t n = 4096;
    Reply ka = a.commit(kBase, 1 << 20), kb = b.commit(kBase, 1 << 20);
    ASSERT_EQ(ka.status, adsmSuccess);
    ASSERT_EQ(kb.status, adsmSuccess);
    std::vector<uint32_t> ones(n, 1), back(n);
    ASSERT_EQ(a.ep().write(ones.data(), n * 4, 0, ka.rma_key, 5000), adsmSuccess);
    ASSERT_EQ(b.ep().write(ones.data(), n * 4, 0, kb.rma_key, 5000), adsmSuccess);
    ASSERT_EQ(a.add(kBase, n, 10).status, adsmSuccess);
    ASSERT_EQ(b.add(kBase, n, 20).status, adsmSuccess);
    ASSERT_EQ(a.sync().status, adsmSuccess);
    ASSERT_EQ(b.sync().status, adsmSuccess);
    ASSERT_EQ(a.ep().read(back.data(), n * 4, 0, ka.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, std::vector<uint32_t>(n, 11));
    ASSERT_EQ(b.ep().read(back.data(), n * 4, 0, kb.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, std::vector<uint32_t>(n, 21));
    // Nothing is staged where the memory is reached directly: a push is a
    // client that does not follow the protocol.
    RangeBody r{kBase, 4096};
    EXPECT_NE(a.request(Op::push, &r).status, adsmSuccess);
    EXPECT_EQ(a.commit(kBase + (2 << 20), 4096).status, adsmErrorDeviceLost) << "the connection is closed";
    ASSERT_EQ(b.sync().status, adsmSuccess) << "the other client is served on";
}

TEST_F(Fixture, TwoClientsKernelsAtTheSameAddressesRunOnTheirOwnMemory) {
    Server s(args());
    expect_kernels_on_own_memory(s, key_text);
}

// On cpu each client's kernels run in a process of its own, at its window.
TEST_F(Fixture, OnCpuTwoClientsKernelsAtTheSameAddressesRunOnTheirOwnMemory) {
    Server s(args({"--device", "cpu"}));
    ASSERT_NE(s.first_line().find("listening"), std::string::npos) << s.log();
    expect_kernels_on_own_memory(s, key_text);
}

// A GPU's memory is staged: RMA reaches a host copy of it, which moves to
// the device when pushed and back when pulled, and not otherwise.  Run by
// remote.server.cuda, with the server on the CUDA double
// (REMOTE_TEST_SERVER_ARGS and REMOTE_TEST_SERVER_PRELOAD).
TEST_F(Fixture, StagedMemoryMovesWhenPushedAndPulled) {
    const char *more = getenv("REMOTE_TEST_SERVER_ARGS");
    const char *preload = getenv("REMOTE_TEST_SERVER_PRELOAD");
    ASSERT_TRUE(more && preload) << "needs the server's --device cuda|levelzero --modules FILE and its preload";
    Server s(args(words(more)), {std::string("LD_PRELOAD=") + preload});
    ASSERT_NE(s.first_line().find("listening"), std::string::npos) << s.log();
    Client c(s, key_text), other(s, key_text);
    ASSERT_TRUE(c.ok() && other.ok());
    // Level Zero's driver does not say a kernel's parameter sizes (of a
    // module that is not SPIR-V): the client states them.
    const bool declared = strstr(more, "--device levelzero") != nullptr;
    Reply a = c.attach();
    ASSERT_EQ(a.status, adsmSuccess) << a.message;
    EXPECT_EQ(a.flags & kStagedMemory, kStagedMemory);
    ASSERT_EQ(other.attach().status, adsmSuccess);
    const size_t n = 4096;
    Reply k = c.commit(kBase, 1 << 20), ko = other.commit(kBase, 1 << 20);
    ASSERT_EQ(k.status, adsmSuccess) << k.message;
    ASSERT_EQ(ko.status, adsmSuccess) << ko.message;
    std::vector<uint32_t> v(n), back(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    ASSERT_EQ(c.ep().write(v.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    RangeBody all{kBase, n * 4};
    // Not pushed: the kernel sees what the device held (zeros, filled there).
    FillBody zeros{kBase, n * 4, 0, 0}, elevens{kBase, n * 4, 0x11, 0};
    ASSERT_EQ(c.request(Op::fill, &zeros).status, adsmSuccess);
    ASSERT_EQ(other.request(Op::fill, &elevens).status, adsmSuccess);
    if (declared) {
        Reply early = c.add(kBase, n, 5);
        EXPECT_EQ(early.status, adsmErrorInvalidLaunch) << "no sizes yet";
        EXPECT_NE(std::string(early.message).find("declared none"), std::string::npos) << early.message;
        ASSERT_EQ(c.declare(0, "remote.add", {8, 8, 4}).status, adsmSuccess) << "of the server's --modules";
    }
    ASSERT_EQ(c.add(kBase, n, 5).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    ASSERT_EQ(c.request(Op::pull, &all).status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, std::vector<uint32_t>(n, 5));
    // Pushed: it sees the data.
    ASSERT_EQ(c.ep().write(v.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    ASSERT_EQ(c.request(Op::push, &all).status, adsmSuccess);
    ASSERT_EQ(c.add(kBase, n, 7).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, v) << "not pulled yet: the staging copy is as written";
    ASSERT_EQ(c.request(Op::pull, &all).status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], i + 7) << i;
    // The other client's device at the same addresses is its own.
    ASSERT_EQ(other.request(Op::pull, &all).status, adsmSuccess);
    ASSERT_EQ(other.ep().read(back.data(), n * 4, 0, ko.rma_key, 5000), adsmSuccess);
    EXPECT_EQ(back, std::vector<uint32_t>(n, 0x11111111u));
    // A module of the client's own, after a request the server answered
    // alone (a commit past the capacity): its kernel's parameter sizes come
    // from the driver, in the answer to this request.
    EXPECT_EQ(c.commit(kBase + (2 << 20), 128 << 20).status, adsmErrorMemoryAllocation);
    ASSERT_EQ(c.module(1, "fake-module:remote.add=remote_add:8,8,4").status, adsmSuccess);
    FunctionBody f{1, 0, "remote.add"};
    Reply fr = c.request(Op::function, &f);
    ASSERT_EQ(fr.status, adsmSuccess) << fr.message;
    ASSERT_EQ(fr.params, 3u);
    EXPECT_EQ(fr.param_sizes[0], declared ? 0u : 8u) << "0: unknown";
    EXPECT_EQ(fr.param_sizes[2], declared ? 0u : 4u);
    // A push past what the client committed closes it; the other goes on.
    RangeBody past{kBase + (1 << 20) - 4096, 8192};
    EXPECT_NE(c.request(Op::push, &past).status, adsmSuccess);
    EXPECT_EQ(c.sync().status, adsmErrorDeviceLost) << "the connection is closed";
    ASSERT_EQ(other.request(Op::push, &all).status, adsmSuccess);
}

// A kernel of the client's own module whose sizes the driver does not say
// (Level Zero) runs once the client declares them, laid out by them; a
// declaration is checked against what the driver knows and what was
// declared before.  Where the driver knows them all (cuda) a declaration
// must match.  Mistakes are the program's: the connection stays.
TEST_F(Fixture, StagedDeclaredSizesLayOutLaunches) {
    const char *more = getenv("REMOTE_TEST_SERVER_ARGS");
    const char *preload = getenv("REMOTE_TEST_SERVER_PRELOAD");
    ASSERT_TRUE(more && preload) << "needs the server's --device cuda|levelzero and its preload";
    const bool sizes_unknown = strstr(more, "--device levelzero") != nullptr;
    Server s(args(words(more)), {std::string("LD_PRELOAD=") + preload});
    ASSERT_NE(s.first_line().find("listening"), std::string::npos) << s.log();
    Client c(s, key_text);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c.attach().status, adsmSuccess);
    Reply k = c.commit(kBase, 1 << 20);
    ASSERT_EQ(k.status, adsmSuccess) << k.message;
    const size_t n = 1000;
    std::vector<uint32_t> v(n), back(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(3 * i);
    ASSERT_EQ(c.ep().write(v.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    RangeBody all{kBase, n * 4};
    ASSERT_EQ(c.request(Op::push, &all).status, adsmSuccess);
    ASSERT_EQ(c.module(1, "fake-module:remote.add=remote_add:8,8,4").status, adsmSuccess);
    if (sizes_unknown) {
        Reply early = c.add(kBase, n, 1, "remote.add", 1);
        EXPECT_EQ(early.status, adsmErrorInvalidLaunch);
        EXPECT_NE(std::string(early.message).find("declared none"), std::string::npos) << early.message;
    }
    Reply two = c.declare(1, "remote.add", {8, 8});
    EXPECT_EQ(two.status, adsmErrorInvalidValue);
    EXPECT_NE(std::string(two.message).find("3 parameters, 2 declared"), std::string::npos) << two.message;
    EXPECT_EQ(c.declare(1, "remote.absent", {8}).status, adsmErrorKernelNotFound);
    Reply fine = c.declare(1, "remote.add", {8, 8, 4});
    ASSERT_EQ(fine.status, adsmSuccess) << fine.message;
    EXPECT_EQ(c.declare(1, "remote.add", {8, 8, 4}).status, adsmSuccess) << "the same again";
    Reply other = c.declare(1, "remote.add", {8, 8, 8});
    EXPECT_EQ(other.status, adsmErrorInvalidValue);
    EXPECT_NE(std::string(other.message).find(sizes_unknown ? "other sizes before" : "parameter 2 has 4 bytes"),
              std::string::npos)
        << other.message;
    ASSERT_EQ(c.add(kBase, n, 4, "remote.add", 1).status, adsmSuccess);
    ASSERT_EQ(c.sync().status, adsmSuccess);
    ASSERT_EQ(c.request(Op::pull, &all).status, adsmSuccess);
    ASSERT_EQ(c.ep().read(back.data(), n * 4, 0, k.rma_key, 5000), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], 3 * i + 4) << i;
    // A module the device could not load is refused, and so is a launch
    // from it: the program hears of both, and the connection stays.
    EXPECT_NE(c.module(2, "not a module").status, adsmSuccess);
    Reply from_bad = c.add(kBase, n, 1, "remote.add", 2);
    EXPECT_EQ(from_bad.status, adsmErrorInvalidValue);
    EXPECT_NE(std::string(from_bad.message).find("loading failed"), std::string::npos) << from_bad.message;
    ASSERT_EQ(c.add(kBase, n, 1, "remote.add", 1).status, adsmSuccess) << "the session goes on";
    ASSERT_EQ(c.sync().status, adsmSuccess);
    // A declaration for a module never sent closes the connection.
    EXPECT_NE(c.declare(9, "remote.add", {8, 8, 4}).status, adsmSuccess);
    EXPECT_EQ(c.sync().status, adsmErrorDeviceLost);
}

// Random and mutated requests from connections of their own, some before
// the handshake, while a well-behaved client keeps being served throughout.
TEST_F(Fixture, FuzzedClientsNeverDisturbAWellBehavedOne) {
    Server s(args());
    Client good(s, key_text);
    Reply gk;
    ASSERT_NO_FATAL_FAILURE(serve_well_behaved(good, &gk));
    uint64_t rng = 20261126;
    auto next = [&rng] {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        return rng >> 17;
    };
    RangeBody range{kBase, 4096};
    FillBody fill{kBase, 4096, 7, 0};
    LaunchBody launch{};
    snprintf(launch.kernel, sizeof launch.kernel, "remote.add");
    for (int d = 0; d < 3; ++d) launch.grid[d] = launch.block[d] = 1;
    launch.args_size = 36;
    std::unique_ptr<ModuleBody> module(new ModuleBody{});
    module->module = 1, module->length = 16, module->total = 64;
    FunctionBody function{1, 0, "remote.add"};
    DeclareBody declare{1, 3, "remote.add", {8, 8, 4}};
    for (int round = 0; round < 60; ++round) {
        std::unique_ptr<Endpoint> ep;
        ASSERT_EQ(connect("127.0.0.1", s.port(), "tcp", 5000, &ep), adsmSuccess) << adsm::last_detail();
        const bool authenticated = round % 3 != 0;
        if (authenticated) {
            ASSERT_EQ(client_handshake(*ep, key_text, 5000), adsmSuccess);
        }
        // A valid request of a random kind, then mutated, or plain noise.
        std::vector<uint8_t> m(sizeof(RequestHeader));
        RequestHeader h{kWireMagic, static_cast<Op>(1 + next() % 12), 1, 0, 0};
        const void *body = nullptr;
        size_t body_size = 0;
        switch (h.op) {
        case Op::attach: body = &range, body_size = sizeof(AttachBody); break;
        case Op::commit:
        case Op::decommit:
        case Op::push:
        case Op::pull: body = &range, body_size = sizeof range; break;
        case Op::fill: body = &fill, body_size = sizeof fill; break;
        case Op::launch: body = &launch, body_size = kLaunchFixedBytes + 36; break;
        case Op::module: body = module.get(), body_size = kModuleFixedBytes + module->length; break;
        case Op::function: body = &function, body_size = sizeof function; break;
        case Op::declare: body = &declare, body_size = sizeof declare; break;
        default: break;
        }
        h.length = static_cast<uint32_t>(body_size);
        m.resize(sizeof h + body_size);
        memcpy(m.data(), &h, sizeof h);
        if (body_size) memcpy(m.data() + sizeof h, body, body_size);
        if (round % 2) {
            for (int k = 0; k < 1 + static_cast<int>(next() % 4); ++k) m[next() % m.size()] = static_cast<uint8_t>(next());
        } else {
            m.resize(1 + next() % 200);
            for (auto &b : m) b = static_cast<uint8_t>(next());
        }
        for (int burst = 0; burst < 3; ++burst) (void)ep->send(m.data(), m.size());
        // Whatever happened to it, the good client is served, its memory intact.
        ASSERT_NO_FATAL_FAILURE(expect_served(good, gk, static_cast<uint8_t>(round))) << round;
        ASSERT_EQ(good.commit(kBase + (8 << 20) + round * 4096, 4096).status, adsmSuccess) << round;
    }
    EXPECT_EQ(s.exit_status_if_running(), -1) << "the server is still running";
}
