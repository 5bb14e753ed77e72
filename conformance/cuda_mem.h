/* GPU memory for the CUDA cases, through the driver loaded at run time.
 *
 * weft-conformance links no CUDA library: it must build without a toolkit and run without a GPU
 * (skipping the CUDA cases there, with the reason). So the CUDA driver (libcuda.so.1, which the
 * NVIDIA driver installs; no toolkit needed) is dlopen'ed on first use and the few entry points
 * below are looked up by name. Every call works on one GPU: device 0, or $WEFT_CONFORMANCE_GPU.
 *
 * Fork: a process that has initialised CUDA cannot hand it to a child. The test process never
 * calls cm_open (its probe runs in a child of its own) and the pair harness forks the peer
 * before either side does, so each side initialises the driver alone.
 *
 * Results follow the suite's convention: CONF_PASS, or CONF_SKIP / CONF_FAIL with the reason
 * recorded (conf_skip / conf_fail), naming the driver call and its error. */
#ifndef WEFT_CONF_CUDA_MEM_H
#define WEFT_CONF_CUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "runner.h"

typedef unsigned long long cm_ptr; /* a device address (the driver's CUdeviceptr) */

static inline void* cm_void(cm_ptr p) { return (void*)(uintptr_t)p; }

/* Loads the driver (once per process), initialises it, retains the GPU's primary context and
 * makes it current on the calling thread; call it on every thread before its first cm_* call.
 * SKIP when there is no driver, no GPU or no context to be had (another process holding an
 * exclusive-process GPU); FAIL when $WEFT_CONFORMANCE_GPU names no visible GPU. The primary
 * context stays retained until the process exits, as in an application: a plugin may still use
 * it while closing its comms. */
conf_result cm_open(void);
/* "GPU 0 (NVIDIA H200)", for messages; "" before cm_open. */
const char* cm_gpu_name(void);

/* cuMemAlloc: SKIP when the GPU is out of memory. */
conf_result cm_alloc(size_t len, cm_ptr* out);
void cm_free(cm_ptr p);
/* Set len bytes at dst to v / copy host to device / device to host. Each returns only once the
 * bytes are in place, so a plugin reading them on a stream of its own sees them. */
conf_result cm_memset(cm_ptr dst, unsigned char v, size_t len);
conf_result cm_upload(cm_ptr dst, const void* src, size_t len);
conf_result cm_download(void* dst, cm_ptr src, size_t len);
/* A dma-buf fd for [p, p+len) (both page-aligned), the caller's to close. SKIP when the driver,
 * the GPU or the kernel cannot export one. */
conf_result cm_dmabuf_export(cm_ptr p, size_t len, int* fd);

#endif
