// The remote device's handshake over a socket pair that keeps message
// boundaries (what a libfabric message endpoint gives it).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "backend/remote/handshake.h"
#include "support/status.h"

using namespace adsm::remote;
using adsm::Status;

namespace {

class SocketPipe final : public MessagePipe {
public:
    explicit SocketPipe(int fd) : fd_(fd) {}
    ~SocketPipe() override { close(fd_); }
    Status send(const void *data, size_t n) override {
        if (::send(fd_, data, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) return adsm::fail(adsmErrorDeviceLost, "send");
        return adsmSuccess;
    }
    Status recv(void *data, size_t cap, size_t *got, int timeout_ms) override {
        struct pollfd p = {fd_, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) != 1) return adsm::fail(adsmErrorDeviceLost, "timed out");
        ssize_t r = ::recv(fd_, data, cap, 0);
        if (r <= 0) return adsm::fail(adsmErrorDeviceLost, "closed");
        *got = static_cast<size_t>(r);
        return adsmSuccess;
    }

private:
    int fd_;
};

struct Pair {
    std::unique_ptr<SocketPipe> server, client;
    Pair() {
        int sv[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
        server = std::make_unique<SocketPipe>(sv[0]);
        client = std::make_unique<SocketPipe>(sv[1]);
    }
};

const std::string kKey = "correct horse battery staple 42";

}  // namespace

TEST(RemoteHandshakeTest, TheSameKeyOnBothSidesIsAccepted) {
    Pair p;
    Status server = adsmErrorInitialization;
    std::string why;
    std::thread t([&] { server = server_handshake(*p.server, kKey, 2000, &why); });
    EXPECT_EQ(client_handshake(*p.client, kKey, 2000), adsmSuccess) << adsm::last_detail();
    t.join();
    EXPECT_EQ(server, adsmSuccess) << why;
}

TEST(RemoteHandshakeTest, AnotherKeyIsRefusedOnBothSides) {
    Pair p;
    Status server = adsmSuccess;
    std::string why;
    std::thread t([&] { server = server_handshake(*p.server, kKey, 2000, &why); });
    EXPECT_EQ(client_handshake(*p.client, "a different key, long enough", 2000), adsmErrorNoDevice);
    EXPECT_NE(std::string(adsm::last_detail()).find("refused"), std::string::npos) << adsm::last_detail();
    t.join();
    EXPECT_NE(server, adsmSuccess);
    EXPECT_NE(why.find("does not hold the key"), std::string::npos) << why;
}

TEST(RemoteHandshakeTest, AServerThatAcceptsWithoutTheKeyIsNotTrusted) {
    Pair p;
    std::thread t([&] {
        // Challenge, then "accepted" with a made-up proof.
        uint8_t challenge[40] = {};
        uint32_t magic = kWireMagic, version = kWireVersion;
        memcpy(challenge, &magic, 4);
        memcpy(challenge + 4, &version, 4);
        (void)p.server->send(challenge, sizeof challenge);
        uint8_t answer[256];
        size_t got;
        (void)p.server->recv(answer, sizeof answer, &got, 2000);
        uint8_t verdict[4 + 4 + 32 + 120] = {};
        uint32_t accepted = 1;
        memcpy(verdict, &magic, 4);
        memcpy(verdict + 4, &accepted, 4);
        memset(verdict + 8, 0x5a, 32);
        (void)p.server->send(verdict, sizeof verdict);
    });
    EXPECT_EQ(client_handshake(*p.client, kKey, 2000), adsmErrorNoDevice);
    EXPECT_NE(std::string(adsm::last_detail()).find("does not hold the key"), std::string::npos) << adsm::last_detail();
    t.join();
}

TEST(RemoteHandshakeTest, GarbageAndSilenceAreRefused) {
    {
        Pair p;
        std::string why;
        std::thread t([&] {
            uint8_t challenge[64];
            size_t got;
            (void)p.client->recv(challenge, sizeof challenge, &got, 2000);
            const char junk[] = "GET / HTTP/1.0\r\n\r\n";
            (void)p.client->send(junk, sizeof junk);
        });
        EXPECT_NE(server_handshake(*p.server, kKey, 2000, &why), adsmSuccess);
        EXPECT_NE(why.find("not an adsm client"), std::string::npos) << why;
        t.join();
    }
    {
        Pair p;
        std::string why;
        EXPECT_NE(server_handshake(*p.server, kKey, 100, &why), adsmSuccess) << "a client that never answers";
        EXPECT_NE(why.find("no answer"), std::string::npos) << why;
    }
}
