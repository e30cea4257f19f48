// The remote device's transport on loopback: connect, the handshake over
// real endpoints, RMA into memory the other side exposed, and a peer that
// goes away.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/remote/fabric.h"
#include "backend/remote/fabric_library.h"
#include "support/status.h"

using namespace adsm::remote;

namespace {

const std::string kKey = "loopback test key, 32 bytes long";

// First in the file: nothing has loaded libfabric yet.  Loading it (its
// PSM provider's libinfinipath takes six signals in its constructor) leaves
// what the process does on every signal as it was.
TEST(FabricLibrary, LoadingItLeavesTheProgramsSignalHandlingAlone) {
    struct sigaction before[NSIG] = {};
    bool known[NSIG] = {};
    for (int s = 1; s < NSIG; ++s) known[s] = sigaction(s, nullptr, &before[s]) == 0;
    const FabricLibrary *lib = nullptr;
    ASSERT_EQ(load_fabric(&lib), adsmSuccess) << adsm::last_detail();
    ASSERT_NE(lib->getinfo, nullptr);
    for (int s = 1; s < NSIG; ++s) {
        struct sigaction now {};
        if (!known[s] || sigaction(s, nullptr, &now) != 0) continue;
        EXPECT_EQ(reinterpret_cast<void *>(now.sa_handler), reinterpret_cast<void *>(before[s].sa_handler))
            << "signal " << s << " (" << strsignal(s) << ")";
    }
}

struct Loopback {
    std::unique_ptr<Listener> listener;
    std::unique_ptr<Endpoint> server, client;
    Loopback() {
        if (Listener::open("127.0.0.1", "0", "tcp", &listener) != adsmSuccess) {
            ADD_FAILURE() << "cannot listen on loopback: " << adsm::last_detail();
            return;
        }
        std::thread t([&] {
            for (int i = 0; i < 50 && !server; ++i) EXPECT_EQ(listener->accept(&server, 100), adsmSuccess) << adsm::last_detail();
        });
        EXPECT_EQ(connect("127.0.0.1", std::to_string(listener->port()), "tcp", 5000, &client), adsmSuccess)
            << adsm::last_detail();
        t.join();
        EXPECT_TRUE(server && client);
    }
};

}  // namespace

TEST(RemoteFabricTest, HandshakeAndMessagesOverLoopback) {
    Loopback l;
    ASSERT_TRUE(l.server && l.client);
    adsm::Status server = adsmErrorInitialization;
    std::string why;
    std::thread t([&] { server = server_handshake(*l.server, kKey, 5000, &why); });
    EXPECT_EQ(client_handshake(*l.client, kKey, 5000), adsmSuccess) << adsm::last_detail();
    t.join();
    EXPECT_EQ(server, adsmSuccess) << why;
    // Messages both ways, in order, of every size up to the largest.
    for (size_t n : {size_t(1), size_t(100), size_t(4096), kMaxMessage}) {
        std::vector<uint8_t> out(n, static_cast<uint8_t>(n)), in(kMaxMessage);
        ASSERT_EQ(l.client->send(out.data(), n), adsmSuccess) << adsm::last_detail();
        size_t got = 0;
        ASSERT_EQ(l.server->recv(in.data(), in.size(), &got, 5000), adsmSuccess) << adsm::last_detail();
        ASSERT_EQ(got, n);
        EXPECT_EQ(memcmp(in.data(), out.data(), n), 0);
    }
    std::vector<uint8_t> too_big(kMaxMessage + 1);
    EXPECT_EQ(l.client->send(too_big.data(), too_big.size()), adsmErrorInvalidValue);
}

// Waits that spin before they sleep see the same messages, in order; the
// default spins only where cores are to spare.
TEST(RemoteFabricTest, SpinningWaitsSeeEveryMessage) {
    EXPECT_EQ(Endpoint::spin_us(0), 0u);
    EXPECT_EQ(Endpoint::spin_us(250), 250u);
    EXPECT_EQ(Endpoint::spin_us(Endpoint::kSpinAuto),
              sysconf(_SC_NPROCESSORS_ONLN) >= Endpoint::kAutoSpinCpus ? Endpoint::kAutoSpinUs : 0u);
    Loopback l;
    ASSERT_TRUE(l.server && l.client);
    l.client->set_spin_ns(200 * 1000);
    l.server->set_spin_ns(1);  // (expires at once: the sleeping path, after a look)
    for (uint32_t i = 0; i < 200; ++i) {
        ASSERT_EQ(l.client->send(&i, sizeof i), adsmSuccess) << adsm::last_detail();
        uint32_t got_value = ~0u;
        size_t got = 0;
        ASSERT_EQ(l.server->recv(&got_value, sizeof got_value, &got, 5000), adsmSuccess) << adsm::last_detail();
        ASSERT_EQ(got_value, i);
        ASSERT_EQ(l.server->send(&i, sizeof i), adsmSuccess) << adsm::last_detail();
        ASSERT_EQ(l.client->recv(&got_value, sizeof got_value, &got, 5000), adsmSuccess) << adsm::last_detail();
        ASSERT_EQ(got_value, i);
    }
}

TEST(RemoteFabricTest, RmaReachesExposedMemoryUnderItsKeyAlone) {
    Loopback l;
    ASSERT_TRUE(l.server && l.client);
    const size_t bytes = 9u << 20;  // more than one RMA chunk
    std::vector<uint8_t> memory(bytes, 0);
    const uint64_t key = 0x5eed1234abcdULL;
    ASSERT_EQ(l.server->expose(memory.data(), memory.size(), key), adsmSuccess) << adsm::last_detail();
    // The target makes progress while it waits for requests, as a server does.
    std::atomic<bool> stop{false};
    std::thread progress([&] {
        uint8_t buf[64];
        size_t got;
        while (!stop && !l.server->closed()) (void)l.server->recv(buf, sizeof buf, &got, 50);
    });
    std::vector<uint8_t> data(bytes - 4096);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
    ASSERT_EQ(l.client->write(data.data(), data.size(), 4096, key, 5000), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(memcmp(memory.data() + 4096, data.data(), data.size()), 0) << "the write landed at its offset";
    EXPECT_EQ(memory[4095], 0);
    std::vector<uint8_t> back(data.size());
    ASSERT_EQ(l.client->read(back.data(), back.size(), 4096, key, 5000), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(back, data);
    // Another key reaches nothing (and the connection is not to be trusted after).
    uint8_t probe[16] = {};
    EXPECT_NE(l.client->read(probe, sizeof probe, 0, key + 1, 5000), adsmSuccess);
    stop = true;
    progress.join();
}

TEST(RemoteFabricTest, APeerThatGoesAwayIsSeenWithinTheTimeout) {
    Loopback l;
    ASSERT_TRUE(l.server && l.client);
    l.client.reset();
    uint8_t buf[64];
    size_t got = 0;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(l.server->recv(buf, sizeof buf, &got, 3000), adsmErrorDeviceLost);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
}
