// Failure injection for tests: makes the Nth next device copy, device
// commit or protection change fail, so that tests can prove every such
// failure reaches the program and loses nothing.  Armed only through this
// internal interface (tests link the runtime's objects directly; libadsm.so
// exports none of it); unarmed, a check is two relaxed loads.
// Async-signal-safe: the fault handler copies and protects.
#pragma once

#include <cstdint>

namespace adsm::os::injection {

enum class Site : unsigned { device_copy, device_commit, protect, count_ };

// The nth next event at `site` fails (1: the very next), and `times` - 1
// more after it; 0 disarms.
void arm(Site site, uint64_t nth, uint64_t times = 1);
// Whether this event at `site` is the one to fail (consumes the count).
bool should_fail(Site site);
// Events that failed by injection so far, per site.
uint64_t injected(Site site);

}  // namespace adsm::os::injection
