/* Host backend: buffers are page-aligned malloc'ed memory, touched once so page faults stay
 * out of the timings; collectives on a host-mode communicator complete before they return, so
 * there is no stream to wait for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

static char host_err[256];

static int host_init(void) { return 0; }

static int host_device_count(int* n) {
  *n = 0;
  return 0;
}

static int host_set_device(int dev) {
  (void)dev;
  return 0;
}

static int host_alloc(void** ptr, size_t bytes) {
  long page = sysconf(_SC_PAGESIZE);
  void* p = NULL;
  size_t rounded = bytes ? bytes : 1;
  int rc = posix_memalign(&p, page > 0 ? (size_t)page : 4096, rounded);
  if (rc) {
    snprintf(host_err, sizeof host_err, "posix_memalign(%zu bytes): %s", bytes, strerror(rc));
    return -1;
  }
  memset(p, 0, rounded);
  *ptr = p;
  return 0;
}

static void host_release(void* ptr) { free(ptr); }

static int host_copy(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes) memcpy(dst, src, bytes);
  return 0;
}

static int host_stream_create(cudaStream_t* stream) {
  *stream = NULL;
  return 0;
}

static void host_stream_destroy(cudaStream_t stream) { (void)stream; }

static int host_stream_sync(cudaStream_t stream) {
  (void)stream;
  return 0;
}

static int host_graph_begin(cudaStream_t stream) {
  (void)stream;
  snprintf(host_err, sizeof host_err, "CUDA graphs (-G) need device buffers (--backend cuda)");
  return -1;
}

static int host_graph_end(cudaStream_t stream, void** exec, char* nodes, size_t nodes_len) {
  (void)stream, (void)exec, (void)nodes, (void)nodes_len;
  return host_graph_begin(NULL);
}

static int host_graph_launch(void* exec, cudaStream_t stream) {
  (void)exec, (void)stream;
  return host_graph_begin(NULL);
}

static void host_graph_destroy(void* exec) { (void)exec; }

/* "host <cpu model>" from /proc/cpuinfo when it says. */
static void host_describe(int dev, char* buf, size_t len) {
  (void)dev;
  char model[128] = "cpu";
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10)) continue;
      char* colon = strchr(line, ':');
      if (!colon) break;
      colon++;
      while (*colon == ' ' || *colon == '\t') colon++;
      colon[strcspn(colon, "\n")] = '\0';
      snprintf(model, sizeof model, "%s", colon);
      break;
    }
    fclose(f);
  }
  snprintf(buf, len, "host [%ld cpus] %s", sysconf(_SC_NPROCESSORS_ONLN), model);
}

static const char* host_error(void) { return host_err; }

const struct perf_backend perf_backend_host = {
    .name = "host",
    .is_host = 1,
    .init = host_init,
    .device_count = host_device_count,
    .set_device = host_set_device,
    .alloc = host_alloc,
    .release = host_release,
    .upload = host_copy,
    .download = host_copy,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_sync = host_stream_sync,
    .graph_begin = host_graph_begin,
    .graph_end = host_graph_end,
    .graph_launch = host_graph_launch,
    .graph_destroy = host_graph_destroy,
    .describe = host_describe,
    .error = host_error,
};
