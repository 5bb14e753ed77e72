/* One-sided entry points (NCCL 2.30): ncclPutSignal, ncclSignal, ncclWaitSignal. The checks
 * are NCCL's: sigIdx, ctx and flags 0; the source inside a symmetric window of comm; peerWin a
 * symmetric window of comm, with [peerWinOffset, + bytes) inside it; every descriptor of a
 * wait with opCnt > 0, a peer of comm, sigIdx and ctx 0. Then rma/ does the work. Inside a
 * group a call runs at the outermost ncclGroupEnd, after the group's collectives and
 * point-to-point operations, every communicator's calls at once (a wait may need a put of
 * another rank of the same group). On a GPU communicator the work is enqueued on the stream
 * (rma/rma_dev.c); in host mode the calling thread is the stream. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "group/group.h"
#include "plan/plan.h"
#include "rma/rma.h"
#include "util/check.h"
#include "util/names.h"

/* A one-sided call, kept until it runs (a group's End). */
typedef struct {
  int wait; /* 0: put or signal, 1: wait */
  const void* src;
  size_t bytes;
  int peer;
  const weft_mem_reg* win;
  size_t offset;
  int n; /* wait: descriptors */
  int* peers;
  int* counts;
  void* stream;
} rma_call;

static void call_free(void* arg) {
  rma_call* c = arg;
  if (!c) return;
  free(c->peers);
  free(c->counts);
  free(c);
}

/* Run a call (and free it). The comm counts as inside an operation meanwhile, so an abort from
 * another thread waits for it to leave before freeing the state. */
static ncclResult_t call_run(struct ncclComm* comm, void* arg) {
  rma_call* c = arg;
  __atomic_add_fetch(&comm->plan->inflight, 1, __ATOMIC_ACQ_REL);
  ncclResult_t res = c->wait ? rma_wait(comm, c->n, c->peers, c->counts, c->stream)
                             : rma_put(comm, c->src, c->bytes, c->peer, c->win, c->offset,
                                       c->stream);
  __atomic_sub_fetch(&comm->plan->inflight, 1, __ATOMIC_ACQ_REL);
  call_free(c);
  return res;
}

/* Outside a group, now; inside, at the outermost End. c is heap memory handed over. */
static ncclResult_t call_issue(struct ncclComm* comm, rma_call* c) {
  if (group_depth() == 0) return call_run(comm, c);
  ncclResult_t res = group_defer_after(comm, call_run, c, call_free);
  if (res != ncclSuccess) call_free(c);
  return res;
}

static ncclResult_t check_zero(const char* fn, const char* what, long long v) {
  if (v == 0) return ncclSuccess;
  WARN("%s: %s = %lld is invalid (NCCL 2.30 takes 0 only)", fn, what, v);
  return ncclInvalidArgument;
}

/* The symmetric window of comm that holds [p, p + bytes), or NULL. */
static const weft_mem_reg* window_holding(struct ncclComm* comm, const void* p, size_t bytes) {
  const weft_mem_reg* found = NULL;
  uintptr_t a = (uintptr_t)p;
  pthread_mutex_lock(&comm->lock);
  for (const weft_mem_reg* r = comm->regs; r && !found; r = r->next) {
    uintptr_t b = (uintptr_t)r->buff;
    if (r->window && r->win_flags == NCCL_WIN_COLL_SYMMETRIC && a >= b && a - b <= r->size &&
        bytes <= r->size - (a - b))
      found = r;
  }
  pthread_mutex_unlock(&comm->lock);
  return found;
}

