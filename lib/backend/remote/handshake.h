// The first exchange on a remote device's connection: each side proves it
// holds the shared key without sending it (HMAC-SHA-256 over both sides'
// fresh nonces), the server first refusing anything else, before any memory
// or kernel is touched.
//
//   server -> client  Challenge  {magic, version, server nonce}
//   client -> server  Response   {client nonce, mac(key, "client", sn, cn)}
//   server -> client  Verdict    {accepted, mac(key, "server", cn, sn) | reason}
//
// The client checks the server's proof too, so it never sends its data to
// a server that does not hold the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/status.h"

namespace adsm::remote {

constexpr uint32_t kWireMagic = 0xad5a4e01;
constexpr uint32_t kWireVersion = 3;  // 2: staged device memory (push, pull); 3: declared parameter sizes

// One message each way at a time, whole: what a connection gives the
// handshake (a libfabric endpoint; a socket pair in the tests).
class MessagePipe {
public:
    virtual ~MessagePipe() = default;
    virtual Status send(const void *data, size_t n) = 0;
    // Waits up to timeout_ms for one message of at most cap bytes.
    virtual Status recv(void *data, size_t cap, size_t *got, int timeout_ms) = 0;
};

// Returns adsmSuccess once the client proved it holds `key`; otherwise a
// refusal was sent (when the peer is still there) and *why says what was
// wrong, for the server's log.
Status server_handshake(MessagePipe &pipe, const std::string &key, int timeout_ms, std::string *why);
// adsmSuccess once both sides proved the key; adsmErrorNoDevice otherwise,
// with the server's reason when it gave one.
Status client_handshake(MessagePipe &pipe, const std::string &key, int timeout_ms);

}  // namespace adsm::remote
