#include "gc/size_classes.h"

namespace adsm::gc {
namespace {

constexpr SizeClass make(uint32_t size) {
    return SizeClass{size, static_cast<uint32_t>(kPageBytes / size),
                     static_cast<uint32_t>(((uint64_t(1) << 32) + size - 1) / size)};
}

// Every granule multiple up to 128 bytes (most objects of linked structures
// are small), then four classes per doubling: at most a fifth of an object
// is lost to rounding.
constexpr uint32_t kSizes[kClasses] = {16,  32,  48,  64,  80,  96,  112, 128,  160,  192,  224,  256,
                                       320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048};

struct Table {
    uint8_t by_granules[kMaxSmall / kGranule + 1];
    constexpr Table() : by_granules{} {
        unsigned c = 0;
        for (unsigned g = 0; g <= kMaxSmall / kGranule; ++g) {
            while (kSizes[c] < g * kGranule) ++c;
            by_granules[g] = static_cast<uint8_t>(c);
        }
    }
};
constexpr Table kTable;

}  // namespace

const SizeClass kSizeClasses[kClasses] = {
    make(kSizes[0]),  make(kSizes[1]),  make(kSizes[2]),  make(kSizes[3]),  make(kSizes[4]),  make(kSizes[5]),
    make(kSizes[6]),  make(kSizes[7]),  make(kSizes[8]),  make(kSizes[9]),  make(kSizes[10]), make(kSizes[11]),
    make(kSizes[12]), make(kSizes[13]), make(kSizes[14]), make(kSizes[15]), make(kSizes[16]), make(kSizes[17]),
    make(kSizes[18]), make(kSizes[19]), make(kSizes[20]), make(kSizes[21]), make(kSizes[22]), make(kSizes[23]),
};

unsigned size_class_of(size_t bytes) { return kTable.by_granules[(bytes + kGranule - 1) / kGranule]; }

}  // namespace adsm::gc
