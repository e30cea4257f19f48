#include "device_server/worker_hosting.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "backend/remote/handshake.h"
#include "device_server/worker.h"
#include "os/vm.h"

namespace adsm::server {

WorkerHosting::~WorkerHosting() {
    if (socket_ >= 0) close(socket_);  // the worker sees the end and exits
    if (pid_ > 0) {
        // A worker stuck in its back-end (a hung GPU) is not waited for long.
        for (int i = 0; i < 200; ++i) {
            if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
                pid_ = -1;
                break;
            }
            usleep(10 * 1000);
        }
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    if (memory_) munmap(memory_, size_);
    if (memfd_ >= 0) close(memfd_);
}

Status WorkerHosting::start(uint64_t size) {
    memfd_ = os::memfd_sized("adsm-client-memory", size);
    if (memfd_ < 0) return fail(adsmErrorInitialization, "no memory for the client's window: %s", strerror(-memfd_));
    void *m = os::map_shared(memfd_, 0, size, PROT_READ | PROT_WRITE);
    if (m == MAP_FAILED) return fail(adsmErrorInitialization, "cannot map the client's window: %s", strerror(errno));
    memory_ = static_cast<uint8_t *>(m);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(adsmErrorInitialization, "no socket for the client's device process: %s", strerror(errno));
    // Everything the child needs is made before the fork: other threads of
    // the server may hold locks it would wait for.
    std::vector<std::string> args{"adsm-device-server", "--worker", "--device", options_.device, "--memory",
                                  std::to_string(options_.memory)};
    for (const std::string &k : options_.kernels) args.insert(args.end(), {"--kernels", k});
    for (const std::string &m : options_.modules) args.insert(args.end(), {"--modules", m});
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
        int s = fcntl(sv[1], F_DUPFD, 10), fd = fcntl(memfd_, F_DUPFD, 10);
        if (s < 0 || fd < 0 || dup2(s, kWorkerSocketFd) < 0 || dup2(fd, kWorkerMemoryFd) < 0) _exit(126);
#ifdef SYS_close_range
        syscall(SYS_close_range, kWorkerMemoryFd + 1, ~0u, 0);  // other clients' connections are not its own
#endif
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    int e = errno;
    close(sv[1]);
    socket_ = sv[0];
    if (pid_ < 0) return fail(adsmErrorInitialization, "cannot start the client's device process: %s", strerror(e));
    return adsmSuccess;
}

Status WorkerHosting::worker_ended() {
    if (!ended_) {
        ended_ = true;
        int st = 0;
        if (pid_ > 0 && waitpid(pid_, &st, 0) == pid_) {
            pid_ = -1;
            if (WIFSIGNALED(st))
                return fail(adsmErrorDeviceLost, "the client's device process (%s) ended by signal %d (%s)",
                            options_.device.c_str(), WTERMSIG(st), strsignal(WTERMSIG(st)));
            return fail(adsmErrorDeviceLost, "the client's device process (%s) ended with status %d",
                        options_.device.c_str(), WEXITSTATUS(st));
        }
    }
    return fail(adsmErrorDeviceLost, "the client's device process (%s) has ended", options_.device.c_str());
}

Status WorkerHosting::ask(remote::Op op, const void *body, size_t body_size, remote::Reply *reply,
                          const std::function<void()> &waiting) {
    if (ended_) return worker_ended();
    struct {
        remote::RequestHeader h;
        uint8_t body[sizeof(remote::Request::body)];
    } msg;
    msg.h = {remote::kWireMagic, op, ++seq_, static_cast<uint32_t>(body_size), 0};
    memcpy(msg.body, body, body_size);
    if (send(socket_, &msg, sizeof msg.h + body_size, MSG_NOSIGNAL) < 0) return worker_ended();
    for (;;) {
        pollfd p{socket_, POLLIN, 0};
        int n = poll(&p, 1, 50);
        if (n < 0 && errno != EINTR) return worker_ended();
        if (n <= 0) {
            if (waiting) waiting();
            continue;
        }
        ssize_t got = recv(socket_, inbox_.get(), sizeof(remote::SpanBatch), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got > 0 && keep_spans(inbox_.get(), static_cast<size_t>(got))) continue;
        if (got != static_cast<ssize_t>(sizeof *reply)) return worker_ended();
        memcpy(reply, inbox_.get(), sizeof *reply);
        if (reply->seq != seq_) return worker_ended();
        break;
    }
    if (reply->status == adsmSuccess) return adsmSuccess;
    reply->message[sizeof reply->message - 1] = '\0';
    return fail(static_cast<Status>(reply->status), "%s", reply->message);
}

Status WorkerHosting::attach(uint64_t base, uint64_t size, remote::Reply *reply) {
    if (Status s = start(size); s != adsmSuccess) return s;
    base_ = base;
    size_ = size;
    remote::AttachBody a{base, size};
    if (Status s = ask(remote::Op::attach, &a, sizeof a, reply); s != adsmSuccess) return s;
    staged_ = (reply->flags & remote::kStagedMemory) != 0;
    return adsmSuccess;
}

Status WorkerHosting::range(remote::Op op, uint64_t addr, uint64_t len) {
    remote::RangeBody b{addr, len};
    remote::Reply r{};
    return ask(op, &b, sizeof b, &r);
}

Status WorkerHosting::commit(uint64_t addr, uint64_t len) { return range(remote::Op::commit, addr, len); }

void WorkerHosting::decommit(uint64_t addr, uint64_t len) {
    (void)range(remote::Op::decommit, addr, len);  // a worker that ended holds nothing
    // Its pages go, and read as zeros if committed again.
    (void)fallocate(memfd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(addr - base_),
                    static_cast<off_t>(len));
}

Status WorkerHosting::fill(uint64_t addr, uint8_t value, uint64_t len) {
    remote::FillBody f{addr, len, value, 0};
    remote::Reply r{};
    return ask(remote::Op::fill, &f, sizeof f, &r);
}

Status WorkerHosting::push(uint64_t addr, uint64_t len) {
    if (!staged_) return nothing_staged();
    return range(remote::Op::push, addr, len);
}

Status WorkerHosting::pull(uint64_t addr, uint64_t len) {
    if (!staged_) return nothing_staged();
    return range(remote::Op::pull, addr, len);
}

Status WorkerHosting::module_part(const remote::ModuleBody &m, bool) {
    remote::Reply r{};
    return ask(remote::Op::module, &m, remote::kModuleFixedBytes + m.length, &r);
}

Status WorkerHosting::function(const remote::FunctionBody &f, remote::Reply *reply) {
    return ask(remote::Op::function, &f, sizeof f, reply);
}

Status WorkerHosting::declare(const remote::DeclareBody &d) {
    remote::Reply r{};
    return ask(remote::Op::declare, &d, sizeof d, &r);
}

Status WorkerHosting::launch(const remote::LaunchBody &l) {
    remote::Reply r{};
    return ask(remote::Op::launch, &l, remote::kLaunchFixedBytes + l.args_size, &r);
}

bool WorkerHosting::keep_spans(const uint8_t *msg, size_t n) {
    using remote::SpanBatch;
    int32_t status;
    uint64_t seq;
    uint32_t count;
    if (n < offsetof(SpanBatch, spans)) return false;
    memcpy(&status, msg + offsetof(SpanBatch, status), sizeof status);
    memcpy(&seq, msg + offsetof(SpanBatch, seq), sizeof seq);
    memcpy(&count, msg + offsetof(SpanBatch, count), sizeof count);
    // (Bounded: a worker that kept sending spans, taken over by a kernel
    // of its client's, would grow the server without end; it is dropped.)
    constexpr size_t kMostKept = 256 * remote::kSpansPerBatch;
    if (status != remote::kSpans || seq != seq_ || count > remote::kSpansPerBatch ||
        n != offsetof(SpanBatch, spans) + count * sizeof(remote::WireSpan) || spans_.size() + count > kMostKept)
        return false;
    const auto *spans = reinterpret_cast<const remote::WireSpan *>(msg + offsetof(SpanBatch, spans));
    spans_.insert(spans_.end(), spans, spans + count);
    return true;
}

void WorkerHosting::abandon() {
    if (pid_ > 0) kill(pid_, SIGKILL);  // (its socket closes: the wait under way ends)
}

Status WorkerHosting::sync(uint32_t stream, const std::function<void()> &waiting) {
    // The spans are the worker's to keep until asked for: each sync takes
    // them, and the session sends them on when its client asked.
    spans_.clear();
    remote::SyncBody b{stream, 0, remote::kSendSpans, 0};
    remote::Reply r{};
    return ask(remote::Op::sync, &b, sizeof b, &r, waiting);
}

void WorkerHosting::take_spans(const SpanSeen &seen) {
    for (remote::WireSpan &w : spans_) {
        w.kernel[sizeof w.kernel - 1] = '\0';
        seen(w.kernel, w.stream, w.start_ago_ns, w.end_ago_ns, w.failed != 0);
    }
    spans_.clear();
}

}  // namespace adsm::server
