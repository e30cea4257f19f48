// What RMA itself reaches on a libfabric provider, measured the way
// fabtests' fi_rma_bw does (which Debian does not package): one connected
// FI_EP_MSG endpoint, the peer's memory registered under a key, a window of
// fi_write (or fi_read) operations of one size kept in flight, bytes over
// the time from the first post to the last completion.  Plain libfabric
// calls only, none of the runtime's code: adsm-bench-remote runs it beside
// the remote device, whose transfers it bounds.
//
//   adsm-bench-rma-baseline serve PORT PROVIDER
//   adsm-bench-rma-baseline measure HOST PORT PROVIDER SIZE WINDOW
// `serve` prints its port once it listens and serves one client; `measure`
// prints write_gbps=... read_gbps=... for 64 MiB moved 10 times each way.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr uint64_t kKey = 0x5eed;
constexpr size_t kRegion = 64u << 20;
constexpr int kRounds = 10;

[[noreturn]] void die(const char *what, long r) {
    fprintf(stderr, "adsm-bench-rma-baseline: %s: %s\n", what, fi_strerror(static_cast<int>(-r)));
    exit(1);
}

void check(const char *what, long r) {
    if (r) die(what, r);
}

fi_info *hints(const char *provider) {
    fi_info *h = fi_allocinfo();
    h->ep_attr->type = FI_EP_MSG;
    h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    h->mode = FI_CONTEXT;
    h->domain_attr->mr_mode = 0;  // offsets and keys of our choosing, as the remote device uses
    h->addr_format = FI_SOCKADDR_IN;
    if (*provider) h->fabric_attr->prov_name = strdup(provider);
    return h;
}

struct Link {
    fid_fabric *fabric = nullptr;
    fid_domain *domain = nullptr;
    fid_eq *eq = nullptr;
    fid_cq *cq = nullptr;
    fid_ep *ep = nullptr;

