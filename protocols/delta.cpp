// delta: our protocol.  Block states as in rolling, but
//  * a release sends only the pages the CPU wrote, not whole blocks: with
//    userfaultfd tracking it learns them from the kernel without a single
//    write fault; without it, a block's first written page is tracked alone
//    and a second one makes the block go whole (never more than two faults);
//  * it learns which blocks the CPU reads after each sync and, at the next
//    sync, fetches them in the background, so that repeated read patterns (a
//    stencil's halo, a histogram's bins) find their data already there; a
//    prediction the CPU does not use is dropped at once.
// It wins where writes are sparse inside blocks and where what the CPU reads
// after a sync repeats from one iteration to the next.
#include "protocols/block_protocol.h"

namespace adsm {
namespace {

// Blocks of ADSM_BLOCK_SIZE.  Written pages: the kernel says, or each page's
// first write faults (and a block's second opens it whole).  Fetched ahead:
// what the CPU read after earlier syncs.
BlockPolicy delta_policy(const ProtocolEnv &env) {
    return {.writes = env.tracker ? track_written_pages(env.tracker) : fault_on_written_pages(),
            .reads = predict_repeated_reads()};
}

class Delta final : public BlockProtocol {
public:
    explicit Delta(const ProtocolEnv &env) : BlockProtocol(env, delta_policy(env)) {}
    const char *name() const override { return "delta"; }
};

}  // namespace

std::unique_ptr<Protocol> make_delta(const ProtocolEnv &env) { return std::make_unique<Delta>(env); }

}  // namespace adsm
