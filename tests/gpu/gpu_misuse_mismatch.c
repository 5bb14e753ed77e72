/* Mismatched arguments between ranks on device communicators (issue 18, findings 5 and 6), as
 * tests/host/host_mismatch.c checks them in host mode: a send matched by a smaller receive, and
 * collectives whose count, datatype, op or root differ. Each rank must see an error within
 * MISUSE_SLACK_S of its call, through the call's result or ncclCommGetAsyncError (device
 * mode enqueues and returns), or, when its own part completed (an eager send; a Broadcast
 * root that receives nothing), through its next call, an AllReduce; a rank that sees its error
 * aborts (as an application does). Never silent success, never a hang past the bound; the
 * receive buffer is not written past the receive's count (a guard of the rest of the
 * allocation). The WARN that names the peer and both sides' arguments is checked by main, in
 * the ranks' captured stderr. One rank per process (--procs): each rank's own calls and
 * results, as in the host test. */
#include <string.h>
#include <unistd.h>

#include "gpu_misuse.h"

#define BIG ((size_t)1 << 20) /* floats */
#define RECV_COUNT 1024       /* the receive of the truncation cases */
#define COLL_COUNT 3000
#define GUARD_BYTE 0xab

const char* misuse_mismatch_want(const char* name) {
  if (!strcmp(name, "p2p_small"))
    return "ncclRecv from rank 0 of 1024 x float32 (4096 bytes) meets an ncclSend of 4096 x "
           "float32 (16384 bytes)";
  if (!strcmp(name, "p2p_large"))
    return "ncclRecv from rank 0 of 1024 x float32 (4096 bytes) meets an ncclSend of 1048576 x "
           "float32 (4194304 bytes)";
  if (!strcmp(name, "coll_count")) return "(count 3001, float32, sum";
  if (!strcmp(name, "coll_dtype")) return "(count 3000, int32, sum";
  if (!strcmp(name, "coll_op")) return "(count 3000, float32, max";
  if (!strcmp(name, "bcast_root")) return "(count 3000, float32, root 1";
  return NULL;
}

typedef struct {
  const char* name;
  gpu_rank* r;
  float* a; /* BIG floats, none of them 0 */
  float* b; /* BIG floats of GUARD_BYTE */
} mm_ctx;

typedef enum { WAIT_ERROR, WAIT_COMPLETED, WAIT_LATE, WAIT_CUDA } wait_end;

/* Polls r's stream and asynchronous error until t0 + MISUSE_SLACK_S: WAIT_ERROR (*err set),
 * WAIT_COMPLETED (the stream idle, no error), WAIT_LATE or WAIT_CUDA (printed). */
static wait_end await_outcome(const gpu_rank* r, double t0, ncclResult_t* err) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(r->stream);
    ncclResult_t e = ncclSuccess;
    ncclResult_t g = ncclCommGetAsyncError(r->comm, &e);
    if (g != ncclSuccess) {
      fprintf(stderr, "FAIL rank %d: ncclCommGetAsyncError returned %d (%s)\n", r->rank, (int)g,
              ncclGetErrorString(g));
      *err = g;
      return WAIT_CUDA;
    }
    if (e != ncclSuccess && e != ncclInProgress) {
      *err = e;
      return WAIT_ERROR;
    }
    if (q == cudaSuccess && e == ncclSuccess) return WAIT_COMPLETED;
    if (q != cudaSuccess && q != cudaErrorNotReady) {
      fprintf(stderr, "FAIL rank %d: the stream reports %s (%d), ncclCommGetAsyncError %d: a "
              "mismatch must be an NCCL error, not a broken stream\n", r->rank,
              cudaGetErrorString(q), (int)q, (int)e);
      return WAIT_CUDA;
    }
    if (gpu_now_s() - t0 > MISUSE_SLACK_S) return WAIT_LATE;
    usleep(1000);
  }
}

