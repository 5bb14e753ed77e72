/* weft-perf --explain: per size of a run, what the library decided (algorithm, protocol,
 * channels and its predicted time, from weft's weftCommTuneQuery extension) next to what was
 * measured; a table after each block and one PNG plot of predicted vs measured for the run.
 * Rank 0's process keeps the rows; the query is local (no communication). */
#ifndef WEFT_PERF_EXPLAIN_H
#define WEFT_PERF_EXPLAIN_H

#include <stddef.h>
#include <stdio.h>

#include "lib.h"
#include "perf.h"
#include "png.h" /* perf_png_write, which the plot is saved with */

struct perf_explain_row {
  size_t size;         /* the table's size column */
  int known;           /* the library answered the query */
  int algo, proto, nch;
  double predicted_us; /* < 0: unknown */
  double measured_us;  /* out-of-place time */
  int func;            /* ncclFunc_t queried (-1: none) */
};

struct perf_explain_series {
  char label[64]; /* "all_reduce float sum" */
  struct perf_explain_row* rows;
  int n, cap;
};

struct perf_explain {
  struct perf_explain_series* s;
  int n, cap;
  int failed; /* out of memory: rows are dropped, the table says so */
};

/* Start a series (one block of rows: a collective, type, op and root). */
void perf_explain_begin(struct perf_explain* e, const char* label);
/* Ask the library about one size of coll (perf_coll_id) and keep it with the measured time. */
void perf_explain_add(struct perf_explain* e, const struct perf_nccl* lib, ncclComm_t comm,
                      enum perf_coll_id coll, size_t size, size_t count, ncclDataType_t type,
                      double measured_us);
/* The table of the current series. */
void perf_explain_print(FILE* out, const struct perf_explain* e, const struct perf_nccl* lib,
                        int nranks);
void perf_explain_free(struct perf_explain* e);

/* explain_png.c: every series on log-log axes, measured solid, predicted dashed. 0, or -1 with
 * errno (file) or EINVAL (nothing to plot). */
int perf_explain_png(const struct perf_explain* e, const char* path, const char* title);

#endif
