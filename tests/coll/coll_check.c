/* See coll_check.h. */
#include "coll_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "coll_fp.h"

uint64_t coll_ld(const unsigned char* p, size_t esz, size_t i) {
  uint64_t v = 0;
  memcpy(&v, p + esz * i, esz); /* little endian: the element's bytes are its low bytes */
  return v;
}

static void show_value(char* out, size_t len, const coll_checker* k, uint64_t bits) {
  int w = (int)k->esz * 2;
  if (fp_is_float(k->type))
    snprintf(out, len, "0x%0*" PRIx64 " (%.9g)", w, bits, fp_decode(k->type, bits));
  else if (fp_is_signed_int(k->type))
    snprintf(out, len, "0x%0*" PRIx64 " (%" PRId64 ")", w, bits, coll_sext(k->type, bits));
  else
    snprintf(out, len, "0x%0*" PRIx64 " (%" PRIu64 ")", w, bits, bits);
}

void coll_check_wrong(coll_checker* k, const char* what, size_t idx, uint64_t got, uint64_t want,
                      const coll_expect* e) {
  k->problems++;
  if (k->shown++ >= COLL_CHECK_MAX_SHOWN) return;
  char g[64], w[64];
  show_value(g, sizeof g, k, got);
  show_value(w, sizeof w, k, want);
  if (e && !e->exact)
    fprintf(stderr, "  rank %d %s[%zu] = %s, expected %s within %.3g (reference %.17g)\n",
            k->rank, what, idx, g, w, e->tol, e->ref);
  else
    fprintf(stderr, "  rank %d %s[%zu] = %s, expected %s\n", k->rank, what, idx, g, w);
}

void coll_check_reduce_n(coll_checker* const* ks, const unsigned char* const* outs, int n,
                         size_t cnt, size_t base) {
  const coll_gen* gen = ks[0]->gen;
  coll_expect e;
  for (size_t i = 0; i < cnt; i++) {
    coll_ref_reduce(gen, base + i, &e);
    for (int j = 0; j < n; j++) {
      uint64_t got = coll_ld(outs[j], ks[j]->esz, i);
      if (!coll_ref_ok(gen, &e, got)) coll_check_wrong(ks[j], "recvbuff", i, got, e.bits, &e);
    }
  }
}

void coll_check_reduce(coll_checker* k, const unsigned char* out, size_t cnt, size_t base) {
  coll_check_reduce_n(&k, &out, 1, cnt, base);
}

void coll_check_copy(coll_checker* k, const char* what, const unsigned char* buf, size_t off,
                     size_t cnt, int src, size_t sbase) {
  for (size_t i = 0; i < cnt; i++) {
    uint64_t want = coll_gen_value(k->gen, src, sbase + i), got = coll_ld(buf, k->esz, off + i);
    if (got != want) coll_check_wrong(k, what, off + i, got, want, NULL);
  }
}

void coll_check_bytes(coll_checker* k, const char* what, const unsigned char* p, size_t len,
                      unsigned char byte) {
  for (size_t i = 0; i < len; i++)
    if (p[i] != byte) {
      k->problems++;
      if (k->shown++ < COLL_CHECK_MAX_SHOWN)
        fprintf(stderr, "  rank %d %s: byte %zu is 0x%02x, expected it untouched (0x%02x)\n",
                k->rank, what, i, p[i], byte);
      return;
    }
}

void coll_check_guards(coll_checker* k, const char* what, const unsigned char* raw,
                       size_t raw_len, size_t usable_off, size_t len) {
  char w[64];
  snprintf(w, sizeof w, "guard before %s", what);
  coll_check_bytes(k, w, raw, usable_off, COLL_GUARD_BYTE);
  snprintf(w, sizeof w, "guard after %s", what);
  coll_check_bytes(k, w, raw + usable_off + len, raw_len - usable_off - len, COLL_GUARD_BYTE);
}
