/* weft-rma-bench: one-sided calls between two host-mode ranks (forked here).
 *
 *  latency:   rank 0 puts 8 bytes and a signal to rank 1, which waits for it and answers the
 *             same way; half of a round trip is one put+signal+wait. Median of the runs.
 *  bandwidth: rank 0 puts --bytes (default 64 MiB) into rank 1's window, rank 1 waits and
 *             signals back; bytes / time of that round. Median of the runs, beside a memcpy of
 *             the same size in the same process (the reference).
 * Usage: weft-rma-bench [--iters N] [--runs R] [--bytes B]; NCCL_SHM_DISABLE=1 for the
 * network path. */
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

static int iters = 2000, runs = 9;
static size_t bytes = 64u << 20;

static int bench(int rank, ncclUniqueId id) {
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, 2, id, rank));
  size_t wbytes = bytes < 4096 ? 4096 : bytes;
  char* wbuf = malloc(wbytes);
  char* sbuf = malloc(wbytes);
  char* copy = malloc(bytes); /* the reference memcpy's destination */
  char sync[1] = {0};
  if (!wbuf || !sbuf || !copy) return 1;
  memset(copy, 0, bytes);
  memset(wbuf, 0, wbytes);
  memset(sbuf, rank + 1, wbytes);
  ncclWindow_t win, src;
  CHECK(ncclCommWindowRegister(comm, wbuf, wbytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  CHECK(ncclCommWindowRegister(comm, sbuf, wbytes, &src, NCCL_WIN_COLL_SYMMETRIC));
  int peer = 1 - rank;
  ncclWaitSignalDesc_t d = {1, peer, 0, 0};
  double lat[64], bw[64], ref[64];
  for (int r = 0; r < runs; r++) {
    CHECK(ncclAllReduce(sync, sync, 1, ncclInt8, ncclMax, comm, NULL)); /* start together */
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
      if (rank == 0) {
        CHECK(ncclPutSignal(sbuf, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL));
        CHECK(ncclWaitSignal(1, &d, comm, NULL));
      } else {
        CHECK(ncclWaitSignal(1, &d, comm, NULL));
        CHECK(ncclPutSignal(sbuf, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL));
      }
    }
    lat[r] = (now_s() - t0) / iters / 2 * 1e6;
  }
  for (int r = 0; r < runs; r++) {
    CHECK(ncclAllReduce(sync, sync, 1, ncclInt8, ncclMax, comm, NULL));
    double t0 = now_s();
    if (rank == 0) {
      CHECK(ncclPutSignal(sbuf, bytes, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL));
      CHECK(ncclWaitSignal(1, &d, comm, NULL));
    } else {
      CHECK(ncclWaitSignal(1, &d, comm, NULL));
      CHECK(ncclSignal(peer, 0, 0, 0, comm, NULL));
    }
    bw[r] = bytes / (now_s() - t0) / 1e9;
    if (rank == 1 && (wbuf[0] != 1 || wbuf[bytes - 1] != 1)) {
      fprintf(stderr, "rank 1: the put's data is not in the window\n");
      return 1;
    }
    t0 = now_s();
    memcpy(copy, sbuf, bytes);
    ref[r] = bytes / (now_s() - t0) / 1e9;
  }
  if (rank == 0) {
    const char* net = getenv("NCCL_SHM_DISABLE");
    printf("path: %s\n", net && strcmp(net, "1") == 0 ? "net (NCCL_SHM_DISABLE=1)" : "shm");
    printf("8-byte put+signal+wait: %.2f us (median of %d runs of %d round trips, halved)\n",
           median(lat, runs), runs, iters);
    double b = median(bw, runs), m = median(ref, runs);
    printf("%zu-byte put: %.2f GB/s, memcpy %.2f GB/s in the same run (%.2fx), median of %d\n",
           bytes, b, m, b / m, runs);
  }
  CHECK(ncclCommWindowDeregister(comm, src));
  CHECK(ncclCommWindowDeregister(comm, win));
  CHECK(ncclCommDestroy(comm));
  free(wbuf);
  free(sbuf);
  free(copy);
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      bytes = strtoull(argv[++i], NULL, 0);
    } else {
      fprintf(stderr, "usage: %s [--iters N] [--runs R (1..64)] [--bytes B (>= 8)]\n", argv[0]);
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (iters < 1 || runs < 1 || runs > 64 || bytes < 8) {
    fprintf(stderr, "%s: --iters >= 1, --runs 1..64, --bytes >= 8\n", argv[0]);
    return 2;
  }
  setenv("WEFT_DEVICE", "host", 0);
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
