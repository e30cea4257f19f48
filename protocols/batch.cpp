// batch: no faults and no state beyond "who has the newest copy".  At each
// call every object not yet on the device is copied there whole; at each
// sync every object goes back whole.  The baseline every other protocol is
// measured against: simple, correct, wasteful.
#include <sys/mman.h>

#include "backend/device.h"
#include "protocols/protection.h"
#include "protocols/protocol.h"

namespace adsm {
namespace {

class Batch final : public HostCopyProtocol {
public:
    explicit Batch(const ProtocolEnv &env) : env_(env) {}
    const char *name() const override { return "batch"; }

    Status on_alloc(SharedObject &r, bool) override {
        r.on_device = false;
        return protect_range(r.host, r.span, PROT_READ | PROT_WRITE);
    }

    void on_free(SharedObject &) override {}

    Status release(ReleaseGroup &c) override {
        for (SharedObject *r = c.objects; r; r = r->next)
            if (Status s = release_object(*r, r->read_mostly); s != adsmSuccess) return s;
        return adsmSuccess;
    }

    // A read-only object's host copy stays the one the CPU uses.
    Status release_object(SharedObject &r, bool read_only) override {
        if (Status s = settle_on_device(r); s != adsmSuccess) return s;
        if (!read_only) r.on_device = true;  // the kernels' from here on
        return adsmSuccess;
    }
    Status acquire_object(SharedObject &r, bool written) override { return written ? evict(r) : adsmSuccess; }
    Status fetch_range(SharedObject &r, size_t, size_t) override { return evict(r); }  // objects move whole

    Status acquire(ReleaseGroup &c) override {
        for (SharedObject *r = c.objects; r; r = r->next)
            if (Status s = evict(*r); s != adsmSuccess) return s;
        return adsmSuccess;
    }

    // Outside a kernel's use the host copy stays the one the CPU writes,
    // unseen (nothing is protected): the device gets a copy, and the next
    // release sends the object again.
    Status settle_on_device(SharedObject &r) override {
        if (r.on_device) return adsmSuccess;
        if (Status s = r.device->copy_to_device(r.dev, r.alias, r.size); s != adsmSuccess) return s;
        r.stats.moved(true, r.size);
        return adsmSuccess;
    }

    // Batch's acquire of one object: the host copy is all there is to use.
    Status evict(SharedObject &r) override {
        if (!r.on_device) return adsmSuccess;
        if (Status s = r.device->copy_to_host(r.alias, r.dev, r.size); s != adsmSuccess) return s;
        r.stats.moved(false, r.size);
        r.on_device = false;
        return adsmSuccess;
    }

    // An object still on the device (a call without its sync) is read there.
    Status read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) override {
        if (r.on_device) return r.device->copy_to_host(dst, r.dev + off, len);
        return HostCopyProtocol::read_out(r, off, dst, len, ticket);
    }

    Status snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held) override {
        if (r.on_device) return r.device->copy_to_host(dst, r.dev, r.size);
        return Protocol::snapshot(r, dst, held);
    }

private:
    ProtocolEnv env_;
};

}  // namespace

std::unique_ptr<Protocol> make_batch(const ProtocolEnv &env) { return std::make_unique<Batch>(env); }

}  // namespace adsm
