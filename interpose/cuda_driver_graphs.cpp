// Graphs a routed program builds node by node (cuGraphAdd*Node, their
// SetParams, and the generic cuGraphAddNode): as for a captured graph
// (cuda_graphs.h), the graph's launch releases and the next
// synchronisation acquires, so on the cuda device kernel, copy and fill
// nodes work on the device copy at the shared address.  A copy node's
// shared side named as host memory is named as device memory (the silent
// trap otherwise: the driver copies nothing).  On an emulated device the
// runtime cannot run a graph's kernels or reach its copies: kernel nodes,
// and copy and fill nodes on shared memory, are refused with a message.
// Host nodes run marked as the driver's (cuda_host_functions.h).
#include "interpose/cuda_driver_common.h"
#include "interpose/cuda_graphs.h"
#include "interpose/cuda_host_functions.h"

using namespace adsm::interpose::cuda_driver;

#define CUDA_GRAPH_SYMBOLS(X)                                                                                    \
    X(cuGraphAddKernelNode)                                                                                      \
    X(cuGraphAddKernelNode_v2)                                                                                   \
    X(cuGraphKernelNodeSetParams)                                                                                \
    X(cuGraphKernelNodeSetParams_v2)                                                                             \
    X(cuGraphExecKernelNodeSetParams)                                                                            \
    X(cuGraphExecKernelNodeSetParams_v2)                                                                         \
    X(cuGraphAddMemcpyNode)                                                                                      \
    X(cuGraphMemcpyNodeSetParams)                                                                                \
    X(cuGraphExecMemcpyNodeSetParams)                                                                            \
    X(cuGraphAddMemsetNode)                                                                                      \
    X(cuGraphMemsetNodeSetParams)                                                                                \
    X(cuGraphExecMemsetNodeSetParams)                                                                            \
    X(cuGraphAddHostNode)                                                                                        \
    X(cuGraphHostNodeSetParams)                                                                                  \
    X(cuGraphExecHostNodeSetParams)                                                                              \
    X(cuGraphAddNode)                                                                                            \
    X(cuGraphAddNode_v2)                                                                                         \
    X(cuGraphNodeSetParams)                                                                                      \
    X(cuGraphExecNodeSetParams)

ADSM_GPU_FAMILY(cuda_graph_family, CUDA_GRAPH_SYMBOLS)

namespace {

namespace bridge = adsm::gpu_bridge;

// Whether the runtime takes part: routed, and started (a graph built
// before the first routed call holds no shared memory).
bool routed() { return adsm::interpose::gpu_routed(kApi) && bridge::started(); }

// A node the emulated device cannot serve: refused, with why.
CUresult refuse(const char *fn) {
    adsm::interpose::say_capture_unsupported(fn);
    return CUDA_ERROR_NOT_SUPPORTED;
}

// A kernel node: the program's own GPU code, on the cuda device only.
template <class Forward>
CUresult kernel_node(const char *fn, Forward &&forward) {
    if (!routed() || bridge::runs_program_kernels()) return forward();
    return refuse(fn);
}

// A copy node: `forward(params)` with the copy as the driver must see it.
template <class Forward>
CUresult copy_node(const char *fn, const CUDA_MEMCPY3D *c, Forward &&forward) {
    if (!routed() || !c || !copies_shared(*c)) return forward(c);
    if (!bridge::runs_program_kernels()) return refuse(fn);
    CUDA_MEMCPY3D named = *c;
    name_shared_as_device(&named);
    return forward(&named);
}

// A fill node: on the device copy, which the graph's launch releases first.
template <class Forward>
CUresult fill_node(const char *fn, CUdeviceptr dst, Forward &&forward) {
    if (!routed() || !bridge::is_shared(ptr(dst)) || bridge::runs_program_kernels()) return forward();
    return refuse(fn);
}

// A host node: its function runs marked as the driver's.
template <class Params, class Forward>
CUresult host_node(const Params *p, Forward &&forward) {
    if (!routed() || !p || !p->fn) return forward(p);
    Params marked = *p;
    auto node = adsm::interpose::cuda_host_node(p->fn, p->userData);
    marked.fn = node.fn;
    marked.userData = node.data;
    return forward(&marked);
}

// The generic node: as its kind's own call.
template <class Forward>
CUresult any_node(const char *fn, CUgraphNodeParams *p, Forward &&forward) {
    if (!p) return forward(p);
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return kernel_node(fn, [&] { return forward(p); });
    case CU_GRAPH_NODE_TYPE_MEMSET: return fill_node(fn, p->memset.dst, [&] { return forward(p); });
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return copy_node(fn, &p->memcpy.copyParams, [&](const CUDA_MEMCPY3D *c) {
            CUgraphNodeParams named = *p;
            named.memcpy.copyParams = *c;
            return forward(&named);
        });
    case CU_GRAPH_NODE_TYPE_HOST:
        return host_node(&p->host, [&](const CUDA_HOST_NODE_PARAMS_v2 *h) {
            CUgraphNodeParams marked = *p;
            marked.host = *h;
            return forward(&marked);
        });
    default: return forward(p);
    }
}

}  // namespace