    void open(fi_info *info, fid_fabric *f) {
        fabric = f;
        check("fi_domain", fi_domain(fabric, info, &domain, nullptr));
        fi_eq_attr ea{};
        ea.wait_obj = FI_WAIT_UNSPEC;
        check("fi_eq_open", fi_eq_open(fabric, &ea, &eq, nullptr));
        fi_cq_attr ca{};
        ca.format = FI_CQ_FORMAT_CONTEXT;
        ca.wait_obj = FI_WAIT_UNSPEC;
        ca.size = 1024;
        check("fi_cq_open", fi_cq_open(domain, &ca, &cq, nullptr));
        check("fi_endpoint", fi_endpoint(domain, info, &ep, nullptr));
        check("fi_ep_bind", fi_ep_bind(ep, &eq->fid, 0));
        check("fi_ep_bind", fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
        check("fi_enable", fi_enable(ep));
    }
    void expect(uint32_t wanted, const char *what) {
        fi_eq_cm_entry e;
        uint32_t event = 0;
        ssize_t r = fi_eq_sread(eq, &event, &e, sizeof e, 10000, 0);
        if (r < 0) die(what, r);
        if (event != wanted) die(what, -FI_EOTHER);
    }
};

int serve(const char *port, const char *provider) {
    fi_info *info = nullptr;
    check("fi_getinfo", fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", port, FI_SOURCE, hints(provider), &info));
    fid_fabric *fabric;
    check("fi_fabric", fi_fabric(info->fabric_attr, &fabric, nullptr));
    fid_eq *peq;
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    check("fi_eq_open", fi_eq_open(fabric, &ea, &peq, nullptr));
    fid_pep *pep;
    check("fi_passive_ep", fi_passive_ep(fabric, info, &pep, nullptr));
    check("fi_pep_bind", fi_pep_bind(pep, &peq->fid, 0));
    check("fi_listen", fi_listen(pep));
    sockaddr_in bound{};
    size_t len = sizeof bound;
    check("fi_getname", fi_getname(&pep->fid, &bound, &len));
    printf("listening on port:%u\n", ntohs(bound.sin_port));
    fflush(stdout);
    fi_eq_cm_entry req;
    uint32_t event = 0;
    ssize_t r = fi_eq_sread(peq, &event, &req, sizeof req, 30000, 0);
    if (r < 0 || event != FI_CONNREQ) die("waiting for the client", r < 0 ? r : -FI_EOTHER);
    Link l;
    l.open(req.info, fabric);
    std::vector<uint8_t> memory(kRegion, 1);
    fid_mr *mr;
    check("fi_mr_reg",
          fi_mr_reg(l.domain, memory.data(), kRegion, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, kKey, 0, &mr, nullptr));
    check("fi_accept", fi_accept(l.ep, nullptr, 0));
    l.expect(FI_CONNECTED, "accepting");
    // Until the client hangs up, drive the provider's progress (tcp moves
    // a peer's RMA only when this side polls), as the device server does.
    for (;;) {
        fi_eq_cm_entry e;
        r = fi_eq_read(l.eq, &event, &e, sizeof e, 0);
        if ((r >= 0 && event == FI_SHUTDOWN) || (r < 0 && r != -FI_EAGAIN)) break;
        fi_cq_entry entry;
        fi_cq_sread(l.cq, &entry, 1, nullptr, 100);
    }
    return 0;
}

// Seconds for kRounds x kRegion bytes in `size` operations, `window` in flight.
double move(Link &l, bool write, uint8_t *local, size_t size, size_t window) {
    std::vector<fi_context> ctx(window);
    const size_t ops = kRounds * (kRegion / size);
    auto t0 = std::chrono::steady_clock::now();
    size_t posted = 0, done = 0;
    while (done < ops) {
        while (posted < ops && posted - done < window) {
            const uint64_t at = (posted * size) % kRegion;
            ssize_t r = write ? fi_write(l.ep, local + at, size, nullptr, 0, at, kKey, &ctx[posted % window])
                              : fi_read(l.ep, local + at, size, nullptr, 0, at, kKey, &ctx[posted % window]);
            if (r == -FI_EAGAIN) break;
            check(write ? "fi_write" : "fi_read", r);
            ++posted;
        }
        // Waiting blocked (fi_rma_bw's -c sread), not spinning: on loopback
        // a spinning client takes the CPU the other side's progress needs.
        fi_cq_entry entries[64];
        ssize_t n = fi_cq_sread(l.cq, entries, 64, nullptr, 1000);
        if (n > 0) done += static_cast<size_t>(n);
        else if (n != -FI_EAGAIN) die("fi_cq_sread", n);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int measure(const char *host, const char *port, const char *provider, size_t size, size_t window) {
    if (size == 0 || kRegion % size || window == 0) {
        fprintf(stderr, "adsm-bench-rma-baseline: SIZE must divide 64 MiB, WINDOW at least 1\n");
        return 2;
    }
    fi_info *info = nullptr;
    check("fi_getinfo", fi_getinfo(FI_VERSION(1, 9), host, port, 0, hints(provider), &info));
    fid_fabric *fabric;
    check("fi_fabric", fi_fabric(info->fabric_attr, &fabric, nullptr));
    Link l;
    l.open(info, fabric);
    check("fi_connect", fi_connect(l.ep, info->dest_addr, nullptr, 0));
    l.expect(FI_CONNECTED, "connecting");
    std::vector<uint8_t> local(kRegion, 2);
    move(l, true, local.data(), size, window);  // warm: the provider's buffers and the pages
    const double w = move(l, true, local.data(), size, window);
    const double r = move(l, false, local.data(), size, window);
    const double bytes = double(kRounds) * kRegion;
    printf("write_gbps=%.3f read_gbps=%.3f\n", bytes / w / 1e9, bytes / r / 1e9);
    fi_shutdown(l.ep, 0);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "serve")) return serve(argv[2], argv[3]);
    if (argc == 7 && !strcmp(argv[1], "measure"))
        return measure(argv[2], argv[3], argv[4], strtoull(argv[5], nullptr, 0), strtoull(argv[6], nullptr, 0));
    fprintf(stderr,
            "usage: adsm-bench-rma-baseline serve PORT PROVIDER\n"
            "       adsm-bench-rma-baseline measure HOST PORT PROVIDER SIZE WINDOW\n"
            "(PROVIDER \"\" lets libfabric pick, as the remote device does)\n");
    return 2;
}
