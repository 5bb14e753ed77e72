/* nccl-compat-check LIB [NGPUS]: load an NCCL-ABI library by path (weft's libnccl.so.2 or
 * stock NCCL), create NGPUS communicators in this process with ncclCommInitAll, report their
 * devices, and (when the library has collectives) run one AllReduce of floats on device buffers
 * and check it. Used on GPU machines to show that stock NCCL loads weft's net plugin
 * (NCCL_NET_PLUGIN=…/libnccl-net-weft-socket.so with P2P and SHM off) and that weft's device-mode
 * init works. No CUDA headers needed: the runtime is reached through dlopen. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_free_fn)(void*);
typedef int (*cuda_memcpy_fn)(void*, const void*, size_t, int);
typedef int (*cuda_set_device_fn)(int);
typedef int (*cuda_sync_fn)(void);

#define RESOLVE(lib, name) dlsym(lib, name)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBNCCL [NGPUS]\n", argv[0]);
    return 2;
  }
  int ngpus = argc > 2 ? atoi(argv[2]) : 2;
  if (ngpus < 1 || ngpus > 16) ngpus = 2;
  void* nccl = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  void* rt = dlopen("libcudart.so", RTLD_NOW | RTLD_LOCAL);
  if (!rt) rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!rt) rt = dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!nccl || !rt) {
    fprintf(stderr, "cannot load %s or libcudart: %s\n", argv[1], dlerror());
    return 1;
  }
  ncclResult_t (*get_version)(int*) = (ncclResult_t(*)(int*))RESOLVE(nccl, "ncclGetVersion");
  ncclResult_t (*init_all)(ncclComm_t*, int, const int*) =
      (ncclResult_t(*)(ncclComm_t*, int, const int*))RESOLVE(nccl, "ncclCommInitAll");
  ncclResult_t (*cu_dev)(ncclComm_t, int*) =
      (ncclResult_t(*)(ncclComm_t, int*))RESOLVE(nccl, "ncclCommCuDevice");
  ncclResult_t (*destroy)(ncclComm_t) = (ncclResult_t(*)(ncclComm_t))RESOLVE(nccl, "ncclCommDestroy");
  ncclResult_t (*allreduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) =
      (ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                       cudaStream_t))RESOLVE(nccl, "ncclAllReduce");
  ncclResult_t (*gstart)(void) = (ncclResult_t(*)(void))RESOLVE(nccl, "ncclGroupStart");
  ncclResult_t (*gend)(void) = (ncclResult_t(*)(void))RESOLVE(nccl, "ncclGroupEnd");
  const char* (*errstr)(ncclResult_t) = (const char* (*)(ncclResult_t))RESOLVE(nccl, "ncclGetErrorString");
  cuda_malloc_fn cmalloc = (cuda_malloc_fn)RESOLVE(rt, "cudaMalloc");
  cuda_free_fn cfree = (cuda_free_fn)RESOLVE(rt, "cudaFree");
  cuda_memcpy_fn cmemcpy = (cuda_memcpy_fn)RESOLVE(rt, "cudaMemcpy");
  cuda_set_device_fn csetdev = (cuda_set_device_fn)RESOLVE(rt, "cudaSetDevice");
  cuda_sync_fn csync = (cuda_sync_fn)RESOLVE(rt, "cudaDeviceSynchronize");
  if (!get_version || !init_all || !cu_dev || !destroy || !allreduce || !cmalloc || !cmemcpy) {
    fprintf(stderr, "missing symbols in %s or libcudart\n", argv[1]);
    return 1;
  }
  int v = 0;
  get_version(&v);
  printf("library %s: ncclGetVersion %d\n", argv[1], v);
  ncclComm_t comms[16];
  ncclResult_t r = init_all(comms, ngpus, NULL);
  if (r != ncclSuccess) {
    printf("ncclCommInitAll(%d): %s\n", ngpus, errstr(r));
    return 1;
  }
  for (int i = 0; i < ngpus; i++) {
    int d = -2;
    cu_dev(comms[i], &d);
    printf("comm %d: cuda device %d\n", i, d);
  }
  enum { N = 1 << 20 };
  float* host = malloc(N * sizeof(float));
  void* bufs[16];
  for (int i = 0; i < ngpus; i++) {
    for (int k = 0; k < N; k++) host[k] = (float)(i + 1) + (float)(k % 7);
    csetdev(i);
    cmalloc(&bufs[i], N * sizeof(float));
    cmemcpy(bufs[i], host, N * sizeof(float), 1 /* host to device */);
  }
  gstart();
  for (int i = 0; i < ngpus; i++) {
    csetdev(i);
    r = allreduce(bufs[i], bufs[i], N, ncclFloat, ncclSum, comms[i], NULL);
    if (r != ncclSuccess) break;
  }
  ncclResult_t e = gend();
  int wrong = -1;
  if (r == ncclSuccess && e == ncclSuccess) {
    wrong = 0;
    for (int i = 0; i < ngpus; i++) {
      csetdev(i);
      csync();
      cmemcpy(host, bufs[i], N * sizeof(float), 2 /* device to host */);
      float base = (float)(ngpus * (ngpus + 1) / 2);
      for (int k = 0; k < N; k++)
        if (host[k] != base + (float)(ngpus * (k % 7))) wrong++;
    }
    printf("allreduce of %d floats on %d GPUs: %d wrong\n", N, ngpus, wrong);
  } else {
    printf("allreduce: %s\n", errstr(r != ncclSuccess ? r : e));
  }
  for (int i = 0; i < ngpus; i++) {
    csetdev(i);
    cfree(bufs[i]);
    destroy(comms[i]);
  }
  free(host);
  return wrong > 0 ? 1 : 0;
}
