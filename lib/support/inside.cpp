#include "support/inside.h"

namespace adsm {
namespace {
__attribute__((tls_model("initial-exec"))) thread_local unsigned tls_depth = 0;
}

Inside::Inside() { ++tls_depth; }
Inside::~Inside() { --tls_depth; }
bool inside_runtime() { return tls_depth != 0; }

}  // namespace adsm
