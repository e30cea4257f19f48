// CUDA graphs in a routed program.  A launch on a stream that is capturing
// is recorded into a graph, not run: on the cuda device it goes to the
// driver untouched, and the graph's launch releases shared memory as a
// kernel launch does (the next synchronisation acquires).  On sim and cpu,
// where the program's kernels are host functions the runtime runs itself,
// a captured launch could only run at capture: it is refused.
#pragma once

namespace adsm::interpose {

// Whether `stream` (a CUstream or cudaStream_t) is capturing into a graph.
bool cuda_capturing(void *stream);

// The refusal of a captured launch on an emulated device, said in the log.
void say_capture_unsupported(const char *fn);

}  // namespace adsm::interpose
