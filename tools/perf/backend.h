/* Where benchmark buffers live and how the tool reaches them: host memory now, CUDA device
 * memory through a dlopen()ed CUDA runtime for the GPU issue. The benchmark only ever calls
 * through this table, so a backend is one file. Functions return 0 on success; on failure,
 * error() says why. */
#ifndef WEFT_PERF_BACKEND_H
#define WEFT_PERF_BACKEND_H

#include <stddef.h>

#include "nccl.h"

struct perf_backend {
  const char* name; /* "host" or "cuda" */
  int is_host;      /* buffers are plain host memory the CPU may read and write directly */
  /* Loads what the backend needs. Call in each rank process after fork, never before. */
  int (*init)(void);
  int (*device_count)(int* n);
  int (*set_device)(int dev);
  /* Page-aligned, zero-filled, already faulted in (host) / device memory (cuda). */
  int (*alloc)(void** ptr, size_t bytes);
  void (*release)(void* ptr);
  int (*upload)(void* dst, const void* src, size_t bytes);   /* host -> buffer */
  int (*download)(void* dst, const void* src, size_t bytes); /* buffer -> host */
  /* The stream collectives are issued on (host: NULL) and the wait for it. */
  int (*stream_create)(cudaStream_t* stream);
  void (*stream_destroy)(cudaStream_t stream);
  int (*stream_sync)(cudaStream_t stream);
  /* CUDA graphs (-G): capture what is issued on a stream (thread-local capture, as nccl-tests),
   * end the capture into an executable graph, launch it on the stream, destroy it. The host
   * backend has none: graph_begin fails and says so. graph_end also writes, where nodes is not
   * NULL, what the captured graph holds: its nodes counted by type ("3 nodes: 2 kernel, 1
   * memcpy"; "?" where the runtime cannot say). */
  int (*graph_begin)(cudaStream_t stream);
  int (*graph_end)(cudaStream_t stream, void** exec, char* nodes, size_t nodes_len);
  int (*graph_launch)(void* exec, cudaStream_t stream);
  void (*graph_destroy)(void* exec);
  /* One line about device dev for the "Using devices" report. */
  void (*describe)(int dev, char* buf, size_t len);
  const char* (*error)(void);
};

extern const struct perf_backend perf_backend_host;
extern const struct perf_backend perf_backend_cuda;

/* NVIDIA GPUs the driver shows, counted without loading or initialising CUDA (so it is safe
 * in a process that forks ranks later); 0 when there is no driver. */
int perf_gpu_probe(void);

#endif