WEFT_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count,
         ncclDataType_t datatype, int peer, ncclWindow_t peerWin, size_t peerWinOffset,
         int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype,
                           int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                           int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclPutSignal";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(check_zero(fn, "ctx", ctx));
  WEFT_CHECK(check_zero(fn, "sigIdx", sigIdx));
  WEFT_CHECK(check_zero(fn, "flags", flags));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  WEFT_ARG_NONNULL(fn, localbuff);
  WEFT_ARG_NONNULL(fn, peerWin);
  size_t esize = dtype_size(datatype);
  if (count > SIZE_MAX / esize) {
    WARN("%s: count = %zu elements of %s overflows a size", fn, count, dtype_name(datatype));
    return ncclInvalidArgument;
  }
  size_t bytes = count * esize;
  const weft_mem_reg* win;
  WEFT_CHECK(api_window_of(comm, fn, "peerWin", peerWin, &win));
  if (win->win_flags != NCCL_WIN_COLL_SYMMETRIC) {
    WARN("%s: peerWin %p was registered without NCCL_WIN_COLL_SYMMETRIC (winFlags %d): "
         "one-sided calls need symmetric windows",
         fn, (void*)peerWin, win->win_flags);
    return ncclInvalidArgument;
  }
  if (peerWinOffset > win->size || bytes > win->size - peerWinOffset) {
    WARN("%s: peerWinOffset = %zu with %zu bytes (count %zu of %s) runs past the end of "
         "peerWin %p (%zu bytes)",
         fn, peerWinOffset, bytes, count, dtype_name(datatype), (void*)peerWin, win->size);
    return ncclInvalidArgument;
  }
  if (!window_holding(comm, localbuff, bytes)) {
    WARN("%s: localbuff %p with %zu bytes is not inside a window of comm %p registered with "
         "NCCL_WIN_COLL_SYMMETRIC",
         fn, localbuff, bytes, (void*)comm);
    return ncclInvalidArgument;
  }
  rma_call* c = calloc(1, sizeof *c);
  if (!c) {
    WARN("%s: out of memory", fn);
    return ncclSystemError;
  }
  *c = (rma_call){0, localbuff, bytes, peer, win, peerWinOffset, 0, NULL, NULL, stream};
  return call_issue(comm, c);
}

WEFT_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream) {
  const char* fn = "ncclSignal";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(check_zero(fn, "ctx", ctx));
  WEFT_CHECK(check_zero(fn, "sigIdx", sigIdx));
  WEFT_CHECK(check_zero(fn, "flags", flags));
  WEFT_CHECK(arg_check_root(fn, comm, "peer", peer));
  rma_call* c = calloc(1, sizeof *c);
  if (!c) {
    WARN("%s: out of memory", fn);
    return ncclSystemError;
  }
  *c = (rma_call){0, NULL, 0, peer, NULL, 0, 0, NULL, NULL, stream};
  return call_issue(comm, c);
}

WEFT_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream) {
  const char* fn = "ncclWaitSignal";
  WEFT_CHECK(comm_check(comm, fn));
  if (nDesc <= 0) {
    WARN("%s: nDesc = %d (at least one descriptor is needed)", fn, nDesc);
    return ncclInvalidArgument;
  }
  WEFT_ARG_NONNULL(fn, signalDescs);
  for (int i = 0; i < nDesc; i++) {
    const ncclWaitSignalDesc_t* d = &signalDescs[i];
    char what[48];
    if (d->opCnt <= 0) {
      WARN("%s: signalDescs[%d].opCnt = %d (must be > 0)", fn, i, d->opCnt);
      return ncclInvalidArgument;
    }
    snprintf(what, sizeof what, "signalDescs[%d].sigIdx", i);
    WEFT_CHECK(check_zero(fn, what, d->sigIdx));
    snprintf(what, sizeof what, "signalDescs[%d].ctx", i);
    WEFT_CHECK(check_zero(fn, what, d->ctx));
    snprintf(what, sizeof what, "signalDescs[%d].peer", i);
    WEFT_CHECK(arg_check_root(fn, comm, what, d->peer));
  }
  rma_call* c = calloc(1, sizeof *c);
  int* peers = c ? malloc((size_t)nDesc * sizeof *peers) : NULL;
  int* counts = peers ? malloc((size_t)nDesc * sizeof *counts) : NULL;
  if (!counts) {
    free(peers);
    free(c);
    WARN("%s: out of memory for %d descriptors", fn, nDesc);
    return ncclSystemError;
  }
  for (int i = 0; i < nDesc; i++) {
    peers[i] = signalDescs[i].peer;
    counts[i] = signalDescs[i].opCnt;
  }
  *c = (rma_call){1, NULL, 0, -1, NULL, 0, nDesc, peers, counts, stream};
  return call_issue(comm, c);
}
