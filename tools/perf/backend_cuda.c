/* CUDA backend: device buffers and streams through the CUDA runtime, loaded with dlopen so
 * weft-perf builds and runs without CUDA headers or libraries. Only the handful of runtime
 * entries below are used, with the signatures the runtime has had since CUDA 4 (cudaError_t
 * is an int-sized enum; cudaMemcpyKind values are fixed); the graph entries (-G) since
 * CUDA 11.4 (cudaGraphInstantiateWithFlags keeps one signature where cudaGraphInstantiate
 * changed in CUDA 12). The library under test may bring its own runtime (stock NCCL links it
 * statically): streams and captures are driver objects, so both runtimes see the same ones. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

typedef int cuda_err_t;
enum { CUDA_MEMCPY_H2D = 1, CUDA_MEMCPY_D2H = 2, CUDA_STREAM_NON_BLOCKING = 1 };
/* cudaStreamCaptureModeRelaxed: with -g N one thread captures N streams at once and ends them
 * one by one; instantiating the first graph while the others still capture is an "unsafe"
 * call that the stricter modes refuse (CUDA error 900). */
enum { CUDA_CAPTURE_RELAXED = 2 };

static struct {
  void* handle;
  cuda_err_t (*GetDeviceCount)(int*);
  cuda_err_t (*SetDevice)(int);
  cuda_err_t (*Malloc)(void**, size_t);
  cuda_err_t (*Free)(void*);
  cuda_err_t (*Memcpy)(void*, const void*, size_t, int);
  cuda_err_t (*Memset)(void*, int, size_t);
  cuda_err_t (*StreamCreateWithFlags)(cudaStream_t*, unsigned);
  cuda_err_t (*StreamDestroy)(cudaStream_t);
  cuda_err_t (*StreamSynchronize)(cudaStream_t);
  cuda_err_t (*DeviceSynchronize)(void);
  cuda_err_t (*DeviceGetPCIBusId)(char*, int, int);
  cuda_err_t (*GetDeviceProperties)(void*, int);
  const char* (*GetErrorString)(cuda_err_t);
  /* -G only; NULL when the runtime lacks them (graph_begin then says so). */
  cuda_err_t (*StreamBeginCapture)(cudaStream_t, int);
  cuda_err_t (*StreamEndCapture)(cudaStream_t, void**);
  cuda_err_t (*GraphInstantiateWithFlags)(void**, void*, unsigned long long);
  cuda_err_t (*GraphLaunch)(void*, cudaStream_t);
  cuda_err_t (*GraphExecDestroy)(void*);
  cuda_err_t (*GraphDestroy)(void*);
  /* --graph-nodes only */
  cuda_err_t (*GraphGetNodes)(void*, void**, size_t*);
  cuda_err_t (*GraphNodeGetType)(void*, int*);
} rt;

static char cuda_err[256];

static int record(cuda_err_t e, const char* what) {
  if (e == 0) return 0;
  snprintf(cuda_err, sizeof cuda_err, "%s: CUDA error %d (%s)", what, e,
           rt.GetErrorString ? rt.GetErrorString(e) : "?");
  return -1;
}

static void* sym(const char* name) { return dlsym(rt.handle, name); }

#define LOAD(field, name)                                                 \
  do {                                                                    \
    void* p_ = sym(name);                                                 \
    if (!p_) {                                                            \
      snprintf(cuda_err, sizeof cuda_err, "CUDA runtime lacks %s", name); \
      return -1;                                                          \
    }                                                                     \
    memcpy(&rt.field, &p_, sizeof p_);                                    \
  } while (0)

#define LOAD_OPTIONAL(field, name)     \
  do {                                 \
    void* p_ = sym(name);              \
    memcpy(&rt.field, &p_, sizeof p_); \
  } while (0)

