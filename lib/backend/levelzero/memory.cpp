#include "backend/levelzero/memory.h"

namespace adsm::levelzero {

Status GranuleDriver::back(uintptr_t va, uint64_t size, uint64_t *handle) {
    ze_physical_mem_desc_t desc = {};
    desc.stype = ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC;
    desc.size = size;
    ze_physical_mem_handle_t phys = nullptr;
    if (ze_result_t r = d_->zePhysicalMemCreate(ctx_, dev_, &desc, &phys); r != ZE_RESULT_SUCCESS)
        return ze_fail(r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY ? adsmErrorMemoryAllocation : adsmErrorNoDevice, r,
                       "levelzero: zePhysicalMemCreate of device memory");
    ze_result_t r = d_->zeVirtualMemMap(ctx_, reinterpret_cast<void *>(va), size, phys, 0,
                                        ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE);
    if (r != ZE_RESULT_SUCCESS) {
        d_->zePhysicalMemDestroy(ctx_, phys);
        return ze_fail(adsmErrorMemoryAllocation, r, "levelzero: zeVirtualMemMap into the window");
    }
    *handle = reinterpret_cast<uint64_t>(phys);
    return adsmSuccess;
}

void GranuleDriver::unback(uintptr_t va, uint64_t size, uint64_t handle) {
    d_->zeVirtualMemUnmap(ctx_, reinterpret_cast<void *>(va), size);
    d_->zePhysicalMemDestroy(ctx_, reinterpret_cast<ze_physical_mem_handle_t>(handle));
}

Status GranuleDriver::reserve_scratch(uint64_t size, uintptr_t *va) {
    void *p = nullptr;
    if (ze_result_t r = d_->zeVirtualMemReserve(ctx_, nullptr, size, &p); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorMemoryAllocation, r, "levelzero: reserving addresses to move device memory through");
    *va = reinterpret_cast<uintptr_t>(p);
    return adsmSuccess;
}

void GranuleDriver::free_scratch(uintptr_t va, uint64_t size) { d_->zeVirtualMemFree(ctx_, reinterpret_cast<void *>(va), size); }

Status GranuleDriver::remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle) {
    d_->zeVirtualMemUnmap(ctx_, reinterpret_cast<void *>(from), size);
    if (ze_result_t r = d_->zeVirtualMemMap(ctx_, reinterpret_cast<void *>(va), size,
                                            reinterpret_cast<ze_physical_mem_handle_t>(handle), 0,
                                            ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE);
        r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorDeviceLost, r, "levelzero: mapping moved device memory into the window");
    return adsmSuccess;
}

}  // namespace adsm::levelzero
