/* CUDA driver functions, through the runtime's entry-point lookup: weft never links libcuda, so
 * that it loads where no driver is installed. Device-mode code only. The driver calls weft makes
 * are one table (cuda_drv), looked up once per process; cuda_driver_entry finds any other. */
#ifndef WEFT_TOPO_CUDA_ENTRY_H
#define WEFT_TOPO_CUDA_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* The driver function `name` (e.g. "cuMemCreate") at the ABI it has had since CUDA 12.0, or
 * NULL when the driver lacks it (or this weft has no CUDA). */
void* cuda_driver_entry(const char* name);

#ifdef WEFT_HAVE_CUDA
#include <cuda.h>

/* The driver calls of weft's memory paths: ncclMemAlloc (api/), symmetric windows and GPU
 * Direct RDMA (transport/). A member is NULL where the driver lacks the function. */
typedef struct {
  CUresult (*get_error_string)(CUresult, const char**);
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*address_range)(CUdeviceptr*, size_t*, CUdeviceptr);
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*,
                          CUmemAllocationGranularity_flags);
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                     unsigned long long);
  CUresult (*release)(CUmemGenericAllocationHandle);
  CUresult (*retain_handle)(CUmemGenericAllocationHandle*, void*);
  CUresult (*export_handle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                            unsigned long long);
  CUresult (*import_handle)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType);
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*address_free)(CUdeviceptr, size_t);
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*unmap)(CUdeviceptr, size_t);
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*range_handle)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
} weft_cuda_drv;

/* The table, looked up at the first call (any thread). */
const weft_cuda_drv* cuda_drv(void);

/* The driver's text for r ("unknown error" when it has none). */
const char* cuda_drv_error(CUresult r);
#endif

/* The GPU allocation holding p (cuMemGetAddressRange): its base and bytes. 0 when the driver
 * has no answer (not GPU memory, no driver, or a weft without CUDA). */
int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes);

#endif
