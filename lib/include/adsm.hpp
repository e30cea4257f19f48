// C++ conveniences over the C API in adsm.h: exceptions for errors, RAII
// shared and device buffers, and kernels whose launches are type-checked.
// Everything here is a thin layer; the C API stays the contract.
#ifndef ADSM_HPP
#define ADSM_HPP

#include "adsm.h"

#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace adsm {

class error : public std::runtime_error {
public:
    error(adsmError_t code, const std::string &what) : std::runtime_error(what), code_(code) {}
    adsmError_t code() const noexcept { return code_; }

private:
    adsmError_t code_;
};

// Throws adsm::error carrying the runtime's detailed message.
inline void check(adsmError_t e) {
    if (e == adsmSuccess) return;
    std::string what = adsmGetErrorString(e);
    const char *detail = adsmGetLastErrorDetail();
    if (detail && *detail) what += std::string(": ") + detail;
    adsmGetLastError();  // the error now travels in the exception
    throw error(e, what);
}

struct dim3 : adsmDim3 {
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : adsmDim3{x_, y_, z_} {}
};

using thread_index = adsmThreadIdx;

// Global linear thread index along x, as blockIdx.x * blockDim.x + threadIdx.x.
inline std::size_t global_x(const thread_index &t) noexcept {
    return std::size_t(t.blockIdx.x) * t.blockDim.x + t.threadIdx.x;
}
inline std::size_t global_y(const thread_index &t) noexcept {
    return std::size_t(t.blockIdx.y) * t.blockDim.y + t.threadIdx.y;
}

// Enough blocks of `block` threads to cover n items.
inline dim3 blocks_for(std::size_t n, unsigned int block) {
    return dim3(static_cast<unsigned int>((n + block - 1) / block));
}

inline void sync() { check(adsmSync()); }

// An array in shared memory: one pointer for CPU code and kernels.
template <class T>
class shared_array {
    static_assert(std::is_trivially_copyable_v<T>, "shared memory holds trivially copyable data");

public:
    shared_array() = default;
    explicit shared_array(std::size_t n) : n_(n) {
        if (n != 0 && n > SIZE_MAX / sizeof(T)) check(adsmErrorSizeOverflow);
        p_ = static_cast<T *>(adsmAlloc(n * sizeof(T)));
        if (!p_) check(adsmGetLastError());
    }
    shared_array(const shared_array &) = delete;
    shared_array &operator=(const shared_array &) = delete;
    shared_array(shared_array &&o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    shared_array &operator=(shared_array &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
            n_ = std::exchange(o.n_, 0);
        }
        return *this;
    }
    ~shared_array() { reset(); }

    // Frees now; throws if the runtime refuses (for example adsmErrorBusy).
    void free() {
        if (p_) check(adsmFree(p_));
        p_ = nullptr;
        n_ = 0;
    }

    T *data() const noexcept { return p_; }
    std::size_t size() const noexcept { return n_; }
    T &operator[](std::size_t i) const noexcept { return p_[i]; }
    T *begin() const noexcept { return p_; }
    T *end() const noexcept { return p_ + n_; }

private:
    void reset() noexcept {
        // A destructor must not throw; a refused free stays recorded as the
        // thread's last error.
        if (p_) adsmFree(p_);
        p_ = nullptr;
        n_ = 0;
    }
    T *p_ = nullptr;
    std::size_t n_ = 0;
};

// Device-only memory for code that manages copies itself.
template <class T>
class device_array {
    static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable data");

public:
    explicit device_array(std::size_t n) : n_(n) {
        if (n != 0 && n > SIZE_MAX / sizeof(T)) check(adsmErrorSizeOverflow);
        void *p = nullptr;
        check(adsmDeviceAlloc(&p, n * sizeof(T)));
        p_ = static_cast<T *>(p);
    }
    device_array(const device_array &) = delete;
    device_array &operator=(const device_array &) = delete;
    device_array(device_array &&o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    ~device_array() {
        if (p_) adsmDeviceFree(p_);
    }

    T *data() const noexcept { return p_; }
    std::size_t size() const noexcept { return n_; }
    void copy_from_host(const T *src, std::size_t n, std::size_t offset = 0) {
        check(adsmCopyToDevice(p_ + offset, src, n * sizeof(T)));
    }
    void copy_to_host(T *dst, std::size_t n, std::size_t offset = 0) const {
        check(adsmCopyToHost(dst, p_ + offset, n * sizeof(T)));
    }

private:
    T *p_ = nullptr;
    std::size_t n_ = 0;
};

namespace detail {
template <class F>
struct kernel_signature;

template <class... Params>
struct kernel_signature<void (*)(const thread_index &, Params...)> {
    using values = std::tuple<std::decay_t<Params>...>;
    static constexpr std::size_t arity = sizeof...(Params);
    static constexpr bool trivially_copyable = (std::is_trivially_copyable_v<std::decay_t<Params>> && ...);

