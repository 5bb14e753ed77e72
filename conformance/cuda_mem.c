/* GPU memory for the CUDA cases, through the driver loaded at run time (see cuda_mem.h).
 *
 * The driver's C ABI is stable: the types and constants the calls need are declared here, as
 * cuda.h may not be installed. Where the driver exports two versions of a call, the _v2 one is
 * looked up: the plain names are the originals with 32-bit device pointers, kept for old
 * binaries. Copies and memsets use the legacy default stream and then wait for it, since a
 * memset, or a copy from pageable memory, may return before the bytes land, and a plugin reads
 * and writes GPU memory on streams (or through a NIC) that do not wait for ours. */
#include "cuda_mem.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver's types and constants (cuda.h: CUresult, CUdevice, CUcontext, CUstream). */
typedef int cu_result; /* CUDA_SUCCESS = 0 */
typedef int cu_device;
typedef void* cu_context;
enum {
  CU_ERROR_OUT_OF_MEMORY = 2,
  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1,
};

typedef struct {
  cu_result (*init)(unsigned flags);
  cu_result (*error_name)(cu_result r, const char** name);
  cu_result (*device_count)(int* n);
  cu_result (*device_get)(cu_device* dev, int ordinal);
  cu_result (*device_name)(char* name, int len, cu_device dev);
  cu_result (*device_attr)(int* value, int attr, cu_device dev);
  cu_result (*primary_retain)(cu_context* ctx, cu_device dev);
  cu_result (*ctx_set)(cu_context ctx);
  cu_result (*mem_alloc)(cm_ptr* p, size_t len);
  cu_result (*mem_free)(cm_ptr p);
  cu_result (*htod)(cm_ptr dst, const void* src, size_t len);
  cu_result (*dtoh)(void* dst, cm_ptr src, size_t len);
  cu_result (*memset8)(cm_ptr dst, unsigned char v, size_t len);
  cu_result (*stream_sync)(void* stream);
  /* CUDA 11.7+; NULL on older drivers */
  cu_result (*range_handle)(void* handle, cm_ptr p, size_t len, int type,
                            unsigned long long flags);
} cu_table;
static cu_table cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256]; /* why the driver is unusable; "" when loaded */
static cu_context ctx;
static cu_device dev;
static char gpu_name[160];

static void load_driver(void) {
  void* dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    snprintf(load_error, sizeof load_error, "no CUDA driver (%s)", dlerror());
    return;
  }
  static const struct {
    const char* name;
    size_t offset;
  } entries[] = {
#define ENTRY(field, name) {name, offsetof(cu_table, field)}
      ENTRY(init, "cuInit"),
      ENTRY(error_name, "cuGetErrorName"),
      ENTRY(device_count, "cuDeviceGetCount"),
      ENTRY(device_get, "cuDeviceGet"),
      ENTRY(device_name, "cuDeviceGetName"),
      ENTRY(device_attr, "cuDeviceGetAttribute"),
      ENTRY(primary_retain, "cuDevicePrimaryCtxRetain"),
      ENTRY(ctx_set, "cuCtxSetCurrent"),
      ENTRY(mem_alloc, "cuMemAlloc_v2"),
      ENTRY(mem_free, "cuMemFree_v2"),
      ENTRY(htod, "cuMemcpyHtoD_v2"),
      ENTRY(dtoh, "cuMemcpyDtoH_v2"),
      ENTRY(memset8, "cuMemsetD8_v2"),
      ENTRY(stream_sync, "cuStreamSynchronize"),
#undef ENTRY
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void* fn = dlsym(dl, entries[i].name);
    if (!fn) {
      snprintf(load_error, sizeof load_error, "the CUDA driver (libcuda.so.1) has no %s",
               entries[i].name);
      return;
    }
    /* Every slot is a function pointer, the size of dlsym's answer on every platform CUDA
     * runs on; memcpy keeps the compiler's aliasing rules out of it. */
    memcpy((char*)&cu + entries[i].offset, &fn, sizeof fn);
  }
  void* fn = dlsym(dl, "cuMemGetHandleForAddressRange");
  memcpy(&cu.range_handle, &fn, sizeof fn);
}

/* "CUDA_ERROR_NO_DEVICE (100)" (per thread: a message may name two). */
static const char* err(cu_result r) {
  static __thread char buf[2][96];
  static __thread int which;
  const char* name = NULL;
  if (cu.error_name == NULL || cu.error_name(r, &name) != 0 || name == NULL) name = "CUDA error";
  char* b = buf[which++ & 1];
  snprintf(b, sizeof buf[0], "%s (%d)", name, r);
  return b;
}

