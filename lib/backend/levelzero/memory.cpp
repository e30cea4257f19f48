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

}  // namespace adsm::levelzero
