#include "backend/cuda/memory.h"

#include "support/log.h"

namespace adsm::cuda {

Status GranuleDriver::back(uintptr_t va, uint64_t size, uint64_t *handle) {
    CUmemAllocationProp prop = device_memory_prop(dev_);
    CUmemGenericAllocationHandle h = 0;
    if (CUresult r = d_->cuMemCreate(&h, size, &prop, 0); r != CUDA_SUCCESS)
        return cuda_fail(r == CUDA_ERROR_OUT_OF_MEMORY ? adsmErrorMemoryAllocation : adsmErrorNoDevice, r,
                         "cuda: cuMemCreate of device memory");
    if (CUresult r = d_->cuMemMap(va, size, 0, h, 0); r != CUDA_SUCCESS) {
        d_->cuMemRelease(h);
        return cuda_fail(adsmErrorMemoryAllocation, r, "cuda: cuMemMap into the window");
    }
    CUmemAccessDesc access = device_access(dev_, true);
    if (CUresult r = d_->cuMemSetAccess(va, size, &access, 1); r != CUDA_SUCCESS) {
        d_->cuMemUnmap(va, size);
        d_->cuMemRelease(h);
        return cuda_fail(adsmErrorMemoryAllocation, r, "cuda: cuMemSetAccess on the window");
    }
    *handle = h;
    return adsmSuccess;
}

bool GranuleDriver::unback(uintptr_t va, uint64_t size, uint64_t handle) {
    if (CUresult r = d_->cuMemUnmap(va, size); r != CUDA_SUCCESS) {
        ADSM_LOG(error, "cuda: cannot unmap the device memory at %p (%s); it stays until a later try",
                 reinterpret_cast<void *>(va), d_->describe(r));
        return false;
    }
    if (CUresult r = d_->cuMemRelease(handle); r != CUDA_SUCCESS)
        ADSM_LOG(error, "cuda: cannot free the device memory unmapped from %p (%s)", reinterpret_cast<void *>(va),
                 d_->describe(r));
    return true;
}

bool GranuleDriver::pin(void *host, uint64_t size) {
    if (CUresult r = d_->cuMemHostRegister(host, size, CU_MEMHOSTREGISTER_PORTABLE); r != CUDA_SUCCESS) {
        ADSM_LOG(warn, "cuda: cannot pin the host mirror (%s); copies go through pageable memory", d_->describe(r));
        return false;
    }
    return true;
}

void GranuleDriver::unpin(void *host) {
    if (CUresult r = d_->cuMemHostUnregister(host); r != CUDA_SUCCESS)
        ADSM_LOG(warn, "cuda: cannot unpin the host mirror at %p (%s); it stays pinned", host, d_->describe(r));
}

Status GranuleDriver::reserve_scratch(uint64_t size, uintptr_t *va) {
    CUdeviceptr p = 0;
    if (CUresult r = d_->cuMemAddressReserve(&p, size, 0, 0, 0); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorMemoryAllocation, r, "cuda: reserving addresses to move device memory through");
    *va = static_cast<uintptr_t>(p);
    return adsmSuccess;
}

void GranuleDriver::free_scratch(uintptr_t va, uint64_t size) {
    if (CUresult r = d_->cuMemAddressFree(va, size); r != CUDA_SUCCESS)
        ADSM_LOG(warn, "cuda: cannot free the scratch addresses at %p (%s)", reinterpret_cast<void *>(va), d_->describe(r));
}

Status GranuleDriver::remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle) {
    if (CUresult r = d_->cuMemUnmap(from, size); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorDeviceLost, r, "cuda: unmapping moved device memory from its scratch addresses");
    if (CUresult r = d_->cuMemMap(va, size, 0, handle, 0); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorDeviceLost, r, "cuda: mapping moved device memory into the window");
    CUmemAccessDesc access = device_access(dev_, true);
    if (CUresult r = d_->cuMemSetAccess(va, size, &access, 1); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorDeviceLost, r, "cuda: cuMemSetAccess on moved device memory");
    return adsmSuccess;
}

}  // namespace adsm::cuda
