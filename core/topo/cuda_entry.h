/* CUDA driver functions by name, through the runtime's entry-point lookup: weft never links
 * libcuda, so that it loads where no driver is installed. Device-mode code only. */
#ifndef WEFT_TOPO_CUDA_ENTRY_H
#define WEFT_TOPO_CUDA_ENTRY_H

/* The driver function `name` (e.g. "cuMemCreate") at the ABI it has had since CUDA 12.0, or
 * NULL when the driver lacks it (or this weft has no CUDA). */
void* cuda_driver_entry(const char* name);

#endif
