/* A kernel's view of itself in the test doubles: the same layout as
 * adsmThreadIdx, so one kernel source serves both. */
#pragma once

typedef struct gpu_dim {
    unsigned x, y, z;
} gpu_dim;

typedef struct gpu_idx {
    gpu_dim gridDim, blockDim, blockIdx, threadIdx;
} gpu_idx;

typedef void (*gpu_kernel)(const gpu_idx *t, void **args);

/* Runs a whole grid on the calling thread, as the doubles' device does. */
static inline void gpu_run_grid(gpu_kernel k, gpu_dim grid, gpu_dim block, void **args) {
    gpu_idx t;
    t.gridDim = grid;
    t.blockDim = block;
    for (t.blockIdx.z = 0; t.blockIdx.z < grid.z; ++t.blockIdx.z)
        for (t.blockIdx.y = 0; t.blockIdx.y < grid.y; ++t.blockIdx.y)
            for (t.blockIdx.x = 0; t.blockIdx.x < grid.x; ++t.blockIdx.x)
                for (t.threadIdx.z = 0; t.threadIdx.z < block.z; ++t.threadIdx.z)
                    for (t.threadIdx.y = 0; t.threadIdx.y < block.y; ++t.threadIdx.y)
                        for (t.threadIdx.x = 0; t.threadIdx.x < block.x; ++t.threadIdx.x) k(&t, args);
}