conf_result cm_open(void) {
  pthread_once(&load_once, load_driver);
  if (load_error[0]) return conf_skip("%s", load_error);
  cu_result r = cu.init(0);
  if (r != 0) return conf_skip("no usable CUDA driver: cuInit returned %s", err(r));
  int n = 0;
  r = cu.device_count(&n);
  if (r != 0 || n < 1)
    return conf_skip("no GPU: cuDeviceGetCount returned %s, %d devices", err(r), n);
  int ordinal = 0;
  const char* env = getenv("WEFT_CONFORMANCE_GPU");
  if (env && *env) {
    char* end;
    long v = strtol(env, &end, 10);
    if (*end || v < 0 || v >= n)
      return conf_fail("WEFT_CONFORMANCE_GPU=%s is not a GPU index here (%d visible)", env, n);
    ordinal = (int)v;
  }
  r = cu.device_get(&dev, ordinal);
  if (r != 0) return conf_skip("cuDeviceGet(%d) returned %s", ordinal, err(r));
  char name[128] = "";
  if (cu.device_name(name, (int)sizeof name, dev) != 0) name[0] = '\0';
  snprintf(gpu_name, sizeof gpu_name, "GPU %d (%s)", ordinal, name[0] ? name : "?");
  if (ctx == NULL) {
    r = cu.primary_retain(&ctx, dev);
    if (r != 0) {
      ctx = NULL;
      return conf_skip("no CUDA context on %s: cuDevicePrimaryCtxRetain returned %s (each case "
                       "needs one in two processes; an exclusive-process GPU allows only one)",
                       gpu_name, err(r));
    }
  }
  r = cu.ctx_set(ctx);
  if (r != 0) return conf_skip("cuCtxSetCurrent on %s returned %s", gpu_name, err(r));
  return CONF_PASS;
}

const char* cm_gpu_name(void) { return gpu_name; }

conf_result cm_alloc(size_t len, cm_ptr* out) {
  cu_result r = cu.mem_alloc(out, len ? len : 1);
  if (r == CU_ERROR_OUT_OF_MEMORY)
    return conf_skip("cannot allocate %zu bytes on %s: %s", len, gpu_name, err(r));
  if (r != 0) return conf_fail("cuMemAlloc of %zu bytes on %s returned %s", len, gpu_name, err(r));
  return CONF_PASS;
}

void cm_free(cm_ptr p) {
  if (p) (void)cu.mem_free(p);
}

/* Waits for the legacy default stream, where the copies and memsets went. */
static conf_result sync_after(const char* what, size_t len) {
  cu_result r = cu.stream_sync(NULL);
  if (r != 0)
    return conf_fail("waiting for a %s of %zu bytes on %s: cuStreamSynchronize returned %s",
                     what, len, gpu_name, err(r));
  return CONF_PASS;
}

conf_result cm_memset(cm_ptr dst, unsigned char v, size_t len) {
  if (len == 0) return CONF_PASS;
  cu_result r = cu.memset8(dst, v, len);
  if (r != 0) return conf_fail("cuMemsetD8 of %zu bytes on %s returned %s", len, gpu_name, err(r));
  return sync_after("memset", len);
}

conf_result cm_upload(cm_ptr dst, const void* src, size_t len) {
  if (len == 0) return CONF_PASS;
  cu_result r = cu.htod(dst, src, len);
  if (r != 0)
    return conf_fail("cuMemcpyHtoD of %zu bytes to %s returned %s", len, gpu_name, err(r));
  return sync_after("host-to-device copy", len);
}

conf_result cm_download(void* dst, cm_ptr src, size_t len) {
  if (len == 0) return CONF_PASS;
  cu_result r = cu.dtoh(dst, src, len);
  if (r != 0)
    return conf_fail("cuMemcpyDtoH of %zu bytes from %s returned %s (after the plugin used "
                     "that memory)", len, gpu_name, err(r));
  return sync_after("device-to-host copy", len);
}

conf_result cm_dmabuf_export(cm_ptr p, size_t len, int* fd) {
  if (cu.range_handle == NULL)
    return conf_skip("the CUDA driver has no cuMemGetHandleForAddressRange (older than CUDA "
                     "11.7): no dma-buf export");
  int ok = 0;
  cu_result r = cu.device_attr(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
  if (r != 0 || !ok)
    return conf_skip("%s cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: %s)",
                     gpu_name, r != 0 ? err(r) : "0");
  *fd = -1;
  r = cu.range_handle(fd, p, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != 0 || *fd < 0)
    return conf_skip("the driver cannot export a dma-buf of %zu bytes on %s: "
                     "cuMemGetHandleForAddressRange returned %s (kernel without dma-buf "
                     "support?)", len, gpu_name, err(r));
  return CONF_PASS;
}
