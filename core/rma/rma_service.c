/* The target's side of one-sided traffic (host mode): each step that arrived from a peer is
 * checked, its data copied into the window it names, and its signal counted after the data; the
 * slot is then handed back (head). The rma thread does this for every peer whatever the
 * communicator's caller is doing, so a put never waits for the target's program; a waiter
 * drains the peers it waits on itself (rma_drain_try), so a wait does not add the thread's
 * back-off to its latency. */
#include <string.h>

#include "rma/rma_internal.h"
#include "util/clock.h"
#include "util/check.h"
#include "util/tsan.h"

/* Refuse the peer's stream: later waits on it fail with res (logged once, here). */
static int refuse(struct weft_rma* r, int p, ncclResult_t res) {
  __atomic_store_n(&r->peers[p].error, (int)res, __ATOMIC_RELEASE);
  return -1;
}

/* Copy one step's data into its window: 1 done, 0 not yet (a window not registered here yet),
 * -1 refused. */
static int deliver(struct weft_rma* r, int p, const rma_step_hdr* h, const char* data) {
  struct ncclComm* comm = r->comm;
  if (h->bytes == 0) return 1;
  pthread_rwlock_rdlock(&r->windows_lock);
  if (h->window >= r->nwindows) { /* the peer registered it first: it is on its way here */
    pthread_rwlock_unlock(&r->windows_lock);
    return 0;
  }
  const rma_window* w = &r->windows[h->window];
  WEFT_TSAN_ACQUIRE(comm); /* after the target's accesses before its last call (comm_check) */
  int ok = w->reg != NULL && h->offset <= w->size && h->bytes <= w->size - h->offset;
  if (ok) memcpy(w->buff + h->offset, data, h->bytes);
  size_t size = w->size;
  int gone = w->reg == NULL;
  pthread_rwlock_unlock(&r->windows_lock);
  if (ok) return 1;
  if (gone)
    WARN("rank %d: rank %d put %llu bytes into one-sided window %llu, which this rank has "
         "deregistered",
         comm->rank, p, (unsigned long long)h->bytes, (unsigned long long)h->window);
  else
    WARN("rank %d: rank %d put %llu bytes at offset %llu into one-sided window %llu, which "
         "holds %zu bytes here: do all ranks register their symmetric windows with one size?",
         comm->rank, p, (unsigned long long)h->bytes, (unsigned long long)h->offset,
         (unsigned long long)h->window, size);
  return refuse(r, p, ncclInvalidUsage);
}

int rma_drain(struct weft_rma* r, int p) {
  rma_peer* pp = &r->peers[p];
  weft_conn* c = pp->recv;
  if (!c || __atomic_load_n(&pp->error, __ATOMIC_ACQUIRE) != ncclSuccess) return 0;
  int moved = 0;
  uint64_t tail = __atomic_load_n(&c->ctrl->tail, __ATOMIC_ACQUIRE);
  while (c->step < tail) {
    const char* slot = conn_slot(c, c->step);
    int64_t got = __atomic_load_n(&c->ctrl->sizes[c->step % WEFT_NSTEPS], __ATOMIC_RELAXED);
    rma_step_hdr h;
    if (got < (int64_t)sizeof h || (size_t)got > c->step_bytes) {
      WARN("rank %d: a one-sided step of %lld bytes from rank %d (step %llu) is malformed",
           r->comm->rank, (long long)got, p, (unsigned long long)c->step);
      return refuse(r, p, ncclInternalError);
    }
    memcpy(&h, slot, sizeof h);
    if (h.magic != RMA_STEP_MAGIC || h.bytes != (uint64_t)got - sizeof h) {
      WARN("rank %d: a one-sided step from rank %d (step %llu) is malformed (magic %#x, %llu "
           "bytes announced, %lld received)",
           r->comm->rank, p, (unsigned long long)c->step, h.magic, (unsigned long long)h.bytes,
           (long long)got);
      return refuse(r, p, ncclInternalError);
    }
    int d = deliver(r, p, &h, slot + sizeof h);
    if (d < 0) return -1;
    if (d == 0) break;
    if (h.flags & RMA_STEP_SIGNAL) __atomic_add_fetch(&pp->signals, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&c->step, c->step + 1, __ATOMIC_RELAXED); /* a waiter reads it unlocked */
    __atomic_store_n(&c->ctrl->head, c->step, __ATOMIC_RELEASE);
    moved = 1;
  }
  return moved;
}

int rma_drain_try(struct weft_rma* r, int p) {
  rma_peer* pp = &r->peers[p];
  if (pthread_mutex_trylock(&pp->drain_lock) != 0) return 0;
  int m = rma_drain(r, p);
  pthread_mutex_unlock(&pp->drain_lock);
  return m;
}

void* rma_service_main(void* arg) {
  struct weft_rma* r = arg;
  int n = r->comm->nranks;
  weft_backoff bo = {0};
  while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
    int moved = 0;
    for (int p = 0; p < n; p++)
      if (rma_drain_try(r, p) > 0) moved = 1;
    if (moved)
      bo.polls = 0;
    else
      backoff_wait(&bo);
  }
  return NULL;
}
