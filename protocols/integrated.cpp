// integrated: the device works on the host's own pages, so there is never
// anything to copy or to protect.  Chosen automatically for integrated
// devices, whatever ADSM_PROTOCOL says.
#include <sys/mman.h>

#include "protocols/protection.h"
#include "protocols/protocol.h"

namespace adsm {
namespace {

class Integrated final : public HostCopyProtocol {
public:
    explicit Integrated(const ProtocolEnv &env) : env_(env) {}
    const char *name() const override { return "integrated"; }
    bool moves_data() const override { return false; }
    Status on_alloc(SharedObject &r, bool) override { return protect_range(r.host, r.span, PROT_READ | PROT_WRITE); }
    void on_free(SharedObject &) override {}
    Status release(ReleaseGroup &) override { return adsmSuccess; }
    Status acquire(ReleaseGroup &) override { return adsmSuccess; }
    Status release_object(SharedObject &, bool) override { return adsmSuccess; }
    Status acquire_object(SharedObject &, bool) override { return adsmSuccess; }
    // One copy, in memory every device and the CPU use: nothing moves.
    Status settle_on_device(SharedObject &) override { return adsmSuccess; }
    Status evict(SharedObject &) override { return adsmSuccess; }
    Status fetch_range(SharedObject &, size_t, size_t) override { return adsmSuccess; }

private:
    ProtocolEnv env_;
};

}  // namespace

std::unique_ptr<Protocol> make_integrated(const ProtocolEnv &env) { return std::make_unique<Integrated>(env); }

}  // namespace adsm
