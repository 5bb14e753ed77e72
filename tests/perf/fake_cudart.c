/* A stand-in CUDA runtime (built as libcudart.so in a directory of its own) so weft-perf's CUDA
 * backend runs without a GPU: "device" memory is host memory, streams are tokens, work issued
 * on a stream has already happened (the stand-in NCCL library computes synchronously), and a
 * CUDA graph is a token whose launches are counted. It checks how it is used: copies go the
 * way their kind says between known allocations, a capture ends on the stream it began on and
 * in thread-local mode, graphs are launched only while they exist, and at exit nothing is left
 * allocated, capturing or instantiated. Misuse prints "fake-cudart: " and a reason on stderr
 * (the tests look for that prefix).
 *
 * Only the entries weft-perf's backend_cuda.c loads are here, with the runtime's signatures
 * (cudaError_t as int; cudaGraph_t, cudaGraphExec_t and cudaStream_t as pointers). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { OK = 0, ERR_INVALID_VALUE = 1, ERR_DEVICE = 101, ERR_CAPTURE = 900 };
enum { MAX_ALLOCS = 4096, MAX_STREAMS = 256 };

static struct {
  void* p;
  size_t n;
} allocs[MAX_ALLOCS];
static struct {
  void* s;
  int capturing;
} streams[MAX_STREAMS];
static int device, graphs, execs, launches, misuse;

static int complain(const char* what) {
  fprintf(stderr, "fake-cudart: %s\n", what);
  misuse++;
  return ERR_INVALID_VALUE;
}

/* The allocation holding [p, p + n), or -1. */
static int alloc_of(const void* p, size_t n) {
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].p && (const char*)p >= (char*)allocs[i].p &&
        (const char*)p + n <= (char*)allocs[i].p + allocs[i].n)
      return i;
  return -1;
}

static int stream_of(const void* s) {
  for (int i = 0; i < MAX_STREAMS; i++)
    if (streams[i].s && streams[i].s == s) return i;
  return -1;
}

static int devices(void) {
  const char* v = getenv("FAKE_CUDART_DEVICES");
  return v ? atoi(v) : 8;
}

EXPORT const char* cudaGetErrorString(int e) { return e ? "fake-cudart error" : "no error"; }

EXPORT int cudaGetDeviceCount(int* n) {
  *n = devices();
  return OK;
}

EXPORT int cudaSetDevice(int d) {
  if (d < 0 || d >= devices()) return ERR_DEVICE;
  device = d;
  return OK;
}

EXPORT int cudaMalloc(void** p, size_t n) {
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (!allocs[i].p) {
      allocs[i].p = malloc(n ? n : 1);
      allocs[i].n = n ? n : 1;
      *p = allocs[i].p;
      return allocs[i].p ? OK : 2;
    }
  return 2;
}

EXPORT int cudaFree(void* p) {
  if (!p) return OK;
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].p == p) {
      free(p);
      allocs[i].p = NULL;
      return OK;
    }
  return complain("cudaFree of a pointer cudaMalloc did not return");
}

EXPORT int cudaMemcpy(void* dst, const void* src, size_t n, int kind) {
  if (n == 0) return OK;
  int to_dev = alloc_of(dst, n) >= 0, from_dev = alloc_of(src, n) >= 0;
  if ((kind == 1 && (!to_dev || from_dev)) || (kind == 2 && (to_dev || !from_dev)))
    return complain("cudaMemcpy direction does not match its kind");
  memcpy(dst, src, n);
  return OK;
}

EXPORT int cudaMemset(void* p, int v, size_t n) {
  if (n && alloc_of(p, n) < 0) return complain("cudaMemset outside an allocation");
  memset(p, v, n);
  return OK;
}

EXPORT int cudaStreamCreateWithFlags(void** s, unsigned flags) {
  (void)flags;
  for (int i = 0; i < MAX_STREAMS; i++)
    if (!streams[i].s) {
      streams[i].s = malloc(1);
      streams[i].capturing = 0;
      *s = streams[i].s;
      return streams[i].s ? OK : 2;
    }
  return 2;
}

EXPORT int cudaStreamDestroy(void* s) {
  int i = stream_of(s);
  if (i < 0) return complain("cudaStreamDestroy of an unknown stream");
  if (streams[i].capturing) complain("stream destroyed while capturing");
  free(streams[i].s);
  streams[i].s = NULL;
  return OK;
}

