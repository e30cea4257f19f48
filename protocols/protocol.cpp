#include "protocols/protocol.h"

#include <cstring>

namespace adsm {

void Protocol::snapshot(const Region &r, uint8_t *dst) { memcpy(dst, r.alias, r.size); }

}  // namespace adsm
