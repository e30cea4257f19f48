// Small objects come in size classes, each on pages of its own, so that an
// interior pointer finds its object's start with one multiply and a shift,
// and a page's objects are a bitmap of at most kMaxObjectsPerPage bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::gc {

constexpr size_t kGranule = 16;  // every object starts 16-byte aligned, as malloc's do
constexpr size_t kPageShift = 12;
constexpr size_t kPageBytes = size_t(1) << kPageShift;
constexpr size_t kMaxSmall = 2048;  // larger objects take whole pages
constexpr unsigned kMaxObjectsPerPage = kPageBytes / kGranule;
constexpr unsigned kMaskWords = kMaxObjectsPerPage / 64;
constexpr unsigned kClasses = 24;

struct SizeClass {
    uint32_t size;     // bytes per object
    uint32_t objects;  // per page
    uint32_t inverse;  // ceil(2^32 / size): offset * inverse >> 32 == offset / size on a page
};

extern const SizeClass kSizeClasses[kClasses];

namespace detail {
// Every granule multiple up to 128 bytes (most objects of linked structures
// are small), then four classes per doubling: at most a fifth of an object
// is lost to rounding.
inline constexpr uint32_t kSizes[kClasses] = {16,  32,  48,  64,  80,  96,  112, 128,  160,  192,  224,  256,
                                              320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048};

struct ClassTable {
    uint8_t by_granules[kMaxSmall / kGranule + 1];
    constexpr ClassTable() : by_granules{} {
        unsigned c = 0;
        for (unsigned g = 0; g <= kMaxSmall / kGranule; ++g) {
            while (kSizes[c] < g * kGranule) ++c;
            by_granules[g] = static_cast<uint8_t>(c);
        }
    }
};
inline constexpr ClassTable kClassTable;
}  // namespace detail

// The class for `bytes` (1..kMaxSmall): inline, it is on every allocation's path.
inline unsigned size_class_of(size_t bytes) { return detail::kClassTable.by_granules[(bytes + kGranule - 1) / kGranule]; }

inline uint32_t object_index(uint32_t offset_in_page, const SizeClass &c) {
    return static_cast<uint32_t>((uint64_t(offset_in_page) * c.inverse) >> 32);
}

}  // namespace adsm::gc
