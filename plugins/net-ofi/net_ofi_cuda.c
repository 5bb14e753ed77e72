/* What the plugin needs from CUDA, without linking it: whether any device exists (FI_HMEM is
 * asked for only then), which device a pointer lives on (fi_mr_attr.device.cuda), and a little
 * device memory for the trial registration that checks a provider's FI_HMEM really works.
 * libcuda is dlopen'd once; a machine without it simply has no CUDA devices. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "net_ofi.h"

typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_count_fn)(int* count);
typedef int (*cu_ptr_attr_fn)(void* data, int attribute, unsigned long long ptr);
typedef int (*cu_ctx_get_fn)(void** ctx);
typedef int (*cu_alloc_fn)(unsigned long long* ptr, size_t len);
typedef int (*cu_free_fn)(unsigned long long ptr);

#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static int cuda_ndev;
static cu_ptr_attr_fn cu_ptr_attr;
static cu_ctx_get_fn cu_ctx_get;
static cu_alloc_fn cu_alloc;
static cu_free_fn cu_free;

static void cuda_load(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return;
  cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
  cu_count_fn count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
  cu_ptr_attr = (cu_ptr_attr_fn)dlsym(h, "cuPointerGetAttribute");
  cu_ctx_get = (cu_ctx_get_fn)dlsym(h, "cuCtxGetCurrent");
  cu_alloc = (cu_alloc_fn)dlsym(h, "cuMemAlloc_v2");
  cu_free = (cu_free_fn)dlsym(h, "cuMemFree_v2");
  int n = 0;
  if (init == NULL || count == NULL || cu_ptr_attr == NULL || init(0) != 0 || count(&n) != 0) {
    cu_ptr_attr = NULL;
    return; /* the handle stays open: libcuda does not like being unloaded */
  }
  cuda_ndev = n;
}

int net_ofi_cuda_devices(void) {
  pthread_once(&cuda_once, cuda_load);
  return cuda_ndev;
}

int net_ofi_cuda_ptr_device(const void* ptr, int* dev) {
  if (net_ofi_cuda_devices() == 0 || cu_ptr_attr == NULL) return 0;
  int ordinal = -1;
  if (cu_ptr_attr(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (unsigned long long)(uintptr_t)ptr) != 0)
    return 0;
  *dev = ordinal;
  return 1;
}

/* Device memory for a trial registration, in the caller's current context only (creating one
 * would cost memory on a device the process may never use). 0 when there is none. */
int net_ofi_cuda_trial_alloc(size_t len, void** ptr) {
  void* ctx = NULL;
  unsigned long long p = 0;
  if (net_ofi_cuda_devices() == 0 || !cu_ctx_get || !cu_alloc || !cu_free) return 0;
  if (cu_ctx_get(&ctx) != 0 || ctx == NULL || cu_alloc(&p, len) != 0) return 0;
  *ptr = (void*)(uintptr_t)p;
  return 1;
}

void net_ofi_cuda_trial_free(void* ptr) {
  if (cu_free) cu_free((unsigned long long)(uintptr_t)ptr);
}
