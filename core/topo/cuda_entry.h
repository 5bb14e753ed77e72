/* CUDA driver functions by name, through the runtime's entry-point lookup: weft never links
 * libcuda, so that it loads where no driver is installed. Device-mode code only. */
#ifndef WEFT_TOPO_CUDA_ENTRY_H
#define WEFT_TOPO_CUDA_ENTRY_H

/* The driver function `name` (e.g. "cuMemCreate") at the ABI it has had since CUDA 12.0, or
 * NULL when the driver lacks it (or this weft has no CUDA). */
void* cuda_driver_entry(const char* name);

#include <stddef.h>
#include <stdint.h>

/* The GPU allocation holding p (cuMemGetAddressRange): its base and bytes. 0 when the driver
 * has no answer (not GPU memory, no driver, or a weft without CUDA). */
int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes);

#endif
