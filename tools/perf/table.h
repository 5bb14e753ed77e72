/* Output: the nccl-tests table on stdout (same columns, widths and number formats, so weft's
 * output diffs cleanly against stock NCCL's) and, with --json FILE, the same rows as JSON.
 * Only rank 0 writes either (under --vs, the coordinator writes the JSON for both libraries). */
#ifndef WEFT_PERF_TABLE_H
#define WEFT_PERF_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "perf.h"

struct perf_half_row {
  double time_us, algbw, busbw;
  int64_t wrong;
  int reported; /* 0: "N/A" (nccl-tests does not check in-place sendrecv/alltoall) */
};

struct perf_row {
  const char* coll; /* all_reduce */
  size_t size, count;
  const char* type;
  const char* op; /* "none" without a reduction */
  int root;       /* -1 without a root */
  struct perf_half_row oop, ip;
  const char* lib; /* the library's label ("weft", "nccl"), for JSON; NULL: none */
};

/* nccl-tests' number format: the value in `width` characters with 2, 1 or 0 decimals, or in
 * exponent form when nothing else fits. */
void perf_format_num(double v, int width, char* buf, size_t len);

void perf_table_columns(FILE* out);
void perf_table_row(FILE* out, const struct perf_row* row);

/* --vs: time A/B and busbw A/B of one half row; NAN where a side is zero (nothing moved). */
void perf_half_ratio(const struct perf_half_row* a, const struct perf_half_row* b,
                     double* time_ratio, double* busbw_ratio);

/* --vs: one half row from the n >= 1 timings of a size (its turns): the median time (the mean
 * of the middle two when n is even), the wrong elements of all of them, reported if any was;
 * the bandwidths are the caller's (they depend on the collective). Sorts turns by time. */
void perf_half_median(struct perf_half_row* turns, int n, struct perf_half_row* out);

/* The median of v[0..n) (the mean of the middle two when n is even), n >= 1. Sorts v. */
double perf_median(double* v, int n);

/* JSON output (--json). Rows are written as they come; the summary at close. */
struct perf_json;
struct perf_json* perf_json_open(const char* path, int argc, char** argv);
void perf_json_kv_str(struct perf_json* j, const char* section, const char* key, const char* v);
void perf_json_kv_num(struct perf_json* j, const char* section, const char* key, double v);
/* One entry of "libraries": the label rows carry, the file, ncclGetVersion. */
void perf_json_library(struct perf_json* j, const char* label, const char* path, int version);
void perf_json_row(struct perf_json* j, const struct perf_row* row);
/* lib: the library's label, or NULL. */
void perf_json_coll_summary(struct perf_json* j, const char* lib, const char* coll,
                            double avg_busbw, int out_of_bounds);
/* --vs: one entry of "comparison": the same point measured with library a and library b. */
void perf_json_compare(struct perf_json* j, const struct perf_row* a, const struct perf_row* b);
/* Writes everything collected and closes; 0 on success. */
int perf_json_close(struct perf_json* j);

#endif
