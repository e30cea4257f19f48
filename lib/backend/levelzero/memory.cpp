#include "backend/levelzero/memory.h"

#include "support/log.h"

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

bool GranuleDriver::unback(uintptr_t va, uint64_t size, uint64_t handle) {
    if (ze_result_t r = d_->zeVirtualMemUnmap(ctx_, reinterpret_cast<void *>(va), size); r != ZE_RESULT_SUCCESS) {
        ADSM_LOG(error, "levelzero: cannot unmap the device memory at %p (%s); it stays until a later try",
                 reinterpret_cast<void *>(va), Driver::describe(r));
        return false;
    }
    if (ze_result_t r = d_->zePhysicalMemDestroy(ctx_, reinterpret_cast<ze_physical_mem_handle_t>(handle));
        r != ZE_RESULT_SUCCESS)
        ADSM_LOG(error, "levelzero: cannot free the device memory unmapped from %p (%s)", reinterpret_cast<void *>(va),
                 Driver::describe(r));
    return true;
}

Status GranuleDriver::reserve_scratch(uint64_t size, uintptr_t *va) {
    void *p = nullptr;
    if (ze_result_t r = d_->zeVirtualMemReserve(ctx_, nullptr, size, &p); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorMemoryAllocation, r, "levelzero: reserving addresses to move device memory through");
    *va = reinterpret_cast<uintptr_t>(p);
    return adsmSuccess;
}

void GranuleDriver::free_scratch(uintptr_t va, uint64_t size) {
    if (ze_result_t r = d_->zeVirtualMemFree(ctx_, reinterpret_cast<void *>(va), size); r != ZE_RESULT_SUCCESS)
        ADSM_LOG(warn, "levelzero: cannot free the scratch addresses at %p (%s)", reinterpret_cast<void *>(va),
                 Driver::describe(r));
}

Status GranuleDriver::remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle) {
    if (ze_result_t r = d_->zeVirtualMemUnmap(ctx_, reinterpret_cast<void *>(from), size); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorDeviceLost, r, "levelzero: unmapping moved device memory from its scratch addresses");
    if (ze_result_t r = d_->zeVirtualMemMap(ctx_, reinterpret_cast<void *>(va), size,
                                            reinterpret_cast<ze_physical_mem_handle_t>(handle), 0,
                                            ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE);
        r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorDeviceLost, r, "levelzero: mapping moved device memory into the window");
    return adsmSuccess;
}

}  // namespace adsm::levelzero
