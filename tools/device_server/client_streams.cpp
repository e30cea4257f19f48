#include "device_server/client_streams.h"

namespace adsm::server {

Status ClientStreams::get(Device &device, uint32_t client_stream, StreamId *out) {
    auto it = streams_.find(client_stream);
    if (it == streams_.end()) {
        StreamId id;
        if (Status s = device.create_stream(&id); s != adsmSuccess) return s;
        it = streams_.emplace(client_stream, id).first;
    }
    *out = it->second;
    return adsmSuccess;
}

bool ClientStreams::find(uint32_t client_stream, StreamId *out) const {
    auto it = streams_.find(client_stream);
    if (it == streams_.end()) return false;
    *out = it->second;
    return true;
}

uint32_t ClientStreams::client_number(StreamId id) const {
    for (auto &[mine, theirs] : streams_)
        if (theirs == id) return mine;
    return id;
}

void ClientStreams::destroy_all(Device &device) {
    for (auto &[mine, theirs] : streams_) device.destroy_stream(theirs);
    streams_.clear();
}

LaunchDesc launch_of(const KernelInfo &k, const remote::LaunchBody &l) {
    LaunchDesc d;
    d.kernel = &k;
    d.grid = {l.grid[0], l.grid[1], l.grid[2]};
    d.block = {l.block[0], l.block[1], l.block[2]};
    d.args = l.args;
    d.args_size = l.args_size;
    return d;
}

}  // namespace adsm::server
