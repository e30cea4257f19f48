// GPU code for the Level Zero example, in OpenCL C: clang compiles it for
// spir64 and llvm-spirv turns that into the SPIR-V module adsmLoadModule
// loads.  The list node is laid out as the host's.
struct list_node {
    __global struct list_node *next;
    long value;
};

__kernel void scale(__global float *v, float factor, uint n) {
    size_t i = get_global_id(0);
    if (i < n) v[i] *= factor;
}

// A list the CPU linked in shared memory: the kernel follows its pointers.
__kernel void sum_list(__global const struct list_node *head, __global long *out) {
    if (get_global_id(0) != 0) return;
    long s = 0;
    for (__global const struct list_node *n = head; n; n = n->next) s += n->value;
    *out = s;
}
