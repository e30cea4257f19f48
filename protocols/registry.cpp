// The one list of coherence protocols.  Adding a protocol: write its file,
// add its line here.
#include <cstring>

#include "backend/device.h"
#include "protocols/protocol.h"

namespace adsm {

std::unique_ptr<Protocol> make_batch(const ProtocolEnv &env);
std::unique_ptr<Protocol> make_lazy(const ProtocolEnv &env);
std::unique_ptr<Protocol> make_rolling(const ProtocolEnv &env);
std::unique_ptr<Protocol> make_delta(const ProtocolEnv &env);
std::unique_ptr<Protocol> make_integrated(const ProtocolEnv &env);
std::unique_ptr<Protocol> make_placed(const ProtocolEnv &env, std::unique_ptr<Protocol> inner);

namespace {
struct Entry {
    ProtocolInfo info;
    std::unique_ptr<Protocol> (*make)(const ProtocolEnv &);
};

const Entry kEntries[] = {
    {{"batch", "copy every object to the device at each call and back at each sync", false}, make_batch},
    {{"lazy", "copy written objects at a call; fetch an object when the CPU first touches it after a sync", true},
     make_lazy},
    {{"rolling", "lazy per block, and send the oldest dirty blocks ahead in the background", true}, make_rolling},
    {{"delta", "send only written pages; fetch ahead what the CPU read after earlier syncs", true}, make_delta},
};
}  // namespace

const std::vector<ProtocolInfo> &protocols() {
    static const std::vector<ProtocolInfo> list = [] {
        std::vector<ProtocolInfo> v;
        for (const Entry &e : kEntries) v.push_back(e.info);
        return v;
    }();
    return list;
}

const ProtocolInfo *find_protocol(const std::string &name) {
    for (const Entry &e : kEntries)
        if (name == e.info.name) return &e.info;
    return nullptr;
}

Status make_protocol(const std::string &name, const ProtocolEnv &env, std::unique_ptr<Protocol> *out) {
    const Entry *found = nullptr;
    std::string known;
    for (const Entry &e : kEntries) {
        if (name == e.info.name) found = &e;
        known += known.empty() ? "" : ", ";
        known += e.info.name;
    }
    if (!found) return fail(adsmErrorInitialization, "ADSM_PROTOCOL=%s is not a protocol: expected one of %s", name.c_str(), known.c_str());
    // Objects placed outside device memory (adsmAllocEx), or on an
    // integrated device of a mixed list, keep their own coherence around
    // the chosen protocol's.
    bool one_memory = env.device->integrated() && all_integrated(env.devices);
    *out = one_memory ? make_integrated(env) : make_placed(env, found->make(env));
    return adsmSuccess;
}

}  // namespace adsm