    template <auto F, std::size_t... I>
    static void invoke(const thread_index *t, void **args, std::index_sequence<I...>) {
        F(*t, *static_cast<std::decay_t<Params> *>(args[I])...);
    }
    template <std::size_t... I>
    static void sizes(std::size_t *out, std::index_sequence<I...>) {
        ((out[I] = sizeof(std::tuple_element_t<I, values>)), ...);
    }
};
}  // namespace detail

// A kernel written as `void f(const adsm::thread_index &, Params...)`.
// kernel<f> k("f"); k(grid, block, args...) launches it with type-checked
// arguments; the launch releases the calling context's shared objects.
template <auto F>
class kernel {
    using sig = detail::kernel_signature<decltype(F)>;
    static_assert(sig::trivially_copyable, "kernel parameters are copied by value to the device");

public:
    explicit kernel(const char *name) {
        std::size_t sizes[sig::arity + 1] = {};
        sig::sizes(sizes, std::make_index_sequence<sig::arity>{});
        check(adsmRegisterKernel(name, &host_function, static_cast<unsigned int>(sig::arity), sizes, &handle_));
    }

    // F's GPU code from a module (its kernel loaded with adsmModuleGetKernel),
    // launched with F's parameter types.
    explicit kernel(adsmKernel_t handle) noexcept : handle_(handle) {}

    // The function adsm calls once per (block, thread) on sim and cpu.
    static void host_function(const thread_index *t, void **args) {
        sig::template invoke<F>(t, args, std::make_index_sequence<sig::arity>{});
    }

    template <class... Args>
    void operator()(dim3 grid, dim3 block, Args &&...args) const {
        static_assert(sizeof...(Args) == sig::arity, "wrong number of kernel arguments");
        typename sig::values values(std::forward<Args>(args)...);
        launch(grid, block, values, std::make_index_sequence<sig::arity>{});
    }

    // A launch that releases only the objects it names (adsmCallWith):
    // k.with({{x, 1}, {y, 0}}, grid, block, x, y) reads x and writes y.
    template <class... Args>
    void with(std::initializer_list<adsmObjectUse> objects, dim3 grid, dim3 block, Args &&...args) const {
        static_assert(sizeof...(Args) == sig::arity, "wrong number of kernel arguments");
        typename sig::values values(std::forward<Args>(args)...);
        launch(grid, block, values, std::make_index_sequence<sig::arity>{}, &objects);
    }

    adsmKernel_t handle() const noexcept { return handle_; }

private:
    template <std::size_t... I>
    void launch(dim3 grid, dim3 block, typename sig::values &values, std::index_sequence<I...>,
                const std::initializer_list<adsmObjectUse> *objects = nullptr) const {
        void *ptrs[sig::arity + 1] = {static_cast<void *>(&std::get<I>(values))...};
        if (!objects) {
            check(adsmCall(handle_, grid, block, ptrs));
            return;
        }
        check(adsmCallWith(handle_, grid, block, ptrs, objects->begin(), static_cast<unsigned int>(objects->size())));
    }
    adsmKernel_t handle_ = nullptr;
};

// GPU code for the cuda device (a cubin, fatbin or PTX file) or the
// levelzero device (SPIR-V or a native binary), from a file or an image in
// memory.  Modules stay loaded for the life of the process.
class module {
public:
    explicit module(const char *path) { check(adsmLoadModule(path, &m_)); }
    module(const void *image, std::size_t size) { check(adsmLoadModuleData(image, size, &m_)); }

