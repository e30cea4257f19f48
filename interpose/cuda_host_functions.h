// Host functions in a routed CUDA program (cuLaunchHostFunc,
// cuStreamAddCallback, and the runtime's cudaLaunchHostFunc and
// cudaStreamAddCallback).  The driver would run one on a thread of its own
// once the stream's earlier work is done, and from there the runtime could
// not serve it: a host function may make no CUDA call, so it cannot acquire
// what the kernels before it wrote, and a CPU access the runtime took for a
// race would wait for kernels queued after it, which wait for it.  So once
// the runtime has started (and shared memory may exist), one enqueued on a
// stream that is not capturing runs at once, on the thread that enqueues it,
// after a synchronisation of that stream, which acquires: it sees what the
// kernels before it wrote, and every kernel enqueued after it is released
// after it returns, so it sees what it wrote.  Stream order holds; the
// enqueuing thread waits for the stream meanwhile, and a function that waits
// for a lock that thread holds, or for work it enqueues later, waits forever
// (README says so).
//
// One captured into a graph runs on the driver's thread at each of the
// graph's launches, marked so (support/driver_thread.h): a CPU access there
// that races the graph's kernels is reported and aborts, where waiting
// would never end (the kernels' completion waits for the function).
#pragma once

namespace adsm::interpose {

// Whether a host function enqueued on `stream` (a CUstream or cudaStream_t,
// the per-thread one already resolved) runs now, on the calling thread.
bool cuda_host_function_runs_here(void *stream);

// Whether one enqueued on `stream` is captured into a graph of a routed
// program whose runtime has started; the driver then gets, in its place,
// the function and data cuda_host_node gives for it.  Their record lives as
// long as the process: a graph may be launched any number of times, and the
// runtime is not told when it is destroyed.
bool cuda_host_function_captured(void *stream);
using HostFn = void (*)(void *);
struct CapturedHostFn {
    HostFn fn;
    void *data;
};
CapturedHostFn cuda_host_node(HostFn fn, void *data);

// Runs one that runs here: the synchronisation of the runtime's kernels
// (`ours`, which acquires) and of the stream (`theirs`), then `call` when
// both succeeded.  An error of either (a kernel's fault) is the result, and
// the function is not called, as when the driver finds its context's error
// at the call: a CUDA runtime frees what it wrapped a callback in when the
// call fails, so the two never go together.
template <class Result, class Ours, class Theirs, class Call>
Result run_host_function_now(Result ok, Ours &&ours, Theirs &&theirs, Call &&call) {
    Result mine = ours();
    Result stream = theirs();
    Result r = mine != ok ? mine : stream;
    if (r == ok) call();
    return r;
}

}  // namespace adsm::interpose
