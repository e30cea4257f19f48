// adsm-device-server: serves an accelerator to adsm programs on other
// machines (ADSM_DEVICE=remote) over libfabric.  Each client is
// authenticated with the shared key before anything else, gets device
// memory of its own at its own window addresses, and is served on a thread
// of its own (with a process of its own for back-ends other than sim); one
// that misbehaves or goes away is dropped and its memory freed, the others
// carry on.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "backend/remote/fabric.h"
#include "backend/remote/handshake.h"
#include "backend/remote/key_file.h"
#include "device_server/kernels.h"
#include "device_server/options.h"
#include "device_server/session.h"
#include "device_server/worker.h"
#include "support/module_file.h"

namespace {

std::atomic<bool> g_stopping{false};

void on_stop_signal(int) { g_stopping.store(true); }

}  // namespace

int main(int argc, char **argv) {
    using namespace adsm;
    server::Options options;
    std::string error;
    bool help = false;
    if (!server::parse_options(argc, argv, &options, &error, &help)) {
        fprintf(stderr, "adsm-device-server: %s\n%s", error.c_str(), server::usage());
        return 2;
    }
    if (help) {
        fputs(server::usage(), stdout);
        return 0;
    }
    if (options.worker) return server::run_worker(options);
    for (const std::string &m : options.modules) {
        std::vector<char> image;
        if (read_module_file(m.c_str(), &image) != adsmSuccess) {
            fprintf(stderr, "adsm-device-server: --modules: %s\n", last_detail());
            return 2;
        }
    }
    std::string key;
    if (remote::load_key(options.key.c_str(), &key) != adsmSuccess) {
        fprintf(stderr, "adsm-device-server: %s\n", last_detail());
        return 2;
    }
    if (!server::load_kernel_libraries(options.kernels, &error)) {
        fprintf(stderr, "adsm-device-server: %s\n", error.c_str());
        return 2;
    }
    std::unique_ptr<remote::Listener> listener;
    if (remote::Listener::open(options.address, options.port, options.provider, &listener) != adsmSuccess) {
        fprintf(stderr, "adsm-device-server: %s\n", last_detail());
        return 1;
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    printf("listening on %s:%d\n", options.address.c_str(), listener->port());
    fflush(stdout);

    struct Running {
        std::thread thread;
        std::atomic<bool> authenticating{true};
        std::atomic<bool> done{false};
    };
    std::list<Running> sessions;
    // Sessions that ended are collected whenever the loop comes round, and
    // before a new connection is looked at.
    auto reap = [&sessions] {
        for (auto it = sessions.begin(); it != sessions.end();) {
            if (it->done.load()) {
                it->thread.join();
                it = sessions.erase(it);
            } else {
                ++it;
            }
        }
    };
    // Only authenticated clients count against --max-clients: connections
    // that never prove the key cannot take their places.  Those still in
    // the handshake are bounded apart, so that strangers cannot make the
    // server start a thread per connection without end.
    std::atomic<unsigned> serving{0};
    const size_t max_handshakes = std::max<size_t>(16, options.max_clients);
    while (!g_stopping.load()) {
        reap();
        std::unique_ptr<remote::Endpoint> ep;
        if (listener->accept(&ep, 200) != adsmSuccess) {
            server::log_line("%s", last_detail());
            continue;
        }
        if (!ep) continue;
        reap();
        size_t authenticating = 0;
        for (const Running &r : sessions) authenticating += r.authenticating.load();
        if (authenticating >= max_handshakes) {
            server::log_line("closing %s: %zu connections are proving the key already", ep->peer().c_str(),
                             authenticating);
            continue;
        }
        Running &r = sessions.emplace_back();
        try {
            r.thread = std::thread([&options, &key, &r, &serving, e = std::move(ep)]() mutable {
                server::Session s(options, key, std::move(e));
                const bool known = s.authenticate();
                r.authenticating.store(false);
                if (known) {
                    if (serving.fetch_add(1) < options.max_clients) s.serve(g_stopping);
                    else s.turn_away(options.max_clients);  // (authenticated first: a stranger learns nothing of the load)
                    serving.fetch_sub(1);
                }
                r.done.store(true);
            });
        } catch (const std::system_error &e) {
            server::log_line("closing a connection: no thread to serve it (%s)", e.what());
            sessions.pop_back();
        }
    }
    server::log_line("stopping");
    for (Running &r : sessions) r.thread.join();
    return 0;
}
