// The workload suite: each workload written once against `Gpu`, the way a
// careful programmer writes it for each kind of memory.  Where the CPU and
// the kernels share buffers (adsm, CUDA managed memory) it writes and reads
// them in place; where they do not (explicit copies) it moves exactly what
// each side needs.  Every variant computes the same result from the same
// inputs and reports a checksum of what the CPU consumed, which the driver
// compares with a plain CPU computation.
#pragma once

#include <adsm.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace wl {

// A kernel as the variants need it: its name (the CUDA kernel in kernels.cu
// has the same name and parameters), the host function sim and cpu run, and
// its parameter sizes.
struct KernelDesc {
    static constexpr unsigned kMaxParams = 8;
    const char *name;
    adsmKernelFunc host_function;
    unsigned arity;
    size_t sizes[kMaxParams];
};

// Every workload kernel, registered at start-up (a module of the CUDA
// driver double's format is built from them).
const std::vector<const KernelDesc *> &all_kernels();

// How one variant gets memory, moves it and runs kernels.
class Gpu {
public:
    virtual ~Gpu() = default;
    // True when CPU and kernels use the same buffers: no copies, no device buffers.
    virtual bool unified() const = 0;
    // Memory the CPU reads and writes (on a unified variant, also the kernels).
    virtual void *alloc_host(size_t bytes) = 0;
    virtual void free_host(void *p) = 0;
    // Device memory and copies, on split variants only.  to_device is ordered
    // with the kernels and may return before it completes (the host buffer
    // stays untouched until the next sync or to_host); to_host returns with
    // the bytes in host memory, after every kernel launched before it.
    virtual void *alloc_device(size_t bytes) = 0;
    virtual void free_device(void *p) = 0;
    virtual void to_device(void *dev, const void *host, size_t bytes) = 0;
    virtual void to_host(void *host, const void *dev, size_t bytes) = 0;
    // Zeroes device memory (split) or a unified buffer, on the device.
    virtual void zero(void *p, size_t bytes) = 0;
    virtual void launch(const KernelDesc &k, adsm::dim3 grid, adsm::dim3 block, void **args) = 0;
    // Waits for the kernels; on a unified variant, the CPU may then read their output.
    virtual void sync() = 0;
};

// A buffer of n T's from alloc_host or alloc_device, freed on destruction
// (after timed_end, so frees are not timed).
template <class T, bool Device>
class buffer {
public:
    buffer(Gpu &g, size_t n)
        : g_(g), p_(static_cast<T *>(Device ? g.alloc_device(n * sizeof(T)) : g.alloc_host(n * sizeof(T)))) {}
    ~buffer() {
        try {
            Device ? g_.free_device(p_) : g_.free_host(p_);
        } catch (const std::exception &e) {
            // A destructor must not throw; a free that fails is a broken run.
            fprintf(stderr, "adsm-workloads: freeing a buffer: %s\n", e.what());
            std::abort();
        }
    }
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
    T *data() const { return p_; }
    T &operator[](size_t i) const { return p_[i]; }

private:
    Gpu &g_;
    T *p_;
};
template <class T>
using host_buffer = buffer<T, false>;
template <class T>
using device_buffer = buffer<T, true>;

void register_kernel(const KernelDesc *k);

// kernel<f> k("f"): f is the host function (`void f(const adsm::thread_index
// &, Params...)`) that sim and cpu run; k(gpu, grid, block, args...) launches
// it, or the GPU code of the same name, with arguments converted to Params.
template <auto F>
class kernel {
    using sig = adsm::detail::kernel_signature<decltype(F)>;
    static_assert(sig::arity <= KernelDesc::kMaxParams, "too many kernel parameters");

public:
    explicit kernel(const char *name) : d_{name, &adsm::kernel<F>::host_function, sig::arity, {}} {
        sig::sizes(d_.sizes, std::make_index_sequence<sig::arity>{});
        register_kernel(&d_);
    }
    kernel(const kernel &) = delete;
    kernel &operator=(const kernel &) = delete;

    template <class... Args>
    void operator()(Gpu &g, adsm::dim3 grid, adsm::dim3 block, Args &&...args) const {
        static_assert(sizeof...(Args) == sig::arity, "wrong number of kernel arguments");
        typename sig::values values(std::forward<Args>(args)...);
        std::apply(
            [&](auto &...v) {
                void *ptrs[sig::arity + 1] = {static_cast<void *>(&v)...};
                g.launch(d_, grid, block, ptrs);
            },
            values);
    }

private:
    KernelDesc d_;
};

struct Result {
    double checksum = 0;   // of the output the CPU consumed
    double reference = 0;  // the same, computed on the CPU alone
    double tolerance = 0;  // relative
};

struct Workload {
    const char *name;
    const char *what;
    // Sets up inputs (untimed), runs on g between timed_begin() and
    // timed_end(), and fills the result.  `scratch` is a directory for files.
    Result (*run)(Gpu &g, const std::string &scratch);
};

const std::vector<Workload> &all();

// Defines a workload in its own file.
struct Register {
    Register(const char *name, const char *what, Result (*run)(Gpu &, const std::string &));
};

// The part of a run that is timed.
void timed_begin();
// A size scaled by --scale (a fraction of the full problem, 1 unless given),
// rounded down to a multiple of `unit` and at least one unit: the suite's
// tests run the workloads smaller, the measurements full size.
size_t scaled(size_t full, size_t unit);
void timed_end();

// A deterministic pseudo-random stream for inputs.
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed * 6364136223846793005ull + 1442695040888963407ull) {}
    uint32_t next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(s >> 33);
    }
    float unit() { return static_cast<float>(next() >> 8) / 16777216.0f; }  // [0, 1)
};

}  // namespace wl
