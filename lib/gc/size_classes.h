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

// The class for `bytes` (1..kMaxSmall).
unsigned size_class_of(size_t bytes);

inline uint32_t object_index(uint32_t offset_in_page, const SizeClass &c) {
    return static_cast<uint32_t>((uint64_t(offset_in_page) * c.inverse) >> 32);
}

}  // namespace adsm::gc
