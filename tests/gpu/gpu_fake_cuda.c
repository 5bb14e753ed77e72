/* A stand-in for the few CUDA runtime calls gpu_coll makes, on host memory, so the harness
 * itself (layouts, offsets, guards, the reference, the sampler, groups, forked ranks, the leak
 * check) can be checked on a machine without a GPU: gpu_harness_selftest links it instead of
 * libcudart and runs weft in host mode (WEFT_DEVICE=host), where collectives take host pointers
 * and complete before they return. "Devices": WEFT_FAKE_CUDA_DEVICES (default 2). Graph
 * capture is not simulated (cudaErrorNotSupported), nor ncclMemAlloc: suite coll only. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int g_dev;
static char g_stream_tag[8];

const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error (fake CUDA)" : "error (fake CUDA)";
}

cudaError_t cudaGetLastError(void) { return cudaSuccess; }

cudaError_t cudaGetDeviceCount(int* count) {
  const char* s = getenv("WEFT_FAKE_CUDA_DEVICES");
  *count = s && *s ? atoi(s) : 2;
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  g_dev = device;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t size) {
  return posix_memalign(p, 256, size ? size : 1) == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  (void)flags;
  *s = (cudaStream_t)(void*)&g_stream_tag[g_dev & 7];
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  (void)s;
  memset(p, v, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t s) {
  (void)k, (void)s;
  memmove(dst, src, n);
  return cudaSuccess;
}

/* WEFT_FAKE_CUDA_CORRUPT=N: every Nth download flips a byte in its middle (the self-test that
 * the harness notices wrong results). */
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind k) {
  static unsigned long downloads;
  memmove(dst, src, n);
  const char* s = getenv("WEFT_FAKE_CUDA_CORRUPT");
  unsigned long every = s && *s ? strtoul(s, NULL, 0) : 0;
  if (k == cudaMemcpyDeviceToHost && n > 0 && every && ++downloads % every == 0)
    ((unsigned char*)dst)[n / 2] ^= 0x10;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m) {
  (void)s, (void)m;
  return cudaErrorNotSupported;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  (void)s, (void)g;
  return cudaErrorNotSupported;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  (void)g, (void)nodes, (void)n;
  return cudaErrorNotSupported;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* e, cudaGraph_t g,
                                          unsigned long long flags) {
  (void)e, (void)g, (void)flags;
  return cudaErrorNotSupported;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  (void)e, (void)s;
  return cudaErrorNotSupported;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  (void)e;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  (void)g;
  return cudaSuccess;
}
