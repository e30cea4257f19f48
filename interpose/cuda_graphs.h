// CUDA graphs in a routed program.  A launch on a stream that is capturing
// is recorded into a graph, not run: on the cuda device it goes to the
// driver untouched, and the graph's launch releases shared memory as a
// kernel launch does (the next synchronisation acquires).  On sim and cpu,
// where the program's kernels are host functions the runtime runs itself,
// a captured launch could only run at capture: it is refused, and so are
// copies and fills of shared memory captured there.
#pragma once

namespace adsm::interpose {

// Whether `stream` (a CUstream or cudaStream_t) is capturing into a graph.
bool cuda_capturing(void *stream);

// A copy or fill with shared memory on a side, on a stream that is
// capturing, goes into the graph as the driver's node, not through the
// protocol at capture: on the cuda device the node works on the device
// copy at the shared address, which the graph's launch releases first and
// the next synchronisation acquires, as for the kernels captured with it.
// A shared side the call names as host memory must then be named as device
// memory (the driver would take the address for host memory, and copy
// nothing there).  On an emulated device a graph's nodes are out of the
// runtime's reach: refused, with a message.
enum class Captured { no, record, refuse };
Captured captured_work(void *stream, const char *fn);

// The refusal of captured work on an emulated device, said in the log.
void say_capture_unsupported(const char *fn);

}  // namespace adsm::interpose
