#include "gc/size_classes.h"

namespace adsm::gc {
namespace {

constexpr SizeClass make(uint32_t size) {
    return SizeClass{size, static_cast<uint32_t>(kPageBytes / size),
                     static_cast<uint32_t>(((uint64_t(1) << 32) + size - 1) / size)};
}
using detail::kSizes;

}  // namespace

const SizeClass kSizeClasses[kClasses] = {
    make(kSizes[0]),  make(kSizes[1]),  make(kSizes[2]),  make(kSizes[3]),  make(kSizes[4]),  make(kSizes[5]),
    make(kSizes[6]),  make(kSizes[7]),  make(kSizes[8]),  make(kSizes[9]),  make(kSizes[10]), make(kSizes[11]),
    make(kSizes[12]), make(kSizes[13]), make(kSizes[14]), make(kSizes[15]), make(kSizes[16]), make(kSizes[17]),
    make(kSizes[18]), make(kSizes[19]), make(kSizes[20]), make(kSizes[21]), make(kSizes[22]), make(kSizes[23]),
};

}  // namespace adsm::gc
