#include "protocols/read_prediction.h"

#include <cstring>

namespace adsm {

using namespace block;

void ReadPrediction::invalidated(SharedObject &r) { memset(r.blocks, kInvalid, r.nblocks); }

std::unique_ptr<ReadPrediction> predict_nothing() { return std::make_unique<ReadPrediction>(); }

}  // namespace adsm
