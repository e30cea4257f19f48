// lazy: one block per object.  At a call, objects the CPU wrote are copied
// to the device and every object is closed (Invalid); at a sync nothing
// moves.  The first CPU access to an object after that faults and fetches
// the whole object back.  Objects the CPU never touches never move.
#include "protocols/block_protocol.h"

namespace adsm {
namespace {

// Which objects were written: the kernel says, or the first write to each
// faults.  Nothing is fetched ahead.
BlockPolicy lazy_policy(const ProtocolEnv &env) {
    return {.whole_object = true, .writes = env.tracker ? track_written_blocks(env.tracker) : fault_on_first_write()};
}

class Lazy final : public BlockProtocol {
public:
    explicit Lazy(const ProtocolEnv &env) : BlockProtocol(env, lazy_policy(env)) {}
    const char *name() const override { return "lazy"; }
};

}  // namespace

std::unique_ptr<Protocol> make_lazy(const ProtocolEnv &env) { return std::make_unique<Lazy>(env); }

}  // namespace adsm
