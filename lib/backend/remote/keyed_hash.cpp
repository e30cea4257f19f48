#include "backend/remote/keyed_hash.h"

#include <cstring>

namespace adsm::remote {
namespace {

// FIPS 180-4's constants are the first 32 bits of the fractional parts of
// the cube roots (K) and square roots (H0) of the first primes: computed
// here rather than transcribed, and checked by the standard's test vectors.
// In integers, exactly: those bits are the low 32 of the integer root of
// n * 2^(32 * degree).  (No libm: the library it would bring costs every
// process started under the preload a load.)
uint32_t fraction_bits_of_root(unsigned n, unsigned degree) {
    using u128 = unsigned __int128;
    const u128 target = static_cast<u128>(n) << (32 * degree);
    auto power = [&](u128 x) { return degree == 2 ? x * x : x * x * x; };
    // The largest x with power(x) <= target; roots of n < 2^8 stay below 2^36.
    uint64_t lo = 0, hi = uint64_t{1} << 36;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (power(mid) <= target) lo = mid;
        else hi = mid - 1;
    }
    return static_cast<uint32_t>(lo);
}

struct Constants {
    uint32_t k[64];
    uint32_t h0[8];
    Constants() {
        unsigned found = 0;
        for (unsigned n = 2; found < 64; ++n) {
            bool prime = true;
            for (unsigned d = 2; d * d <= n; ++d)
                if (n % d == 0) prime = false;
            if (!prime) continue;
            k[found] = fraction_bits_of_root(n, 3);
            if (found < 8) h0[found] = fraction_bits_of_root(n, 2);
            ++found;
        }
    }
};

const Constants &constants() {
    static const Constants c;
    return c;
}

uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256() { memcpy(h_, constants().h0, sizeof h_); }

void Sha256::block(const uint8_t *p) {
    const uint32_t *k = constants().k;
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
        w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

void Sha256::update(const void *data, size_t n) {
    const auto *p = static_cast<const uint8_t *>(data);
    total_ += n;
    while (n) {
        size_t take = std::min(n, sizeof buf_ - used_);
        memcpy(buf_ + used_, p, take);
        used_ += take, p += take, n -= take;
        if (used_ == sizeof buf_) {
            block(buf_);
            used_ = 0;
        }
    }
}

Digest Sha256::finish() {
    uint64_t bits = total_ * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (used_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(len, 8);
    Digest d;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) d[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
    return d;
}

Digest sha256(const void *data, size_t n) {
    Sha256 s;
    s.update(data, n);
    return s.finish();
}

Digest hmac_sha256(const std::string &key, std::initializer_list<std::pair<const void *, size_t>> parts) {
    uint8_t k[64] = {};
    if (key.size() > sizeof k) {
        Digest d = sha256(key.data(), key.size());
        memcpy(k, d.data(), d.size());
    } else {
        memcpy(k, key.data(), key.size());
    }
    uint8_t ipad[64], opad[64];
    for (int i = 0; i < 64; ++i) ipad[i] = k[i] ^ 0x36, opad[i] = k[i] ^ 0x5c;
    Sha256 inner;
    inner.update(ipad, sizeof ipad);
    for (const auto &[p, n] : parts) inner.update(p, n);
    Digest in = inner.finish();
    Sha256 outer;
    outer.update(opad, sizeof opad);
    outer.update(in.data(), in.size());
    return outer.finish();
}

bool same_digest(const Digest &a, const Digest &b) {
    uint8_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
    return diff == 0;
}

std::string hex(const Digest &d) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (uint8_t b : d) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

}  // namespace adsm::remote