EXPORT int cudaStreamSynchronize(void* s) {
  int i = stream_of(s);
  if (i < 0) return complain("cudaStreamSynchronize of an unknown stream");
  return streams[i].capturing ? ERR_CAPTURE : OK; /* as CUDA: not allowed while capturing */
}

EXPORT int cudaDeviceSynchronize(void) { return OK; }

EXPORT int cudaDeviceGetPCIBusId(char* buf, int len, int d) {
  snprintf(buf, (size_t)len, "0000:%02x:00.0", 0x10 + d);
  return OK;
}

EXPORT int cudaGetDeviceProperties_v2(void* props, int d) {
  snprintf(props, 256, "Fake GPU %d", d);
  return OK;
}

EXPORT int cudaStreamBeginCapture(void* s, int mode) {
  int i = stream_of(s);
  if (i < 0 || streams[i].capturing) return complain("capture begins on a bad stream");
  /* Relaxed (2): with -g N one thread captures N streams and instantiates each graph while
   * the others still capture, which the stricter modes refuse on a real GPU. */
  if (mode != 2) complain("capture mode is not relaxed");
  streams[i].capturing = 1;
  return OK;
}

EXPORT int cudaStreamEndCapture(void* s, void** graph) {
  int i = stream_of(s);
  if (i < 0 || !streams[i].capturing) return complain("capture ends where none began");
  streams[i].capturing = 0;
  *graph = malloc(1);
  graphs++;
  return OK;
}

EXPORT int cudaGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  (void)flags;
  if (!graph) return complain("instantiating no graph");
  *exec = malloc(1);
  execs++;
  return OK;
}

EXPORT int cudaGraphLaunch(void* exec, void* s) {
  if (!exec || execs <= 0 || stream_of(s) < 0) return complain("graph launch without a graph");
  launches++;
  return OK;
}

EXPORT int cudaGraphExecDestroy(void* exec) {
  free(exec);
  execs--;
  return OK;
}

EXPORT int cudaGraphDestroy(void* graph) {
  free(graph);
  graphs--;
  return OK;
}

/* A captured graph's nodes, for --graph-nodes: the types listed in FAKE_CUDART_GRAPH_NODES
 * ("0,0,1": two kernels and a memcpy; unset: none). A node handle is its index + 1. */
static int fake_node_types(int* types, int max) {
  const char* v = getenv("FAKE_CUDART_GRAPH_NODES");
  int n = 0;
  while (v && *v && n < max) {
    char* end;
    long t = strtol(v, &end, 10);
    if (end == v) break;
    types[n++] = (int)t;
    v = *end == ',' ? end + 1 : end;
  }
  return n;
}

EXPORT int cudaGraphGetNodes(void* graph, void** nodes, size_t* num) {
  if (!graph || !num) return complain("cudaGraphGetNodes without a graph or a count");
  int types[64];
  size_t n = (size_t)fake_node_types(types, 64);
  if (!nodes) {
    *num = n;
    return OK;
  }
  if (*num < n) return complain("cudaGraphGetNodes into too small an array");
  for (size_t i = 0; i < n; i++) nodes[i] = (void*)(uintptr_t)(i + 1);
  *num = n;
  return OK;
}

EXPORT int cudaGraphNodeGetType(void* node, int* type) {
  int types[64];
  int n = fake_node_types(types, 64);
  uintptr_t i = (uintptr_t)node;
  if (i < 1 || i > (uintptr_t)n) return complain("cudaGraphNodeGetType of an unknown node");
  *type = types[i - 1];
  return OK;
}

__attribute__((destructor)) static void report(void) {
  int left = 0;
  for (int i = 0; i < MAX_ALLOCS; i++) left += allocs[i].p != NULL;
  if (left) fprintf(stderr, "fake-cudart: %d allocations never freed\n", left);
  if (graphs || execs)
    fprintf(stderr, "fake-cudart: %d graphs, %d executables left\n", graphs, execs);
  if (getenv("FAKE_CUDART_REPORT"))
    fprintf(stderr, "fake-cudart report: %d graph launches, %d misuses\n", launches, misuse);
}