CUDA_WRAPPER(cuGraphAddKernelNode, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    return kernel_node("cuGraphAddKernelNode", [&] { return FORWARD(cuGraphAddKernelNode, node, g, deps, ndeps, p); });
}
CUDA_WRAPPER(cuGraphAddKernelNode_v2, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             const CUDA_KERNEL_NODE_PARAMS *p) {
    return kernel_node("cuGraphAddKernelNode",
                       [&] { return FORWARD(cuGraphAddKernelNode_v2, node, g, deps, ndeps, p); });
}
CUDA_WRAPPER(cuGraphKernelNodeSetParams, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    return kernel_node("cuGraphKernelNodeSetParams", [&] { return FORWARD(cuGraphKernelNodeSetParams, node, p); });
}
CUDA_WRAPPER(cuGraphKernelNodeSetParams_v2, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p) {
    return kernel_node("cuGraphKernelNodeSetParams", [&] { return FORWARD(cuGraphKernelNodeSetParams_v2, node, p); });
}
CUDA_WRAPPER(cuGraphExecKernelNodeSetParams, CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    return kernel_node("cuGraphExecKernelNodeSetParams",
                       [&] { return FORWARD(cuGraphExecKernelNodeSetParams, e, node, p); });
}
CUDA_WRAPPER(cuGraphExecKernelNodeSetParams_v2, CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p) {
    return kernel_node("cuGraphExecKernelNodeSetParams",
                       [&] { return FORWARD(cuGraphExecKernelNodeSetParams_v2, e, node, p); });
}

CUDA_WRAPPER(cuGraphAddMemcpyNode, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             const CUDA_MEMCPY3D *p, CUcontext ctx) {
    return copy_node("cuGraphAddMemcpyNode", p, [&](const CUDA_MEMCPY3D *c) {
        return FORWARD(cuGraphAddMemcpyNode, node, g, deps, ndeps, c, ctx);
    });
}
CUDA_WRAPPER(cuGraphMemcpyNodeSetParams, CUgraphNode node, const CUDA_MEMCPY3D *p) {
    return copy_node("cuGraphMemcpyNodeSetParams", p,
                     [&](const CUDA_MEMCPY3D *c) { return FORWARD(cuGraphMemcpyNodeSetParams, node, c); });
}
CUDA_WRAPPER(cuGraphExecMemcpyNodeSetParams, CUgraphExec e, CUgraphNode node, const CUDA_MEMCPY3D *p,
             CUcontext ctx) {
    return copy_node("cuGraphExecMemcpyNodeSetParams", p, [&](const CUDA_MEMCPY3D *c) {
        return FORWARD(cuGraphExecMemcpyNodeSetParams, e, node, c, ctx);
    });
}

CUDA_WRAPPER(cuGraphAddMemsetNode, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
    auto forward = [&] { return FORWARD(cuGraphAddMemsetNode, node, g, deps, ndeps, p, ctx); };
    return p ? fill_node("cuGraphAddMemsetNode", p->dst, forward) : forward();
}
CUDA_WRAPPER(cuGraphMemsetNodeSetParams, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p) {
    auto forward = [&] { return FORWARD(cuGraphMemsetNodeSetParams, node, p); };
    return p ? fill_node("cuGraphMemsetNodeSetParams", p->dst, forward) : forward();
}
CUDA_WRAPPER(cuGraphExecMemsetNodeSetParams, CUgraphExec e, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p,
             CUcontext ctx) {
    auto forward = [&] { return FORWARD(cuGraphExecMemsetNodeSetParams, e, node, p, ctx); };
    return p ? fill_node("cuGraphExecMemsetNodeSetParams", p->dst, forward) : forward();
}

CUDA_WRAPPER(cuGraphAddHostNode, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             const CUDA_HOST_NODE_PARAMS *p) {
    return host_node(p, [&](const CUDA_HOST_NODE_PARAMS *h) { return FORWARD(cuGraphAddHostNode, node, g, deps, ndeps, h); });
}
CUDA_WRAPPER(cuGraphHostNodeSetParams, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p) {
    return host_node(p, [&](const CUDA_HOST_NODE_PARAMS *h) { return FORWARD(cuGraphHostNodeSetParams, node, h); });
}
CUDA_WRAPPER(cuGraphExecHostNodeSetParams, CUgraphExec e, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p) {
    return host_node(p,
                     [&](const CUDA_HOST_NODE_PARAMS *h) { return FORWARD(cuGraphExecHostNodeSetParams, e, node, h); });
}

CUDA_WRAPPER(cuGraphAddNode, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
             CUgraphNodeParams *p) {
    return any_node("cuGraphAddNode", p,
                    [&](CUgraphNodeParams *q) { return FORWARD(cuGraphAddNode, node, g, deps, ndeps, q); });
}
CUDA_WRAPPER(cuGraphAddNode_v2, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
             size_t ndeps, CUgraphNodeParams *p) {
    return any_node("cuGraphAddNode", p,
                    [&](CUgraphNodeParams *q) { return FORWARD(cuGraphAddNode_v2, node, g, deps, edges, ndeps, q); });
}
CUDA_WRAPPER(cuGraphNodeSetParams, CUgraphNode node, CUgraphNodeParams *p) {
    return any_node("cuGraphNodeSetParams", p, [&](CUgraphNodeParams *q) { return FORWARD(cuGraphNodeSetParams, node, q); });
}
CUDA_WRAPPER(cuGraphExecNodeSetParams, CUgraphExec e, CUgraphNode node, CUgraphNodeParams *p) {
    return any_node("cuGraphExecNodeSetParams", p,
                    [&](CUgraphNodeParams *q) { return FORWARD(cuGraphExecNodeSetParams, e, node, q); });
}
