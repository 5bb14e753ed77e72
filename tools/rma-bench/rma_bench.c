/* weft-rma-bench: one-sided calls between two host-mode ranks (forked here).
 *
 *  latency:   rank 0 puts 8 bytes and a signal to rank 1, which waits for it and answers the
 *             same way; half of a round trip is one put+signal+wait. Median of the runs.
 *  bandwidth: rank 0 puts --bytes (default 64 MiB) into rank 1's window, rank 1 waits and
 *             signals back; bytes / time of that round. Median of the runs, beside a memcpy of
 *             the same size in the same process (the reference).
 * Usage: weft-rma-bench [--iters N] [--runs R] [--bytes B] [--gpu]; NCCL_SHM_DISABLE=1 for the
 * network path. --gpu (a CUDA build): both ranks on GPU 0, windows in its memory, everything on
 * a stream; a run's time ends when the stream has drained. The two ranks are two processes, so
 * their kernels time-slice on the GPU (no MPS): each hand-over of a round trip can wait for a
 * time slice, hence fewer round trips by default there, and a line per run on stderr. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    ncclResult_t r_ = (call);                                                        \
    if (r_ != ncclSuccess) {                                                         \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, ncclGetErrorString(r_));    \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int iters = 0, runs = 9, gpu = 0; /* iters 0: 2000 on the host, 200 with --gpu */
static size_t bytes = 64u << 20;

#ifdef WEFT_RMA_BENCH_CUDA
#include <cuda_runtime_api.h>
#define CUDA(call)                                                                   \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));     \
      return 1;                                                                      \
    }                                                                                \
  } while (0)
#endif

/* Buffers: host memory, or (--gpu) memory of GPU 0, which both ranks share. */
static void* mem_alloc(size_t n) {
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) {
    void* p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess && cudaMemset(p, 0, n) == cudaSuccess ? p : NULL;
  }
#endif
  return calloc(1, n);
}
static void mem_free(void* p) {
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) {
    cudaFree(p);
    return;
  }
#endif
  free(p);
}
static void mem_set(void* p, int v, size_t n) {
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) {
    cudaMemset(p, v, n);
    return;
  }
#endif
  memset(p, v, n);
}
static void mem_copy(void* d, const void* s, size_t n) {
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) {
    cudaMemcpy(d, s, n, cudaMemcpyDefault);
    return;
  }
#endif
  memcpy(d, s, n);
}
/* Everything enqueued on stream has run (host mode: the calls returned). */
static int drain(int rank, cudaStream_t stream) {
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) CUDA(cudaStreamSynchronize(stream));
#else
  (void)rank, (void)stream;
#endif
  return 0;
}

