// The process that serves one client's device for adsm-device-server when
// it hosts a back-end other than sim (worker_hosting.h): its back-end's
// memory and kernels at the client's window addresses, in an address space
// no other client shares.  It reads requests on descriptor 3 and answers
// each; the window's memory is descriptor 4.  It ends when the server
// closes the socket or goes away.
#pragma once

#include "device_server/options.h"

namespace adsm::server {

constexpr int kWorkerSocketFd = 3;
constexpr int kWorkerMemoryFd = 4;

int run_worker(const Options &options);

}  // namespace adsm::server
