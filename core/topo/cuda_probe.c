/* CUDA presence probe through the driver API (see cuda_probe.h). The library handle and the
 * cached versions are process-wide, set once under pthread_once. */
#include "topo/cuda_probe.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_int_fn)(int*);
typedef int (*cu_ctx_dev_fn)(int*);

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static weft_cuda_info cached;
static cu_ctx_dev_fn ctx_get_device;

static void probe_once_fn(void) {
  memset(&cached, 0, sizeof cached);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(cached.why, sizeof cached.why, "no CUDA driver (libcuda.so.1 not found)");
    return;
  }
  cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_int_fn count = (cu_int_fn)dlsym(lib, "cuDeviceGetCount");
  cu_int_fn drv = (cu_int_fn)dlsym(lib, "cuDriverGetVersion");
  ctx_get_device = (cu_ctx_dev_fn)dlsym(lib, "cuCtxGetDevice");
  if (!init || !count || !drv) {
    snprintf(cached.why, sizeof cached.why, "libcuda.so.1 lacks cuInit/cuDeviceGetCount");
    return;
  }
  drv(&cached.driver_version);
  int rc = init(0);
  if (rc != 0) {
    snprintf(cached.why, sizeof cached.why, "cuInit failed with CUDA error %d", rc);
    return;
  }
  if (count(&cached.device_count) != 0 || cached.device_count < 1) {
    snprintf(cached.why, sizeof cached.why, "no CUDA device visible");
    return;
  }
  cached.usable = 1;
  /* The runtime weft's kernels would use; reported for diagnosis only. */
  const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !cached.runtime_version; i++) {
    void* rt = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!rt) continue;
    cu_int_fn rtv = (cu_int_fn)dlsym(rt, "cudaRuntimeGetVersion");
    if (rtv) rtv(&cached.runtime_version);
    dlclose(rt);
  }
  /* lib stays open: the driver is needed for the process lifetime once a GPU is in use. */
}

void cuda_probe(weft_cuda_info* out) {
  pthread_once(&probe_once, probe_once_fn);
  *out = cached;
  out->current_device = 0;
  int dev;
  if (cached.usable && ctx_get_device && ctx_get_device(&dev) == 0) out->current_device = dev;
}
