// Whether this process is a device (the sim device server) rather than a
// host program.  Set before anything else runs in a device process; the host
// runtime and the interposers stay dormant there.
#pragma once

namespace adsm {

bool in_device_process();
void mark_device_process();

}  // namespace adsm
