/* Comparing a collective's output with the reference and naming what differs: shared by the
 * host harness (coll_exec.c) and the GPU one (tests/gpu/gpu_run.c), which differ only in where
 * the bytes come from. */
#ifndef WEFT_TEST_COLL_CHECK_H
#define WEFT_TEST_COLL_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "coll_ref.h"
#include "nccl.h"

#define COLL_CHECK_MAX_SHOWN 5 /* wrong elements printed per case and rank */
#define COLL_GUARD_BYTE 0x5a   /* guard zones around every buffer */

/* One rank's view of one case: the problems found, the first few printed. */
typedef struct {
  const coll_gen* gen;
  ncclDataType_t type;
  size_t esz;
  int rank;
  size_t problems;
  int shown;
} coll_checker;

/* Element i of an array of esz-byte elements, as its low bytes (little endian). */
uint64_t coll_ld(const unsigned char* p, size_t esz, size_t i);
/* Count (and print the first few) of a wrong element; e: the reduction's expectation, or NULL
 * for an exact copy. */
void coll_check_wrong(coll_checker* k, const char* what, size_t idx, uint64_t got, uint64_t want,
                      const coll_expect* e);
/* out[i] is the reduction of every rank's element base+i, for i < cnt. */
void coll_check_reduce(coll_checker* k, const unsigned char* out, size_t cnt, size_t base);
/* The same for n outputs (ranks of one process) at once: each expected element is computed
 * once for all of them. */
void coll_check_reduce_n(coll_checker* const* ks, const unsigned char* const* outs, int n,
                         size_t cnt, size_t base);
/* buf[off+i] is rank src's input element sbase+i, for i < cnt. */
void coll_check_copy(coll_checker* k, const char* what, const unsigned char* buf, size_t off,
                     size_t cnt, int src, size_t sbase);
/* Every byte of p[0, len) still holds `byte` (one problem for the whole range). */
void coll_check_bytes(coll_checker* k, const char* what, const unsigned char* p, size_t len,
                      unsigned char byte);
/* The guard zones of a buffer: raw[0, usable_off) and raw[usable_off + len, raw_len). */
void coll_check_guards(coll_checker* k, const char* what, const unsigned char* raw,
                       size_t raw_len, size_t usable_off, size_t len);

#endif
