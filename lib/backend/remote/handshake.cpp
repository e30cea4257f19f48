#include "backend/remote/handshake.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "backend/remote/keyed_hash.h"

namespace adsm::remote {
namespace {

constexpr char kClientLabel[] = "adsm-remote-1 client";
constexpr char kServerLabel[] = "adsm-remote-1 server";

struct Challenge {
    uint32_t magic;
    uint32_t version;
    uint8_t nonce[32];
};
struct Response {
    uint32_t magic;
    uint32_t version;
    uint8_t nonce[32];
    uint8_t mac[32];
};
struct Verdict {
    uint32_t magic;
    uint32_t accepted;
    uint8_t mac[32];
    char reason[120];
};

bool fresh_nonce(uint8_t (&n)[32]) {
    size_t got = 0;
    while (got < sizeof n) {
        ssize_t r = getrandom(n + got, sizeof n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
    }
    return true;
}

Digest proof(const std::string &key, const char *label, const uint8_t *first, const uint8_t *second) {
    return hmac_sha256(key, {{label, strlen(label)}, {first, 32}, {second, 32}});
}

void refuse(MessagePipe &pipe, const char *reason) {
    Verdict v{};
    v.magic = kWireMagic;
    snprintf(v.reason, sizeof v.reason, "%s", reason);
    (void)pipe.send(&v, sizeof v);
}

}  // namespace

Status server_handshake(MessagePipe &pipe, const std::string &key, int timeout_ms, std::string *why) {
    Challenge c{kWireMagic, kWireVersion, {}};
    if (!fresh_nonce(c.nonce)) {
        *why = "no randomness for a challenge";
        return fail(adsmErrorInitialization, "%s", why->c_str());
    }
    if (Status s = pipe.send(&c, sizeof c); s != adsmSuccess) {
        *why = last_detail();
        return s;
    }
    Response r;
    size_t got = 0;
    if (Status s = pipe.recv(&r, sizeof r, &got, timeout_ms); s != adsmSuccess) {
        *why = std::string("no answer to the challenge: ") + last_detail();
        return s;
    }
    if (got != sizeof r || r.magic != kWireMagic) {
        *why = "the answer to the challenge is not an adsm client's";
        refuse(pipe, "not an adsm remote client");
        return fail(adsmErrorNoDevice, "%s", why->c_str());
    }
    if (r.version != kWireVersion) {
        *why = "the client speaks protocol version " + std::to_string(r.version);
        refuse(pipe, "protocol version mismatch");
        return fail(adsmErrorNoDevice, "%s", why->c_str());
    }
    Digest expected = proof(key, kClientLabel, c.nonce, r.nonce);
    Digest given;
    memcpy(given.data(), r.mac, given.size());
    if (!same_digest(expected, given)) {
        *why = "the client does not hold the key";
        refuse(pipe, "authentication failed: the key differs (ADSM_REMOTE_KEY)");
        return fail(adsmErrorNoDevice, "%s", why->c_str());
    }
    Verdict v{};
    v.magic = kWireMagic;
    v.accepted = 1;
    Digest mine = proof(key, kServerLabel, r.nonce, c.nonce);
    memcpy(v.mac, mine.data(), sizeof v.mac);
    if (Status s = pipe.send(&v, sizeof v); s != adsmSuccess) {
        *why = last_detail();
        return s;
    }
    return adsmSuccess;
}

Status client_handshake(MessagePipe &pipe, const std::string &key, int timeout_ms) {
    Challenge c;
    size_t got = 0;
    if (Status s = pipe.recv(&c, sizeof c, &got, timeout_ms); s != adsmSuccess)
        return fail(adsmErrorNoDevice, "the server sent no challenge: %s", std::string(last_detail()).c_str());
    if (got != sizeof c || c.magic != kWireMagic)
        return fail(adsmErrorNoDevice, "the server is not an adsm device server");
    if (c.version != kWireVersion)
        return fail(adsmErrorNoDevice, "the server speaks protocol version %u, this client %u", c.version, kWireVersion);
    Response r{kWireMagic, kWireVersion, {}, {}};
    if (!fresh_nonce(r.nonce)) return fail(adsmErrorInitialization, "no randomness for a nonce");
    Digest mac = proof(key, kClientLabel, c.nonce, r.nonce);
    memcpy(r.mac, mac.data(), sizeof r.mac);
    if (Status s = pipe.send(&r, sizeof r); s != adsmSuccess) return s;
    Verdict v;
    if (Status s = pipe.recv(&v, sizeof v, &got, timeout_ms); s != adsmSuccess)
        return fail(adsmErrorNoDevice, "the server did not answer: %s", std::string(last_detail()).c_str());
    if (got != sizeof v || v.magic != kWireMagic) return fail(adsmErrorNoDevice, "the server's answer is malformed");
    v.reason[sizeof v.reason - 1] = '\0';
    if (!v.accepted) return fail(adsmErrorNoDevice, "the server refused this client: %s", v.reason);
    Digest expected = proof(key, kServerLabel, r.nonce, c.nonce), given;
    memcpy(given.data(), v.mac, given.size());
    if (!same_digest(expected, given))
        return fail(adsmErrorNoDevice, "the server does not hold the key (ADSM_REMOTE_KEY): not trusted");
    return adsmSuccess;
}

}  // namespace adsm::remote
