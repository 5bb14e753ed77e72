/* The side channel without a launcher of ours (see chan.h): "local" for a single process and
 * "nccl" over the communicators being measured. The nccl channel prefers weft's control-plane
 * allgather (weftCommOobAllGather: bootstrap network, no data path) and otherwise uses the
 * library's own AllReduce/AllGather on small buffers of the active backend; with several
 * communicators per process, the first contributes the process's values and the others the
 * identity of the operation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"

int perf_chan_barrier(struct perf_chan* ch) {
  double one = 1;
  return ch->allreduce(ch, &one, 1, PERF_CHAN_SUM);
}

/* --- local --------------------------------------------------------------------------------- */

static int local_bcast(struct perf_chan* ch, void* buf, size_t bytes) {
  (void)ch, (void)buf, (void)bytes;
  return 0;
}

static int local_allreduce(struct perf_chan* ch, double* v, int n, enum perf_chan_op op) {
  (void)ch, (void)v, (void)n, (void)op;
  return 0;
}

static int local_allgather(struct perf_chan* ch, const void* mine, size_t bytes, void* all) {
  (void)ch;
  memmove(all, mine, bytes);
  return 0;
}

static void local_bye(struct perf_chan* ch, int rc) { (void)ch, (void)rc; }
static void local_destroy(struct perf_chan* ch) { (void)ch; }

struct perf_chan* perf_chan_local(void) {
  static struct perf_chan ch = {
      "local", local_bcast, local_allreduce, local_allgather, local_bye, local_destroy, NULL};
  return &ch;
}

/* --- nccl ---------------------------------------------------------------------------------- */

enum { NCCL_CHAN_MAX_DOUBLES = 64, NCCL_CHAN_MAX_GATHER = 1 << 20 };

struct nccl_chan {
  const struct perf_nccl* lib;
  const struct perf_backend* be;
  ncclComm_t* comms;
  cudaStream_t* streams;
  const int* devs;
  int nlocal, nprocs;
};

static int report(struct nccl_chan* c, ncclResult_t res, const char* what) {
  char msg[1024];
  perf_nccl_describe(c->lib, res, c->comms[0], what, msg, sizeof msg);
  fprintf(stderr, "weft-perf: side channel: %s\n", msg);
  return -1;
}

static int use_oob(const struct nccl_chan* c) {
  return c->nlocal == 1 && c->lib->has_oob_allgather;
}

/* bytes from every local communicator (contribution i at mine + i*bytes) gathered over the
 * data path into all (nprocs*nlocal*bytes). */
static int data_allgather(struct nccl_chan* c, const void* mine, size_t bytes, void* all) {
  size_t total = bytes * (size_t)c->nlocal * (size_t)c->nprocs;
  void** sbuf = calloc((size_t)c->nlocal, sizeof *sbuf);
  void** rbuf = calloc((size_t)c->nlocal, sizeof *rbuf);
  int rc = -1;
  if (!sbuf || !rbuf) goto out;
  for (int i = 0; i < c->nlocal; i++) {
    if (c->be->set_device(c->devs[i]) || c->be->alloc(&sbuf[i], bytes) ||
        c->be->alloc(&rbuf[i], total) ||
        c->be->upload(sbuf[i], (const char*)mine + (size_t)i * bytes, bytes)) {
      fprintf(stderr, "weft-perf: side channel: %s\n", c->be->error());
      goto out;
    }
  }
  ncclResult_t res = c->lib->GroupStart();
  for (int i = 0; i < c->nlocal && res == ncclSuccess; i++)
    res = c->lib->AllGather(sbuf[i], rbuf[i], bytes, ncclInt8, c->comms[i], c->streams[i]);
  ncclResult_t end = c->lib->GroupEnd();
  if (res != ncclSuccess || end != ncclSuccess) {
    report(c, res != ncclSuccess ? res : end, "ncclAllGather");
    goto out;
  }
  for (int i = 0; i < c->nlocal; i++)
    if (c->be->stream_sync(c->streams[i])) goto out;
  if (c->be->download(all, rbuf[0], total)) goto out;
  rc = 0;
out:
  for (int i = 0; sbuf && rbuf && i < c->nlocal; i++) {
    if (sbuf[i]) c->be->release(sbuf[i]);
    if (rbuf[i]) c->be->release(rbuf[i]);
  }
  free(sbuf);
  free(rbuf);
  return rc;
}

