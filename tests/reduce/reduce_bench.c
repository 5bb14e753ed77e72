/* Throughput of the host reduction kernels on large buffers, against memcpy of the same size.
 * Not a test (speed is never asserted): run by hand, e.g. reduce_bench [MiB] [reps].
 * MB/s counts the bytes of one buffer per call (as a bus-bandwidth figure would); a reduce
 * moves three buffers through memory (two reads, one write), memcpy two. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/reduce.h"
#include "util/names.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { B_MEMCPY, B_REDUCE, B_REDUCE_IP, B_PREPARE, B_REDUCE_PREPARE, B_FINISH };

static double best_mbs(int what, const weft_redop* op, void* d, void* a, void* b, size_t bytes,
                       int reps) {
  size_t count = bytes / (dtype_size(op->type) ? dtype_size(op->type) : 1);
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = now_s();
    switch (what) {
      case B_MEMCPY: memcpy(d, a, bytes); break;
      case B_REDUCE: host_reduce(op, d, a, b, count); break;
      case B_REDUCE_IP: host_reduce(op, d, d, b, count); break;
      case B_PREPARE: host_prepare(op, d, a, count); break;
      case B_REDUCE_PREPARE: host_reduce_prepare(op, d, a, b, count); break;
      case B_FINISH: host_finish(op, d, a, count); break;
    }
    t = now_s() - t;
    if (t < best) best = t;
  }
  return (double)bytes / best / 1e6;
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  size_t bytes = mib << 20;
  unsigned char* a = malloc(bytes);
  unsigned char* b = malloc(bytes);
  unsigned char* d = malloc(bytes);
  if (!a || !b || !d) return 1;
  /* Small positive values: no NaN/inf in any type, so every path does its ordinary work. */
  for (size_t i = 0; i < bytes; i++) {
    a[i] = (unsigned char)(0x21 + i % 7);
    b[i] = (unsigned char)(0x23 + i % 5);
    d[i] = 0;
  }
  weft_redop cp;
  redop_from_builtin(ncclSum, ncclUint8, 1, &cp);
  printf("memcpy %zu MiB: %.0f MB/s\n", mib, best_mbs(B_MEMCPY, &cp, d, a, b, bytes, reps));
  printf("%-9s %8s %8s %8s %8s %8s %8s %8s %8s\n", "type", "sum", "sum-ip", "prod", "max",
         "min", "premul", "fused", "avg-fin");
  for (int t = 0; t < ncclNumTypes; t++) {
    weft_redop ops[4], avg, pre;
    for (int o = 0; o < 4; o++) redop_from_builtin((ncclRedOp_t)o, (ncclDataType_t)t, 1, &ops[o]);
    redop_from_builtin(ncclAvg, (ncclDataType_t)t, 3, &avg);
    if (avg.kind == WEFT_RED_PREMULSUM)
      pre = avg;
    else {
      unsigned char three[8] = {3};
      redop_premulsum((ncclDataType_t)t, three, &pre);
    }
    printf("%-9s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f\n",
           dtype_name((ncclDataType_t)t), best_mbs(B_REDUCE, &ops[0], d, a, b, bytes, reps),
           best_mbs(B_REDUCE_IP, &ops[0], d, a, b, bytes, reps),
           best_mbs(B_REDUCE, &ops[1], d, a, b, bytes, reps),
           best_mbs(B_REDUCE, &ops[2], d, a, b, bytes, reps),
           best_mbs(B_REDUCE, &ops[3], d, a, b, bytes, reps),
           best_mbs(B_PREPARE, &pre, d, a, b, bytes, reps),
           best_mbs(B_REDUCE_PREPARE, &pre, d, a, b, bytes, reps),
           best_mbs(B_FINISH, &avg, d, a, b, bytes, reps));
  }
  free(a);
  free(b);
  free(d);
  return 0;
}
