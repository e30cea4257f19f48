// The marker threads and the work they share while the world is stopped:
// marking (mark.h), and the passes over every page that come before and
// after it, a chunk at a time to whichever marker is free.  The collecting
// thread is marker 0 and takes its share of each job.
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gc/collector.h"
#include "gc/proc_self.h"
#include "os/futex.h"
#include "os/raw_syscall.h"
#include "support/log.h"

namespace adsm::gc {

namespace {

void add_thread_cpus(void *arg, pid_t tid) {
    auto *set = static_cast<cpu_set_t *>(arg);
    cpu_set_t cpus;
    if (sched_getaffinity(tid, sizeof cpus, &cpus) == 0) CPU_OR(set, set, &cpus);
}

}  // namespace

// The CPUs the program's threads may run on, together: a program that pins
// each thread to a CPU of its own (OpenMP's proc_bind, MPI launchers) still
// gets markers on all of its CPUs, where the collecting thread's own set
// (one CPU) would put every marker there; one restricted as a whole
// (taskset) keeps them inside that set.
void Collector::program_cpus(cpu_set_t *out) {
    CPU_ZERO(out);
    if (for_each_thread(&add_thread_cpus, out) < 0 || CPU_COUNT(out) == 0) add_thread_cpus(out, 0);
}

void *Collector::marker_main(void *arg) {
    auto *self = static_cast<Collector *>(arg);
    unsigned me = self->markers_up_.fetch_add(1) + 1;
    self->marker_tids_[me] = static_cast<pid_t>(os::raw_syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "adsm-marker");  // (top -H, gdb, tests)
    // Counted only once its id is known: the collector exempts markers from
    // the stop by id, and a stopped marker never finishes its share.
    self->markers_ready_.fetch_add(1, std::memory_order_release);
    uint32_t seen = 0;
    for (;;) {
        uint32_t e;
        while ((e = self->job_epoch_.load(std::memory_order_acquire)) == seen) os::futex_wait(&self->job_epoch_, seen);
        seen = e;
        self->do_job(me);
        self->markers_done_.fetch_add(1, std::memory_order_acq_rel);
        os::futex_wake(reinterpret_cast<std::atomic<uint32_t> *>(&self->markers_done_));
    }
    return nullptr;
}

Status Collector::start_markers() {
    pid_t pid = getpid();
    if (!markers_.empty() && markers_pid_ == pid) return adsmSuccess;
    // First use, or a fork child: the parent's markers are not here, and
    // what they were marking while the world ran is lost with them.
    if (marking_) {
        marking_ = false;
        need_full_ = true;
    }
    assisting_.store(false, std::memory_order_relaxed);  // (a helper of the parent's)
    pool_.reset();
    markers_.clear();
    marker_tids_.assign(config_.markers, 0);
    for (unsigned i = 0; i < config_.markers; ++i) markers_.push_back(std::make_unique<Marker>(heap_.map(), pool_));
    markers_up_.store(0);
    markers_ready_.store(0);
    markers_pid_ = pid;
    marker_threads_.clear();
    steered_from_ = -1;
    program_cpus(&marker_cpus_);
    for (unsigned i = 1; i < config_.markers; ++i) {
        pthread_t t;
        if (pthread_create(&t, nullptr, &Collector::marker_main, this) != 0) {
            ADSM_LOG(warn, "collector: could not start marker thread %u; marking with %u", i, i);
            markers_.resize(i);
            marker_tids_.resize(i);
            break;
        }
        pthread_detach(t);
        // (Else they keep this thread's CPUs, which they inherit.)
        if (CPU_COUNT(&marker_cpus_)) (void)pthread_setaffinity_np(t, sizeof marker_cpus_, &marker_cpus_);
        marker_threads_.push_back(t);
    }
    tallies_ = std::vector<SweepTally>(markers_.size());
    while (markers_ready_.load(std::memory_order_acquire) + 1 < markers_.size()) sched_yield();
    return adsmSuccess;
}

// Keeps the marker threads off the collecting thread's CPU.  A woken
// thread tends to start on its waker's CPU and stay there for
// milliseconds: with two CPUs, a sixth of mttrees' collections marked with
// both markers on one CPU, the other idle, and took twice as long.
void Collector::steer_markers() {
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu == steered_from_ || cpu >= CPU_SETSIZE) return;
    steered_from_ = cpu;
    cpu_set_t others = marker_cpus_;
    CPU_CLR(cpu, &others);
    // (Markers on every CPU allowed when that leaves none; a failure only costs speed.)
    const cpu_set_t &use = CPU_COUNT(&others) ? others : marker_cpus_;
    if (!CPU_COUNT(&use)) return;
    for (pthread_t t : marker_threads_) (void)pthread_setaffinity_np(t, sizeof use, &use);
}

void Collector::run_on_markers(Job job) {
    job_ = job;
    next_chunk_.store(0, std::memory_order_relaxed);
    markers_done_.store(0, std::memory_order_relaxed);
    if (job == Job::mark) pool_.begin(static_cast<unsigned>(markers_.size()));
    if (markers_.size() > 1) {
        steer_markers();
        job_epoch_.fetch_add(1, std::memory_order_release);
        os::futex_wake(&job_epoch_);
    }
    do_job(0);
    wait_for_markers();
}

void Collector::mark_in_background() {
    job_ = Job::mark;
    markers_done_.store(0, std::memory_order_relaxed);
    pool_.begin(static_cast<unsigned>(markers_.size() - 1));
    job_epoch_.fetch_add(1, std::memory_order_release);
    os::futex_wake(&job_epoch_);
}

void Collector::wait_for_markers() {
    auto *done = reinterpret_cast<std::atomic<uint32_t> *>(&markers_done_);
    uint32_t d;
    while ((d = done->load(std::memory_order_acquire)) + 1 < markers_.size()) os::futex_wait(done, d, 1000000);
}

void Collector::do_job(unsigned me) {
    const std::vector<Chunk *> &chunks = heap_.chunks();
    auto each_chunk = [&](auto &&f) {
        for (size_t i; (i = next_chunk_.fetch_add(1, std::memory_order_relaxed)) < chunks.size();) f(*chunks[i]);
    };
    switch (job_) {
    case Job::mark:
        markers_[me]->drain();
        return;
    case Job::snapshot_full:
    case Job::snapshot_minor:
        each_chunk([&](Chunk &c) { snapshot_chunk(c, job_ == Job::snapshot_full); });
        return;
    case Job::sweep: {
        SweepTally &t = tallies_[me];
        t.freed = t.live = 0;
        t.emptied.clear();
        t.dead.clear();
        each_chunk([&](Chunk &c) { sweep_chunk(c, t); });
        return;
    }
    }
}

void Collector::mark_all() { run_on_markers(Job::mark); }

}  // namespace adsm::gc
