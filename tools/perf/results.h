/* Measured rows kept for what comes after the tables: the --plot picture, and --vs, whose
 * coordinator receives each library's rows from its processes and prints the comparison.
 * A row is a plain struct with indices instead of names, so it crosses a pipe between
 * processes of the same executable unchanged. Pure logic: tests/perf links it directly. */
#ifndef WEFT_PERF_RESULTS_H
#define WEFT_PERF_RESULTS_H

#include <stddef.h>
#include <stdio.h>

#include "perf.h"
#include "table.h"

struct perf_result {
  int lib;  /* 0: the library under test (A), 1: the --vs library (B) */
  int coll; /* enum perf_coll_id */
  int type; /* index into perf_types */
  int op;   /* index into perf_ops; -1 for collectives without one */
  int root; /* -1 for collectives without one */
  size_t size, count;
  struct perf_half_row oop, ip;
};

struct perf_results {
  struct perf_result* r;
  int n, cap;
  int dropped; /* rows lost to a failed allocation */
};

void perf_results_add(struct perf_results* rs, const struct perf_result* r);
void perf_results_free(struct perf_results* rs);

/* The table row of a result; the names point into perf_colls, perf_types and perf_ops. */
void perf_result_row(const struct perf_result* r, const char* lib_label, struct perf_row* row);
/* What a block of rows measures: "all_reduce float sum", "broadcast float root 0". */
void perf_result_test_label(const struct perf_result* r, char* buf, size_t len);
/* Same collective, type, op and root. */
int perf_result_same_test(const struct perf_result* a, const struct perf_result* b);

/* --vs: the k-th row of library 0 goes with the k-th row of library 1 (both run the same
 * sequence). Pairing stops at the first pair that differs in test or size, or where one
 * library has no more rows (it failed). a[i], b[i] point into rs. */
struct perf_pairs {
  const struct perf_result** a;
  const struct perf_result** b;
  int n;
  int unpaired_a, unpaired_b; /* rows left without a partner */
  int mismatch;               /* pairing stopped at rows that differ */
};
int perf_pairs_make(const struct perf_results* rs, struct perf_pairs* p); /* -1: no memory */
void perf_pairs_free(struct perf_pairs* p);

/* The comparison table: one row per size with time and busbw of A and B and the ratios
 * A/B, out-of-place then in-place; after each block of sizes the geometric means of the
 * ratios; after the table, a line per block with its worst (largest) out-of-place time A/B
 * over the sizes from PERF_WORST_MIN to PERF_WORST_MAX bytes (the small-message bar):
 *   # A/B all_reduce float sum, worst time 8 B-64 KiB (out-of-place): 1.17 at 64 B, 7 sizes
 * label_a/label_b name the libraries in the heading. */
enum { PERF_WORST_MIN = 8, PERF_WORST_MAX = 64 << 10 };
void perf_compare_print(FILE* out, const struct perf_pairs* p, const char* label_a,
                        const char* label_b);

/* Geometric mean of the finite positive values among v[0..n); NAN when there are none. */
double perf_geomean(const double* v, int n);

/* plot.c (--plot): bus bandwidth (top, linear) and time per call (bottom, log10) against size
 * (log2), out-of-place, one line per library and test; labels[lib] names the libraries (with
 * two libraries and several tests, library B is dashed with hollow markers). 0, or -1 with
 * errno (the file) or EINVAL (nothing to plot). */
int perf_plot_png(const struct perf_results* rs, const char* const labels[2], const char* path,
                  const char* title);

#endif