static int cuda_init(void) {
  if (rt.handle) return 0;
  static const char* names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                "libcudart.so.11.0"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !rt.handle; i++)
    rt.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!rt.handle) {
    snprintf(cuda_err, sizeof cuda_err, "cannot load the CUDA runtime (libcudart.so): %s",
             dlerror());
    return -1;
  }
  LOAD(GetErrorString, "cudaGetErrorString");
  LOAD(GetDeviceCount, "cudaGetDeviceCount");
  LOAD(SetDevice, "cudaSetDevice");
  LOAD(Malloc, "cudaMalloc");
  LOAD(Free, "cudaFree");
  LOAD(Memcpy, "cudaMemcpy");
  LOAD(Memset, "cudaMemset");
  LOAD(StreamCreateWithFlags, "cudaStreamCreateWithFlags");
  LOAD(StreamDestroy, "cudaStreamDestroy");
  LOAD(StreamSynchronize, "cudaStreamSynchronize");
  LOAD(DeviceSynchronize, "cudaDeviceSynchronize");
  LOAD(DeviceGetPCIBusId, "cudaDeviceGetPCIBusId");
  /* CUDA 12 renamed the entry behind the macro; either reads the same leading name field. */
  void* props = sym("cudaGetDeviceProperties_v2");
  if (!props) props = sym("cudaGetDeviceProperties");
  memcpy(&rt.GetDeviceProperties, &props, sizeof props);
  LOAD_OPTIONAL(StreamBeginCapture, "cudaStreamBeginCapture");
  LOAD_OPTIONAL(StreamEndCapture, "cudaStreamEndCapture");
  LOAD_OPTIONAL(GraphInstantiateWithFlags, "cudaGraphInstantiateWithFlags");
  LOAD_OPTIONAL(GraphLaunch, "cudaGraphLaunch");
  LOAD_OPTIONAL(GraphExecDestroy, "cudaGraphExecDestroy");
  LOAD_OPTIONAL(GraphDestroy, "cudaGraphDestroy");
  LOAD_OPTIONAL(GraphGetNodes, "cudaGraphGetNodes");
  LOAD_OPTIONAL(GraphNodeGetType, "cudaGraphNodeGetType");
  return 0;
}

static int cuda_device_count(int* n) { return record(rt.GetDeviceCount(n), "cudaGetDeviceCount"); }

static int cuda_set_device(int dev) { return record(rt.SetDevice(dev), "cudaSetDevice"); }

static int cuda_alloc(void** ptr, size_t bytes) {
  void* p = NULL;
  if (record(rt.Malloc(&p, bytes ? bytes : 1), "cudaMalloc")) return -1;
  if (record(rt.Memset(p, 0, bytes), "cudaMemset")) {
    rt.Free(p);
    return -1;
  }
  if (record(rt.DeviceSynchronize(), "cudaDeviceSynchronize")) {
    rt.Free(p);
    return -1;
  }
  *ptr = p;
  return 0;
}

static void cuda_release(void* ptr) {
  if (ptr) rt.Free(ptr);
}

/* cudaMemcpy from pageable memory may return once the data is staged, before the DMA has
 * landed; the collective then runs on a non-blocking stream that does not wait for it (stock
 * NCCL and weft alike read stale inputs from 512 KiB up). The device sync makes the upload
 * complete before anything else is enqueued. */
static int cuda_upload(void* dst, const void* src, size_t bytes) {
  if (!bytes) return 0;
  if (record(rt.Memcpy(dst, src, bytes, CUDA_MEMCPY_H2D), "cudaMemcpy H2D")) return -1;
  return record(rt.DeviceSynchronize(), "cudaDeviceSynchronize");
}

static int cuda_download(void* dst, const void* src, size_t bytes) {
  return bytes ? record(rt.Memcpy(dst, src, bytes, CUDA_MEMCPY_D2H), "cudaMemcpy D2H") : 0;
}

static int cuda_stream_create(cudaStream_t* stream) {
  return record(rt.StreamCreateWithFlags(stream, CUDA_STREAM_NON_BLOCKING),
                "cudaStreamCreateWithFlags");
}

static void cuda_stream_destroy(cudaStream_t stream) {
  if (stream) rt.StreamDestroy(stream);
}

static int cuda_stream_sync(cudaStream_t stream) {
  return record(rt.StreamSynchronize(stream), "cudaStreamSynchronize");
}

static int cuda_graph_begin(cudaStream_t stream) {
  if (!rt.StreamBeginCapture || !rt.StreamEndCapture || !rt.GraphInstantiateWithFlags ||
      !rt.GraphLaunch || !rt.GraphExecDestroy || !rt.GraphDestroy) {
    snprintf(cuda_err, sizeof cuda_err,
             "this CUDA runtime lacks the graph entries -G needs (CUDA 11.4 or later)");
    return -1;
  }
  return record(rt.StreamBeginCapture(stream, CUDA_CAPTURE_RELAXED), "cudaStreamBeginCapture");
}

/* cudaGraphNodeType's values, as the runtime numbers them (12 is the driver's batch memory
 * operation, which the runtime does not name). */
