#include "support/driver_thread.h"

namespace adsm {
namespace {
__attribute__((tls_model("initial-exec"))) thread_local unsigned tls_driver_calls = 0;
}

OnDriverThread::OnDriverThread() { ++tls_driver_calls; }
OnDriverThread::~OnDriverThread() { --tls_driver_calls; }
bool on_driver_thread() { return tls_driver_calls != 0; }

}  // namespace adsm
