// What shared memory's parts cost on this GPU's host, per MiB, against what
// hand-written CUDA pays for its buffers, at several sizes:
//   device memory:  cuMemCreate + cuMemMap + cuMemSetAccess (the cuda device's
//                   granules), against nothing (cuMemAlloc is not timed)
//   host mirror:    cuMemHostRegister of a fresh memfd alias, then entering the
//                   pages into a second view with MADV_POPULATE_WRITE, or by
//                   touching each page (what adsm does, and what it avoids)
//   baselines:      cuMemAllocHost, and malloc + first touch (pageable)
//   copies:         one host-to-device copy from registered memory, whole and
//                   split at 2 MiB granules
//   made first:     a fresh memfd's pages made by 8 threads (MADV_POPULATE_WRITE),
//                   then registered (ADSM_CUDA_PIN_THREADS=8)
// The numbers decide between registering the mirror and staging copies
// through a pinned ring: a ring pays the page's first touch like malloc,
// plus a CPU copy per transfer.
//
//   adsm-bench-cuda-memory
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

void check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s\n", what, name);
    exit(1);
}

struct Row {
    double vmm, reg, populate, touch, memset_after, alloc_host, malloc_touch, copy_whole, copy_split, make_parallel,
        reg_made;
};

constexpr unsigned kMakers = 8;

// Makes the pages of [p, p+n) with kMakers threads (ADSM_CUDA_PIN_THREADS).
void make_in_parallel(char *p, size_t n) {
    std::vector<std::thread> threads;
    const size_t piece = (n / kMakers + 4095) / 4096 * 4096;
    for (unsigned i = 0; i < kMakers && i * piece < n; ++i)
        threads.emplace_back([=] {
            size_t len = n - i * piece < piece ? n - i * piece : piece;
            if (madvise(p + i * piece, len, MADV_POPULATE_WRITE) != 0) perror("MADV_POPULATE_WRITE");
        });
    for (std::thread &t : threads) t.join();
}

Row measure(CUdevice dev, CUdeviceptr va, CUstream s, size_t n) {
    Row r{};
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUmemGenericAllocationHandle h;
    auto t = Clock::now();
    check(cuMemCreate(&h, n, &prop, 0), "cuMemCreate");
    check(cuMemMap(va, n, 0, h, 0), "cuMemMap");
    check(cuMemSetAccess(va, n, &access, 1), "cuMemSetAccess");
    r.vmm = us_since(t);

    // Two fresh mirrors: one entered into its view in one call, one page by page.
    for (int way = 0; way < 2; ++way) {
        int fd = memfd_create("adsm-bench", 0);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(n)) != 0) perror("memfd"), exit(1);
        auto *alias = static_cast<char *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        auto *view = static_cast<char *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        if (alias == MAP_FAILED || view == MAP_FAILED) perror("mmap"), exit(1);
        t = Clock::now();
        check(cuMemHostRegister(alias, n, 0), "cuMemHostRegister");
        double reg = us_since(t);
        t = Clock::now();
        if (way == 0) {
            if (madvise(view, n, MADV_POPULATE_WRITE) != 0) perror("MADV_POPULATE_WRITE");
            r.populate = us_since(t);
            r.reg = reg;
            t = Clock::now();
            memset(view, 1, n);
            r.memset_after = us_since(t);
            t = Clock::now();
            check(cuMemcpyHtoDAsync(va, alias, n, s), "copy");
            check(cuStreamSynchronize(s), "sync");
            r.copy_whole = us_since(t);
            t = Clock::now();
            for (size_t o = 0; o < n; o += size_t{2} << 20)
                check(cuMemcpyHtoDAsync(va + o, alias + o, size_t{2} << 20, s), "copy");
            check(cuStreamSynchronize(s), "sync");
            r.copy_split = us_since(t);
        } else {
            for (size_t i = 0; i < n; i += 4096) view[i] = 1;
            r.touch = us_since(t);
        }
        check(cuMemHostUnregister(alias), "cuMemHostUnregister");
        munmap(view, n);
        munmap(alias, n);
        close(fd);
    }
    {
        // Pages made by several threads first, then registered.
        int fd = memfd_create("adsm-bench", 0);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(n)) != 0) perror("memfd"), exit(1);
        auto *alias = static_cast<char *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        if (alias == MAP_FAILED) perror("mmap"), exit(1);
        t = Clock::now();
        make_in_parallel(alias, n);
        r.make_parallel = us_since(t);
        t = Clock::now();
        check(cuMemHostRegister(alias, n, 0), "cuMemHostRegister");
        r.reg_made = us_since(t);
        check(cuMemHostUnregister(alias), "cuMemHostUnregister");
        munmap(alias, n);
        close(fd);
    }
    void *pinned;
    t = Clock::now();
    check(cuMemAllocHost(&pinned, n), "cuMemAllocHost");
    r.alloc_host = us_since(t);
    check(cuMemFreeHost(pinned), "cuMemFreeHost");
    auto *pageable = static_cast<char *>(malloc(n));
    t = Clock::now();
    for (size_t i = 0; i < n; i += 4096) pageable[i] = 1;
    r.malloc_touch = us_since(t);
    free(pageable);
    check(cuMemUnmap(va, n), "cuMemUnmap");
    check(cuMemRelease(h), "cuMemRelease");
    return r;
}

}  // namespace

int main() {
    check(cuInit(0), "cuInit");
    CUdevice dev;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CUstream s;
    check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    char name[128] = "?";
    cuDeviceGetName(name, sizeof name, dev);
    const size_t max = size_t{256} << 20;
    CUdeviceptr va;
    check(cuMemAddressReserve(&va, max, 0, 0, 0), "cuMemAddressReserve");
    measure(dev, va, s, size_t{2} << 20);  // the driver's first-use costs, not reported
    printf("adsm-bench-cuda-memory on %s: microseconds per MiB\n", name);
    printf("%8s %9s %9s %9s %9s %9s %11s %11s %11s %11s %11s %11s\n", "MiB", "vmm map", "register", "populate",
           "touch", "memset", "AllocHost", "malloc+tch", "copy whole", "copy 2 MiB", "make 8 thr", "reg. made");
    for (size_t mib : {size_t{2}, size_t{8}, size_t{64}, size_t{256}}) {
        Row r = measure(dev, va, s, mib << 20);
        double m = static_cast<double>(mib);
        printf("%8zu %9.1f %9.1f %9.1f %9.1f %9.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f\n", mib, r.vmm / m,
               r.reg / m, r.populate / m, r.touch / m, r.memset_after / m, r.alloc_host / m, r.malloc_touch / m,
               r.copy_whole / m, r.copy_split / m, r.make_parallel / m, r.reg_made / m);
    }
    printf("adsm's mirror costs register + populate per MiB (make 8 thr + reg. made + populate with "
           "ADSM_CUDA_PIN_THREADS=8); a pinned ring would cost malloc+tch, plus a CPU copy per transfer; hand-written "
           "pinned code costs AllocHost.\n");
    return 0;
}