/* The call's result, else what the stream brings. 1 when an error was seen in time. */
static int saw_error(const mm_ctx* c, ncclResult_t res, double t0, const char* what) {
  if (res != ncclSuccess) {
    printf("rank %d: %s returned %s after %.0f ms\n", c->r->rank, what, ncclGetErrorString(res),
           (gpu_now_s() - t0) * 1e3);
    return 1;
  }
  ncclResult_t err = ncclSuccess;
  wait_end how = await_outcome(c->r, t0, &err);
  if (how == WAIT_ERROR)
    printf("rank %d: %s: asynchronous error %s after %.0f ms\n", c->r->rank, what,
           ncclGetErrorString(err), (gpu_now_s() - t0) * 1e3);
  if (how == WAIT_LATE)
    fprintf(stderr, "FAIL rank %d: %s: no error within %.0f s (a hang, or only the "
            "WEFT_TIMEOUT_MS timeout would end it)\n", c->r->rank, what, MISUSE_SLACK_S);
  return how == WAIT_ERROR ? 1 : how == WAIT_COMPLETED ? 0 : -1;
}

/* Both protocols' connections, as host_mismatch's p2p_large sets them up first: a matched
 * small and a matched large send/receive. 0, or 1 (printed). */
static int warm_both_protocols(gpu_world* w, const mm_ctx* c) {
  gpu_rank* r = c->r;
  ncclResult_t res = ncclGroupStart();
  for (int p = 0; p < 2 && res == ncclSuccess; p++) {
    size_t n = p ? BIG : RECV_COUNT;
    res = r->rank == 0 ? ncclSend(c->a, n, ncclFloat, 1, r->comm, r->stream)
                       : ncclRecv(c->b, n, ncclFloat, 0, r->comm, r->stream);
  }
  ncclResult_t e = ncclGroupEnd();
  if (res != ncclSuccess || e != ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: the matched send/receive warm-up returned %d/%d: %s\n",
            r->rank, (int)res, (int)e, ncclGetLastError(r->comm));
    return 1;
  }
  return gpu_wait(w, "the matched send/receive warm-up");
}

/* The mismatched call of this rank (a Send or Recv, or a collective). */
static ncclResult_t mismatched_call(const mm_ctx* c) {
  gpu_rank* r = c->r;
  if (!strncmp(c->name, "p2p_", 4)) {
    size_t send = !strcmp(c->name, "p2p_large") ? BIG : 4096;
    if (r->rank == 0) return ncclSend(c->a, send, ncclFloat, 1, r->comm, r->stream);
    if (r->rank == 1) return ncclRecv(c->b, RECV_COUNT, ncclFloat, 0, r->comm, r->stream);
    return ncclSuccess;
  }
  const int odd = r->rank == 1;
  if (!strcmp(c->name, "bcast_root"))
    return ncclBroadcast(c->a, c->b, COLL_COUNT, ncclFloat, odd ? 1 : 0, r->comm, r->stream);
  size_t count = COLL_COUNT + (odd && !strcmp(c->name, "coll_count"));
  ncclDataType_t t = odd && !strcmp(c->name, "coll_dtype") ? ncclInt32 : ncclFloat;
  ncclRedOp_t op = odd && !strcmp(c->name, "coll_op") ? ncclMax : ncclSum;
  return ncclAllReduce(c->a, c->b, count, t, op, r->comm, r->stream);
}

/* The receive of the truncation cases wrote nothing past RECV_COUNT floats. 0 or 1. */
static int guard_intact(const mm_ctx* c) {
  const size_t off = RECV_COUNT * sizeof(float), n = BIG * sizeof(float) - off;
  unsigned char* h = malloc(n);
  if (!h || misuse_download(c->r, h, (const char*)c->b + off, n)) {
    fprintf(stderr, "FAIL rank %d: cannot read the receive buffer's guard back\n", c->r->rank);
    free(h);
    return 1;
  }
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; i++)
    if (h[i] != GUARD_BYTE && bad++ == 0) first = i;
  free(h);
  if (!bad) return 0;
  fprintf(stderr, "FAIL rank %d: the receive of %d floats wrote %zu bytes past its end (the "
          "first at byte %zu after it)\n", c->r->rank, RECV_COUNT, bad, first);
  return 1;
}

