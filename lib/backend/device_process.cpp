#include "backend/device_process.h"

#include <atomic>

namespace adsm {
namespace {
std::atomic<bool> g_device{false};
}

bool in_device_process() { return g_device.load(std::memory_order_relaxed); }
void mark_device_process() { g_device.store(true, std::memory_order_relaxed); }

}  // namespace adsm