    // The kernel `name`, launched with arguments of types Params...: their
    // number and sizes are checked against what the driver reports (and
    // give the sizes a driver does not report).
    template <class... Params>
    class function {
    public:
        function(adsmModule_t m, const char *name) {
            const std::size_t sizes[] = {sizeof(Params)..., 0};
            check(adsmModuleGetKernelWithParams(m, name, static_cast<unsigned int>(sizeof...(Params)), sizes, &k_));
        }
        template <class... Args>
        void operator()(dim3 grid, dim3 block, Args &&...args) const {
            static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of kernel arguments");
            std::tuple<Params...> values(std::forward<Args>(args)...);
            std::apply(
                [&](auto &...v) {
                    void *ptrs[sizeof...(Params) + 1] = {static_cast<void *>(&v)...};
                    check(adsmCall(k_, grid, block, ptrs));
                },
                values);
        }
        adsmKernel_t handle() const noexcept { return k_; }

    private:
        adsmKernel_t k_ = nullptr;
    };

    template <class... Params>
    function<Params...> kernel(const char *name) const {
        return function<Params...>(m_, name);
    }
    adsmModule_t handle() const noexcept { return m_; }

private:
    adsmModule_t m_ = nullptr;
};

// Collected shared memory for standard containers, as in
// std::vector<T, adsm::gc_allocator<T>>: the elements are valid in kernels at
// the same addresses, and may point to other collected objects.  A
// container frees its old buffers itself; what it drops is collected.
template <class T>
class gc_allocator {
public:
    using value_type = T;
    gc_allocator() noexcept = default;
    template <class U>
    gc_allocator(const gc_allocator<U> &) noexcept {}

    T *allocate(std::size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
        void *p = adsmGcAlloc(n * sizeof(T));
        if (!p) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, std::size_t) noexcept { adsmGcFree(p); }

    template <class U>
    bool operator==(const gc_allocator<U> &) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const gc_allocator<U> &) const noexcept {
        return false;
    }
};

// A kernel heap (adsmGcKernelHeapCreate): pass get() to kernels, which
// allocate with adsmGcKernelAlloc (adsm_gc_kernel.h); after the sync,
// check() throws if any of their allocations returned NULL.  There is
// nothing to free: the heap is collected memory.  Its descriptor is a
// collected object too, kept alive by this object where the collector
// looks (a local or a global; not in malloc'd memory).
class gc_kernel_heap {
public:
    explicit gc_kernel_heap(std::size_t budget, std::size_t tlab_bytes = 0, unsigned int tlabs = 0) {
        adsmGcKernelHeapOptions o{tlab_bytes, tlabs};
        adsm::check(adsmGcKernelHeapCreate(budget, &o, &h_));
    }
    adsmGcKernelHeap *get() const noexcept { return h_; }
    adsmGcKernelHeapInfo info() const {
        adsmGcKernelHeapInfo i;
        adsm::check(adsmGcKernelHeapGetInfo(h_, &i));
        return i;
    }
    void check() const { adsm::check(adsmGcKernelHeapCheck(h_)); }

private:
    adsmGcKernelHeap *h_ = nullptr;
};

// Several devices (ADSM_DEVICE=sim,sim): see adsm.h.
inline int device_count() {
    int n = 0;
    check(adsmGetDeviceCount(&n));
    return n;
}
inline int current_device() {
    int d = 0;
    check(adsmGetDevice(&d));
    return d;
}
// Moves the calling thread's context, with its shared objects, to `device`.
inline void set_device(int device) { check(adsmSetDevice(device)); }
// Hands the allocation at ptr to ctx (nullptr: the calling thread's context).
inline void migrate(void *ptr, adsmContext_t ctx = nullptr) { check(adsmMigrate(ptr, ctx)); }

// Run f with the calling thread bound to ctx, then restore its own context.
class context_scope {
public:
    explicit context_scope(adsmContext_t ctx) : previous_(adsmGetContext()) { check(adsmSetContext(ctx)); }
    context_scope(const context_scope &) = delete;
    context_scope &operator=(const context_scope &) = delete;
    ~context_scope() { adsmSetContext(previous_); }

private:
    adsmContext_t previous_;
};

}  // namespace adsm

#endif  // ADSM_HPP
