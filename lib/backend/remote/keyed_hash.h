// The keyed hash behind a remote device's challenge-response: SHA-256 and
// HMAC-SHA-256 (FIPS 180-4, RFC 2104), so that proving the shared key never
// sends it.  Small and dependency-free: the server and the client both use
// it before anything else is trusted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace adsm::remote {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
public:
    Sha256();
    void update(const void *data, size_t n);
    Digest finish();

private:
    void block(const uint8_t *p);
    uint32_t h_[8];
    uint8_t buf_[64];
    size_t used_ = 0;
    uint64_t total_ = 0;
};

Digest sha256(const void *data, size_t n);
// HMAC-SHA-256 of the concatenation of the parts.
Digest hmac_sha256(const std::string &key, std::initializer_list<std::pair<const void *, size_t>> parts);
// Equal in time independent of where they differ.
bool same_digest(const Digest &a, const Digest &b);
std::string hex(const Digest &d);

}  // namespace adsm::remote
