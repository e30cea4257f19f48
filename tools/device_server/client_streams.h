// A client's streams and launches on a device the server hosts for it:
// the client numbers its streams; each becomes one of the device's on first
// use.
#pragma once

#include <map>

#include "backend/device.h"
#include "backend/remote/wire.h"

namespace adsm::server {

class ClientStreams {
public:
    // The device's stream for the client's, made on first use.
    Status get(Device &device, uint32_t client_stream, StreamId *out);
    // False when the client never used it (nothing to wait for).
    bool find(uint32_t client_stream, StreamId *out) const;
    // The client's number for one of the device's streams.
    uint32_t client_number(StreamId id) const;
    void destroy_all(Device &device);

private:
    std::map<uint32_t, StreamId> streams_;
};

// A launch of kernel k as the client asked for it.
LaunchDesc launch_of(const KernelInfo &k, const remote::LaunchBody &l);

}  // namespace adsm::server
