// lazy: one block per object.  At a call, objects the CPU wrote are copied
// to the device and every object is closed (Invalid); at a sync nothing
// moves.  The first CPU access to an object after that faults and fetches
// the whole object back.  Objects the CPU never touches never move.
#include "protocols/block_protocol.h"

namespace adsm {
namespace {

class Lazy final : public BlockProtocol {
public:
    explicit Lazy(const ProtocolEnv &env) : BlockProtocol(env, BlockPolicy{.whole_object = true}) {}
    const char *name() const override { return "lazy"; }
};

}  // namespace

std::unique_ptr<Protocol> make_lazy(const ProtocolEnv &env) { return std::make_unique<Lazy>(env); }

}  // namespace adsm