/* ncclCommAbort, then the stream must drain (any CUDA error accepted; a hang is not). */
static int abort_and_drain(gpu_rank* r) {
  gpu_watchdog_arm("rank %d: ncclCommAbort after the mismatch", r->rank);
  ncclResult_t res = ncclCommAbort(r->comm);
  r->comm = NULL;
  int failed = res != ncclSuccess;
  if (failed)
    fprintf(stderr, "FAIL rank %d: ncclCommAbort returned %d (%s)\n", r->rank, (int)res,
            ncclGetErrorString(res));
  double t0 = gpu_now_s();
  cudaError_t q;
  while ((q = cudaStreamQuery(r->stream)) == cudaErrorNotReady) {
    if (gpu_now_s() - t0 > 20) {
      fprintf(stderr, "FAIL rank %d: the stream is still busy 20 s after ncclCommAbort\n",
              r->rank);
      return 1;
    }
    usleep(1000);
  }
  if (q != cudaSuccess) { /* a broken context: the harness must not destroy the stream */
    printf("rank %d: after ncclCommAbort the stream reports %s\n", r->rank, cudaGetErrorString(q));
    r->stream = NULL;
  }
  gpu_watchdog_disarm();
  return failed;
}

/* 1 when the mismatch was seen in time (the call, or the next call when this rank's part
 * completed); 0 after a FAIL line. */
static int mismatch_seen(mm_ctx* c) {
  gpu_rank* r = c->r;
  double t0 = gpu_now_s();
  int seen = saw_error(c, mismatched_call(c), t0, c->name);
  if (seen == 0) {
    ncclResult_t res = ncclAllReduce(c->a, c->b, 64, ncclFloat, ncclSum, r->comm, r->stream);
    seen = saw_error(c, res, t0, "the AllReduce after it");
    if (seen == 0)
      fprintf(stderr, "FAIL rank %d: %s and the AllReduce after it completed without an error "
              "(silent success)\n", r->rank, c->name);
  }
  if (seen != 1) return 0;
  ncclResult_t async = ncclSuccess;
  ncclResult_t g = ncclCommGetAsyncError(r->comm, &async);
  if (g != ncclSuccess || async == ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: after the error ncclCommGetAsyncError returned %d with %d "
            "(an error expected)\n", r->rank, (int)g, (int)async);
    return 0;
  }
  return 1;
}

int misuse_mismatch_body(gpu_world* w, void* arg) {
  mm_ctx c = {arg, &w->loc[0], NULL, NULL};
  if (!w->procs || w->nlocal != 1 || misuse_mismatch_want(c.name) == NULL) return GPU_FAIL;
  float* h = malloc(BIG * sizeof *h);
  for (size_t i = 0; i < BIG; i++) h[i] = (float)(i % 7 + 1);
  c.a = misuse_dev_alloc(c.r, BIG * sizeof(float), 0);
  c.b = misuse_dev_alloc(c.r, BIG * sizeof(float), GUARD_BYTE);
  int failed = misuse_upload(c.r, c.a, h, BIG * sizeof *h);
  free(h);
  gpu_watchdog_arm("rank %d: %s", c.r->rank, c.name);
  /* A matched call first: the connections exist, the failure is not one of setup. */
  ncclResult_t res = ncclAllReduce(c.a, c.b, 64, ncclFloat, ncclSum, c.r->comm, c.r->stream);
  if (res != ncclSuccess || gpu_wait(w, "the matched AllReduce before the mismatch")) {
    fprintf(stderr, "FAIL rank %d: the matched AllReduce returned %d: %s\n", c.r->rank,
            (int)res, ncclGetLastError(c.r->comm));
    gpu_die(w);
  }
  if (!strcmp(c.name, "p2p_large") && c.r->rank < 2 && warm_both_protocols(w, &c)) gpu_die(w);
  if (!strncmp(c.name, "p2p_", 4)) { /* the guard: b back to GUARD_BYTE after the warm-ups */
    unsigned char* g = malloc(BIG * sizeof(float));
    memset(g, GUARD_BYTE, BIG * sizeof(float));
    failed |= misuse_upload(c.r, c.b, g, BIG * sizeof(float));
    free(g);
  }
  failed |= !mismatch_seen(&c);
  failed |= abort_and_drain(c.r);
  if (!strncmp(c.name, "p2p_", 4) && c.r->rank == 1) {
    if (c.r->stream)
      failed |= guard_intact(&c);
    else
      printf("rank 1: the guard is not checked: the CUDA context is broken\n");
  }
  gpu_watchdog_disarm();
  if (c.r->stream) {
    CUDA_OK(cudaFree(c.a));
    CUDA_OK(cudaFree(c.b));
  }
  return failed ? GPU_FAIL : GPU_PASS;
}
