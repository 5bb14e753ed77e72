/* Baselines measured in the same run, so a collective's bandwidth can be read against what
 * the machine does without any library: one thread copying memory, and one TCP stream over
 * loopback between two processes. The bars are stated against these:
 *   AllReduce 64 MiB float over shm        >= 0.4 x memcpy
 *   AllReduce 64 MiB float over the socket >= 0.5 x TCP loopback   (NCCL_SHM_DISABLE=1) */
#ifndef WEFT_PERF_BASELINE_H
#define WEFT_PERF_BASELINE_H

#include <stddef.h>
#include <stdio.h>

struct perf_baseline {
  int have_memcpy, have_tcp;
  size_t memcpy_bytes; /* size of one copy (the run's largest size) */
  double memcpy_gbps;  /* bytes copied / s / 1e9 */
  size_t tcp_bytes;    /* bytes streamed in the timed part */
  size_t tcp_chunk;    /* bytes per write() */
  double tcp_gbps;
  char why_not[160]; /* when one could not be measured */
};

/* Measures both. Forks one helper process for the TCP peer: call before any rank threads
 * exist (before ncclCommInitRank). Takes well under a second. */
void perf_baseline_run(size_t maxbytes, struct perf_baseline* b);

/* The "# Baseline …" lines. */
void perf_baseline_print(FILE* out, const struct perf_baseline* b);

#endif
