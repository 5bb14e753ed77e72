/* The collectives weft-perf measures, with the element counts and bandwidth definitions of
 * nccl-tests (its src/<coll>.cu GetCollByteCount and GetBw), so weft's tables read exactly like
 * stock NCCL's:
 *
 *   collective      count per call (n = size/eltsize)     algbw bytes     bus factor
 *   all_reduce      n                                     n               2(r-1)/r
 *   all_gather      n/r rounded down to 16 bytes          count * r       (r-1)/r
 *   reduce_scatter  n/r rounded down to 16 bytes          count * r       (r-1)/r
 *   broadcast       n                                     n               1
 *   reduce          n                                     n               1
 *   sendrecv        n                                     n               1
 *   alltoall        n/r rounded down to 16 bytes          count * r       (r-1)/r
 *
 * (bytes = count * eltsize; algbw = bytes / seconds / 1e9; busbw = algbw * factor; r = ranks.) */
#include <ctype.h>
#include <string.h>

#include "perf.h"

const struct perf_coll perf_colls[PERF_NCOLLS] = {
    {PERF_ALL_REDUCE, "all_reduce", "all_reduce_perf", 1, 0, 0, 1},
    {PERF_ALL_GATHER, "all_gather", "all_gather_perf", 0, 0, 0, 1},
    {PERF_REDUCE_SCATTER, "reduce_scatter", "reduce_scatter_perf", 1, 0, 0, 1},
    {PERF_BROADCAST, "broadcast", "broadcast_perf", 0, 0, 1, 1},
    {PERF_REDUCE, "reduce", "reduce_perf", 1, 0, 1, 1},
    {PERF_SENDRECV, "sendrecv", "sendrecv_perf", 1, 1, 0, 0},
    {PERF_ALLTOALL, "alltoall", "alltoall_perf", 0, 0, 0, 0},
};

/* Lower case without '_' and '-', and without a trailing "perf". */
static void normalize(const char* in, char* out, size_t len) {
  size_t n = 0;
  for (; *in && n + 1 < len; in++) {
    if (*in == '_' || *in == '-') continue;
    out[n++] = (char)tolower((unsigned char)*in);
  }
  out[n] = '\0';
  if (n > 4 && !strcmp(out + n - 4, "perf")) out[n - 4] = '\0';
}

int perf_coll_find(const char* name) {
  char want[64], have[64];
  normalize(name, want, sizeof want);
  if (!want[0]) return -1;
  for (int i = 0; i < PERF_NCOLLS; i++) {
    normalize(perf_colls[i].name, have, sizeof have);
    if (!strcmp(want, have)) return i;
  }
  return -1;
}

/* Per-rank count rounded down so every rank's chunk stays 16-byte aligned. */
static size_t aligned_part(size_t count, size_t eltsize, int nranks) {
  size_t per = count / (size_t)nranks;
  size_t unit = eltsize >= 16 ? 1 : 16 / eltsize;
  return per - per % unit;
}

void perf_coll_counts(enum perf_coll_id id, size_t count, size_t eltsize, int nranks,
                      struct perf_counts* c) {
  memset(c, 0, sizeof *c);
  size_t part;
  switch (id) {
    case PERF_ALL_GATHER:
      part = aligned_part(count, eltsize, nranks);
      c->sendcount = part;
      c->recvcount = part * (size_t)nranks;
      c->paramcount = part;
      c->send_inplace_off = part;
      break;
    case PERF_REDUCE_SCATTER:
      part = aligned_part(count, eltsize, nranks);
      c->sendcount = part * (size_t)nranks;
      c->recvcount = part;
      c->paramcount = part;
      c->recv_inplace_off = part;
      break;
    case PERF_ALLTOALL:
      part = aligned_part(count, eltsize, nranks);
      c->sendcount = part * (size_t)nranks;
      c->recvcount = part * (size_t)nranks;
      c->paramcount = part;
      break;
    default: /* all_reduce, broadcast, reduce, sendrecv */
      c->sendcount = c->recvcount = c->paramcount = count;
      break;
  }
}

double perf_coll_algbw_bytes(enum perf_coll_id id, size_t paramcount, size_t eltsize, int nranks) {
  double bytes = (double)paramcount * (double)eltsize;
  switch (id) {
    case PERF_ALL_GATHER:
    case PERF_REDUCE_SCATTER:
    case PERF_ALLTOALL: return bytes * nranks;
    default: return bytes;
  }
}

double perf_coll_bus_factor(enum perf_coll_id id, int nranks) {
  switch (id) {
    case PERF_ALL_REDUCE: return 2.0 * (nranks - 1) / nranks;
    case PERF_ALL_GATHER:
    case PERF_REDUCE_SCATTER:
    case PERF_ALLTOALL: return (double)(nranks - 1) / nranks;
    default: return 1.0; /* broadcast, reduce, sendrecv */
  }
}

void perf_coll_bw(enum perf_coll_id id, size_t paramcount, size_t eltsize, double sec, int nranks,
                  double* algbw, double* busbw) {
  double base =
      sec > 0 ? perf_coll_algbw_bytes(id, paramcount, eltsize, nranks) / 1.0e9 / sec : 0.0;
  *algbw = base;
  *busbw = base * perf_coll_bus_factor(id, nranks);
}
