// The environment of the sim device process: the host's, plus where to find
// the channel and device memory, plus whatever makes sure our library is
// loaded there (the device process is this program started again, and our
// library may have come into the host by dlopen).
#pragma once

#include <string>
#include <vector>

namespace adsm {

std::vector<std::string> server_environment(int sock, int channel_fd, int dev_fd, int host_fd,
                                            const std::vector<int> &peer_fds);

}  // namespace adsm