static int bench(int rank, ncclUniqueId id) {
  cudaStream_t stream = NULL;
#ifdef WEFT_RMA_BENCH_CUDA
  if (gpu) {
    CUDA(cudaSetDevice(0));
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
#endif
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, 2, id, rank));
  size_t wbytes = bytes < 4096 ? 4096 : bytes;
  char* wbuf = mem_alloc(wbytes);
  char* sbuf = mem_alloc(wbytes);
  char* copy = mem_alloc(bytes); /* the reference copy's destination */
  char* sync = mem_alloc(8);     /* the AllReduce that starts each run together */
  if (!wbuf || !sbuf || !copy || !sync) return 1;
  mem_set(sbuf, rank + 1, wbytes);
  ncclWindow_t win, src;
  CHECK(ncclCommWindowRegister(comm, wbuf, wbytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  CHECK(ncclCommWindowRegister(comm, sbuf, wbytes, &src, NCCL_WIN_COLL_SYMMETRIC));
  int peer = 1 - rank;
  ncclWaitSignalDesc_t d = {1, peer, 0, 0};
  double lat[64], bw[64], ref[64];
  for (int r = 0; r < runs; r++) {
    CHECK(ncclAllReduce(sync, sync, 1, ncclInt8, ncclMax, comm, stream));
    if (drain(rank, stream)) return 1;
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
      if (rank == 0) {
        CHECK(ncclPutSignal(sbuf, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, stream));
        CHECK(ncclWaitSignal(1, &d, comm, stream));
      } else {
        CHECK(ncclWaitSignal(1, &d, comm, stream));
        CHECK(ncclPutSignal(sbuf, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, stream));
      }
    }
    if (drain(rank, stream)) return 1;
    lat[r] = (now_s() - t0) / iters / 2 * 1e6;
    if (gpu && rank == 0) fprintf(stderr, "latency run %d: %.2f us\n", r, lat[r]);
  }
  for (int r = 0; r < runs; r++) {
    CHECK(ncclAllReduce(sync, sync, 1, ncclInt8, ncclMax, comm, stream));
    if (drain(rank, stream)) return 1;
    double t0 = now_s();
    if (rank == 0) {
      CHECK(ncclPutSignal(sbuf, bytes, ncclInt8, peer, win, 0, 0, 0, 0, comm, stream));
      CHECK(ncclWaitSignal(1, &d, comm, stream));
    } else {
      CHECK(ncclWaitSignal(1, &d, comm, stream));
      CHECK(ncclSignal(peer, 0, 0, 0, comm, stream));
    }
    if (drain(rank, stream)) return 1;
    bw[r] = bytes / (now_s() - t0) / 1e9;
    char ends[2];
    mem_copy(&ends[0], wbuf, 1);
    mem_copy(&ends[1], wbuf + bytes - 1, 1);
    if (rank == 1 && (ends[0] != 1 || ends[1] != 1)) {
      fprintf(stderr, "rank 1: the put's data is not in the window\n");
      return 1;
    }
    t0 = now_s();
    mem_copy(copy, sbuf, bytes);
    ref[r] = bytes / (now_s() - t0) / 1e9;
  }
  if (rank == 0) {
    const char* net = getenv("NCCL_SHM_DISABLE");
    printf("path: %s\n", gpu ? "GPU 0, shared by both ranks"
                             : net && strcmp(net, "1") == 0 ? "host, net (NCCL_SHM_DISABLE=1)"
                                                            : "host, shm");
    printf("8-byte put+signal+wait: %.2f us (median of %d runs of %d round trips, halved)\n",
           median(lat, runs), runs, iters);
    double b = median(bw, runs), m = median(ref, runs);
    printf("%zu-byte put: %.2f GB/s, %s %.2f GB/s in the same run (%.2fx), median of %d\n",
           bytes, b, gpu ? "cudaMemcpy" : "memcpy", m, b / m, runs);
  }
  CHECK(ncclCommWindowDeregister(comm, src));
  CHECK(ncclCommWindowDeregister(comm, win));
  CHECK(ncclCommDestroy(comm));
  mem_free(wbuf);
  mem_free(sbuf);
  mem_free(copy);
  mem_free(sync);
#ifdef WEFT_RMA_BENCH_CUDA
  if (stream) cudaStreamDestroy(stream);
#endif
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      if ((iters = atoi(argv[++i])) < 1) iters = -1; /* refused below, not the default */
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      bytes = strtoull(argv[++i], NULL, 0);
#ifdef WEFT_RMA_BENCH_CUDA
    } else if (strcmp(argv[i], "--gpu") == 0) {
      gpu = 1;
#endif
    } else {
      fprintf(stderr, "usage: %s [--iters N] [--runs R (1..64)] [--bytes B (>= 8)]%s\n", argv[0],
#ifdef WEFT_RMA_BENCH_CUDA
              " [--gpu]"
#else
              ""
#endif
      );
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (iters == 0) iters = gpu ? 200 : 2000;
  if (iters < 1 || runs < 1 || runs > 64 || bytes < 8) {
    fprintf(stderr, "%s: --iters >= 1, --runs 1..64, --bytes >= 8\n", argv[0]);
    return 2;
  }
  setenv("WEFT_DEVICE", gpu ? "device" : "host", 0);
  int fds[2];
  ncclUniqueId id;
  if (pipe(fds) != 0) return 1;
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
    int rc = bench(1, id);
    fflush(NULL);
    _exit(rc);
  }
  if (ncclGetUniqueId(&id) != ncclSuccess || write(fds[1], &id, sizeof id) != (ssize_t)sizeof id)
    return 1;
  int rc = bench(0, id), st = 0;
  waitpid(child, &st, 0);
  return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
