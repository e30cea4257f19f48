#include "backend/cuda/memory.h"

#include "os/vm.h"
#include "support/log.h"

namespace adsm::cuda {

void DeviceMemory::init(const Driver *d, CUdevice dev, uint64_t granularity, uintptr_t base, int host_fd,
                        uint8_t *host_alias) {
    d_ = d;
    dev_ = dev;
    granularity_ = granularity;
    base_ = base;
    host_fd_ = host_fd;
    alias_ = host_alias;
}

Status DeviceMemory::create(uint64_t index, Granule *g) {
    CUdeviceptr va = base_ + index * granularity_;
    CUmemAllocationProp prop = device_memory_prop(dev_);
    CUmemGenericAllocationHandle h = 0;
    if (CUresult r = d_->cuMemCreate(&h, granularity_, &prop, 0); r != CUDA_SUCCESS)
        return cuda_fail(r == CUDA_ERROR_OUT_OF_MEMORY ? adsmErrorMemoryAllocation : adsmErrorNoDevice, r,
                         "cuda: cuMemCreate of device memory");
    if (CUresult r = d_->cuMemMap(va, granularity_, 0, h, 0); r != CUDA_SUCCESS) {
        d_->cuMemRelease(h);
        return cuda_fail(adsmErrorMemoryAllocation, r, "cuda: cuMemMap into the window");
    }
    CUmemAccessDesc access = {};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = dev_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (CUresult r = d_->cuMemSetAccess(va, granularity_, &access, 1); r != CUDA_SUCCESS) {
        d_->cuMemUnmap(va, granularity_);
        d_->cuMemRelease(h);
        return cuda_fail(adsmErrorMemoryAllocation, r, "cuda: cuMemSetAccess on the window");
    }
    g->handle = h;
    g->registered = false;
    if (pinned()) {
        // Pinned copies run at about 55 GB/s against 7-11 for pageable
        // ones on an H100; without pinning copies still work, slower.
        uint8_t *host = alias_ + (va - base_);
        if (CUresult r = d_->cuMemHostRegister(host, granularity_, 0); r == CUDA_SUCCESS) {
            g->registered = true;
        } else {
            pinned_.store(false, std::memory_order_relaxed);
            ADSM_LOG(warn, "cuda: cannot pin the host mirror (%s); copies go through pageable memory",
                     d_->describe(r));
        }
    }
    return adsmSuccess;
}

void DeviceMemory::destroy(uint64_t index, Granule &g) {
    CUdeviceptr va = base_ + index * granularity_;
    if (g.registered) d_->cuMemHostUnregister(alias_ + (va - base_));
    d_->cuMemUnmap(va, granularity_);
    d_->cuMemRelease(g.handle);
    // No allocation touches the granule any more: its host pages may go.
    os::punch_hole(host_fd_, va - base_, granularity_);
}

Status DeviceMemory::warm_up() {
    if (Status s = commit(base_, granularity_); s != adsmSuccess) return s;
    decommit(base_, granularity_);
    return adsmSuccess;
}

Status DeviceMemory::commit(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0) return adsmSuccess;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = first; i <= last; ++i) {
        Granule &g = granules_[i];
        if (g.users == 0) {
            if (Status s = create(i, &g); s != adsmSuccess) {
                granules_.erase(i);
                // Undo this commit's share of the granules before i.
                for (uint64_t j = first; j < i; ++j) {
                    Granule &u = granules_[j];
                    if (--u.users == 0) {
                        destroy(j, u);
                        granules_.erase(j);
                        granules_in_use_.fetch_sub(1, std::memory_order_relaxed);
                    }
                }
                return s;
            }
            granules_in_use_.fetch_add(1, std::memory_order_relaxed);
        }
        ++g.users;
    }
    return adsmSuccess;
}

void DeviceMemory::decommit(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0) return;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        if (it == granules_.end() || it->second.users == 0) continue;
        if (--it->second.users == 0) {
            destroy(i, it->second);
            granules_.erase(it);
            granules_in_use_.fetch_sub(1, std::memory_order_relaxed);
        }
    }
}

}  // namespace adsm::cuda