static int nccl_allgather(struct perf_chan* ch, const void* mine, size_t bytes, void* all) {
  struct nccl_chan* c = ch->ctx;
  if (bytes > NCCL_CHAN_MAX_GATHER) return -1;
  if (use_oob(c)) {
    ncclResult_t res = c->lib->weftCommOobAllGather(c->comms[0], mine, all, bytes);
    return res == ncclSuccess ? 0 : report(c, res, "weftCommOobAllGather");
  }
  /* Per process `bytes` = nlocal equal parts, one per communicator. */
  if (bytes % (size_t)c->nlocal) return -1;
  return data_allgather(c, mine, bytes / (size_t)c->nlocal, all);
}

static int nccl_allreduce(struct perf_chan* ch, double* v, int n, enum perf_chan_op op) {
  struct nccl_chan* c = ch->ctx;
  if (n <= 0 || n > NCCL_CHAN_MAX_DOUBLES) return n == 0 ? 0 : -1;
  size_t bytes = (size_t)n * sizeof *v;
  double identity = op == PERF_CHAN_SUM ? 0.0 : op == PERF_CHAN_MIN ? INFINITY : -INFINITY;
  double* mine = malloc(bytes * (size_t)c->nlocal);
  double* all = malloc(bytes * (size_t)c->nlocal * (size_t)c->nprocs);
  int rc = -1;
  if (!mine || !all) goto out;
  for (int i = 0; i < c->nlocal; i++)
    for (int k = 0; k < n; k++) mine[(size_t)i * (size_t)n + (size_t)k] = i == 0 ? v[k] : identity;
  if (use_oob(c)) {
    ncclResult_t res = c->lib->weftCommOobAllGather(c->comms[0], mine, all, bytes);
    if (res != ncclSuccess) {
      report(c, res, "weftCommOobAllGather");
      goto out;
    }
  } else if (data_allgather(c, mine, bytes, all)) {
    goto out;
  }
  /* Combined in rank order on every process, so every process gets the same bits. */
  for (int k = 0; k < n; k++) {
    double acc = identity;
    for (int r = 0; r < c->nlocal * c->nprocs; r++) {
      double x = all[(size_t)r * (size_t)n + (size_t)k];
      if (op == PERF_CHAN_SUM)
        acc += x;
      else if (op == PERF_CHAN_MIN)
        acc = x < acc ? x : acc;
      else
        acc = x > acc ? x : acc;
    }
    v[k] = acc;
  }
  rc = 0;
out:
  free(mine);
  free(all);
  return rc;
}

static int nccl_bcast(struct perf_chan* ch, void* buf, size_t bytes) {
  (void)ch, (void)buf, (void)bytes;
  fprintf(stderr, "weft-perf: internal error: no broadcast on the nccl side channel\n");
  return -1;
}

static void nccl_bye(struct perf_chan* ch, int rc) { (void)ch, (void)rc; }

static void nccl_destroy(struct perf_chan* ch) {
  free(ch->ctx);
  free(ch);
}

struct perf_chan* perf_chan_nccl(const struct perf_nccl* lib, const struct perf_backend* be,
                                 ncclComm_t* comms, cudaStream_t* streams, const int* devs,
                                 int nlocal, int nprocs) {
  struct perf_chan* ch = calloc(1, sizeof *ch);
  struct nccl_chan* c = calloc(1, sizeof *c);
  if (!ch || !c) {
    free(ch);
    free(c);
    return NULL;
  }
  *c = (struct nccl_chan){lib, be, comms, streams, devs, nlocal, nprocs};
  *ch = (struct perf_chan){"nccl",       nccl_bcast, nccl_allreduce, nccl_allgather, nccl_bye,
                           nccl_destroy, c};
  return ch;
}