static const char* const node_types[] = {
    "kernel", "memcpy",  "memset",   "host",      "graph",     "empty",  "event wait",
    "event record", "semaphore signal", "semaphore wait", "mem alloc", "mem free", "batch mem op",
    "conditional"};
#define NTYPES (int)(sizeof node_types / sizeof node_types[0])

/* "N nodes: a kernel, b memcpy, ..." for graph into buf. */
static void describe_nodes(void* graph, char* buf, size_t len) {
  size_t n = 0;
  if (!rt.GraphGetNodes || !rt.GraphNodeGetType || rt.GraphGetNodes(graph, NULL, &n) != 0) {
    snprintf(buf, len, "? (this runtime cannot list a graph's nodes)");
    return;
  }
  void** nodes = n ? calloc(n, sizeof *nodes) : NULL;
  if (n && (!nodes || rt.GraphGetNodes(graph, nodes, &n) != 0)) {
    free(nodes);
    snprintf(buf, len, "%zu nodes (types unknown)", n);
    return;
  }
  int count[NTYPES + 1] = {0};
  for (size_t i = 0; i < n; i++) {
    int t = -1;
    if (rt.GraphNodeGetType(nodes[i], &t) != 0 || t < 0 || t >= NTYPES) t = NTYPES;
    count[t]++;
  }
  free(nodes);
  size_t at = (size_t)snprintf(buf, len, "%zu node%s", n, n == 1 ? "" : "s");
  const char* sep = ": ";
  for (int t = 0; t <= NTYPES && at < len; t++) {
    if (!count[t]) continue;
    at += (size_t)snprintf(buf + at, len - at, "%s%d %s", sep, count[t],
                           t < NTYPES ? node_types[t] : "other");
    sep = ", ";
  }
}

static int cuda_graph_end(cudaStream_t stream, void** exec, char* nodes, size_t nodes_len) {
  void* graph = NULL;
  if (record(rt.StreamEndCapture(stream, &graph), "cudaStreamEndCapture")) return -1;
  if (nodes && nodes_len) describe_nodes(graph, nodes, nodes_len);
  int rc = record(rt.GraphInstantiateWithFlags(exec, graph, 0), "cudaGraphInstantiateWithFlags");
  rt.GraphDestroy(graph); /* the executable graph does not need it */
  return rc;
}

static int cuda_graph_launch(void* exec, cudaStream_t stream) {
  return record(rt.GraphLaunch(exec, stream), "cudaGraphLaunch");
}

static void cuda_graph_destroy(void* exec) {
  if (exec) rt.GraphExecDestroy(exec);
}

static void cuda_describe(int dev, char* buf, size_t len) {
  char bus[32] = "?";
  char name[256] = "";
  if (rt.DeviceGetPCIBusId(bus, (int)sizeof bus, dev) != 0) snprintf(bus, sizeof bus, "?");
  if (rt.GetDeviceProperties) {
    /* cudaDeviceProp begins with char name[256]; the rest is larger than any known layout. */
    char* props = calloc(1, 64 * 1024);
    if (props && rt.GetDeviceProperties(props, dev) == 0) {
      memcpy(name, props, sizeof name - 1);
      name[sizeof name - 1] = '\0';
    }
    free(props);
  }
  snprintf(buf, len, "cuda %2d [%s] %s", dev, bus, name);
}

static const char* cuda_error(void) { return cuda_err; }

int perf_gpu_probe(void) {
  /* The driver's per-GPU entries, else its device nodes (/dev/nvidia0, …; not nvidiactl). */
  static const struct {
    const char* dir;
    const char* prefix;
  } where[] = {{"/proc/driver/nvidia/gpus", ""}, {"/dev", "nvidia"}};
  for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
    DIR* d = opendir(where[w].dir);
    if (!d) continue;
    int n = 0;
    size_t plen = strlen(where[w].prefix);
    struct dirent* e;
    while ((e = readdir(d))) {
      const char* name = e->d_name;
      if (name[0] == '.' || strncmp(name, where[w].prefix, plen)) continue;
      if (plen && (name[plen] < '0' || name[plen] > '9')) continue;
      n++;
    }
    closedir(d);
    if (n > 0) return n;
  }
  return 0;
}

const struct perf_backend perf_backend_cuda = {
    .name = "cuda",
    .is_host = 0,
    .init = cuda_init,
    .device_count = cuda_device_count,
    .set_device = cuda_set_device,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_sync = cuda_stream_sync,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .describe = cuda_describe,
    .error = cuda_error,
};
