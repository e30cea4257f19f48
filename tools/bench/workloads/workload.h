// The workload suite: each workload written twice, the way a careful
// programmer writes it with explicit device buffers and copies, and the
// ADSM way with one pointer.  Both variants compute the same result from
// the same inputs and report a checksum of what the CPU consumed, which the
// driver compares with a plain CPU computation.
#pragma once

#include <adsm.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wl {

enum class Variant { explicit_copies, adsm };

struct Result {
    double checksum = 0;   // of the output the CPU consumed
    double reference = 0;  // the same, computed on the CPU alone
    double tolerance = 0;  // relative
};

struct Workload {
    const char *name;
    const char *what;
    // Sets up inputs (untimed), runs the variant between timed_begin() and
    // timed_end(), and fills the result.  `scratch` is a directory for files.
    Result (*run)(Variant v, const std::string &scratch);
};

const std::vector<Workload> &all();

// Defines a workload in its own file.
struct Register {
    Register(const char *name, const char *what, Result (*run)(Variant, const std::string &));
};

// The part of a run that is timed.
void timed_begin();
void timed_end();

// A deterministic pseudo-random stream for inputs.
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed * 6364136223846793005ull + 1442695040888963407ull) {}
    uint32_t next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(s >> 33);
    }
    float unit() { return static_cast<float>(next() >> 8) / 16777216.0f; }  // [0, 1)
};

}  // namespace wl
