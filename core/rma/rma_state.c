/* The one-sided state of a communicator: the numbered symmetric windows, the FIFOs with every
 * peer (connected at the first symmetric window, host mode) and the rma thread. */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"
#include "rma/rma_internal.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/param.h"

/* Net receives the proxy keeps posted for a one-sided FIFO: as many as its free slots, for
 * the communicator's lifetime (nothing tells the target how many steps will come). */
#define RMA_RECV_BUDGET (UINT64_C(1) << 62)

static ncclResult_t rma_state(struct ncclComm* comm, struct weft_rma** out) {
  if (comm->rma) {
    *out = comm->rma;
    return ncclSuccess;
  }
  struct weft_rma* r = calloc(1, sizeof *r);
  rma_peer* peers = r ? calloc((size_t)comm->nranks, sizeof *peers) : NULL;
  if (!peers) {
    free(r);
    WARN("rank %d: out of memory for the one-sided state of %d ranks", comm->rank, comm->nranks);
    return ncclSystemError;
  }
  r->comm = comm;
  r->peers = peers;
  r->timeout_ms = (int)param_int(WEFT_PARAM_TIMEOUT_MS);
  pthread_rwlock_init(&r->windows_lock, NULL);
  for (int p = 0; p < comm->nranks; p++) pthread_mutex_init(&peers[p].drain_lock, NULL);
  comm->rma = r;
  *out = r;
  return ncclSuccess;
}

ncclResult_t rma_window_add(struct ncclComm* comm, const weft_mem_reg* reg) {
  struct weft_rma* r;
  WEFT_CHECK(rma_state(comm, &r));
  pthread_rwlock_wrlock(&r->windows_lock);
  if (r->nwindows == r->cap) {
    uint64_t cap = r->cap ? 2 * r->cap : 8;
    rma_window* w = realloc(r->windows, (size_t)cap * sizeof *w);
    if (!w) {
      pthread_rwlock_unlock(&r->windows_lock);
      WARN("rank %d: out of memory numbering symmetric window %llu", comm->rank,
           (unsigned long long)r->nwindows);
      return ncclSystemError;
    }
    r->windows = w;
    r->cap = cap;
  }
  rma_window* w = &r->windows[r->nwindows];
  w->reg = reg;
  w->buff = reg->buff;
  w->size = reg->size;
  w->mh = NULL;
  ncclResult_t res = rma_plugin_reg_window(r, w); /* collective, like this call */
  if (res != ncclSuccess) {
    pthread_rwlock_unlock(&r->windows_lock);
    return res;
  }
  INFO(NCCL_REG, "rank %d: symmetric window %p (%zu bytes) is one-sided window %llu", comm->rank,
       reg->buff, reg->size, (unsigned long long)r->nwindows);
  r->nwindows++;
  pthread_rwlock_unlock(&r->windows_lock);
  return ncclSuccess;
}

void rma_window_remove(struct ncclComm* comm, const weft_mem_reg* reg) {
  struct weft_rma* r = comm->rma;
  if (!r) return;
  pthread_rwlock_wrlock(&r->windows_lock); /* waits for copies into it to end */
  for (uint64_t i = 0; i < r->nwindows; i++)
    if (r->windows[i].reg == reg) {
      rma_plugin_dereg_window(r, &r->windows[i]);
      r->windows[i].reg = NULL;
    }
  pthread_rwlock_unlock(&r->windows_lock);
}

int rma_connected(const struct ncclComm* comm) {
  return comm->rma && __atomic_load_n(&comm->rma->connected, __ATOMIC_ACQUIRE);
}

ncclResult_t rma_connect(struct ncclComm* comm) {
  struct weft_rma* r;
  WEFT_CHECK(rma_state(comm, &r));
  if (r->connected) return ncclSuccess;
  if (comm->mode == WEFT_MODE_DEVICE) {
    WEFT_CHECK(rma_dev_connect(r));
    __atomic_store_n(&r->connected, 1, __ATOMIC_RELEASE);
    return ncclSuccess;
  }
  int n = comm->nranks;
  if (n > 1) {
    weft_conn_key* keys = calloc(2 * (size_t)(n - 1), sizeof *keys);
    if (!keys) {
      WARN("rank %d: out of memory for %d one-sided connection keys", comm->rank, 2 * (n - 1));
      return ncclSystemError;
    }
    int k = 0;
    for (int p = 0; p < n; p++) {
      if (p == comm->rank) continue;
      for (int send = 0; send < 2; send++)
        keys[k++] = (weft_conn_key){WEFT_CONN_RMA, 0, p, send, NCCL_PROTO_SIMPLE};
    }
    ncclResult_t res = transport_connect(comm, keys, NULL, k);
    if (res != ncclSuccess) {
      free(keys);
      return res;
    }
    int net = 0;
    for (int i = 0; i < k; i++) {
      weft_conn* c = transport_find(comm, &keys[i]);
      rma_peer* pp = &r->peers[keys[i].peer];
      if (keys[i].send) {
        pp->send = c;
        continue;
      }
      pp->recv = c;
      if (transport_kind_of(comm, &keys[i]) == WEFT_TRANSPORT_NET && comm->proxy) {
        proxy_expect_recvs(comm->proxy, c, RMA_RECV_BUDGET);
        net = 1;
      }
    }
    free(keys);
    /* The proxy moves one-sided steps whenever they come: it stays active for good. */
    if (net) proxy_activate(comm->proxy);
    res = rma_plugin_connect(r);
    if (res != ncclSuccess) return res;
    int rc = pthread_create(&r->thread, NULL, rma_service_main, r);
    if (rc != 0) {
      WARN("rank %d: cannot start the one-sided thread: %s", comm->rank, strerror(rc));
      return ncclSystemError;
    }
    r->thread_live = 1;
  }
  __atomic_store_n(&r->connected, 1, __ATOMIC_RELEASE);
  INFO(NCCL_INIT, "rank %d: one-sided FIFOs connected with %d peer(s)", comm->rank, n - 1);
  return ncclSuccess;
}

void rma_comm_failed(struct ncclComm* comm, ncclResult_t res) {
  int ok = ncclSuccess;
  __atomic_compare_exchange_n(&comm->async_error, &ok, (int)res, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_RELAXED);
  __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
}

void rma_fini(struct ncclComm* comm) {
  struct weft_rma* r = comm->rma;
  if (!r) return;
  if (r->thread_live) {
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    pthread_join(r->thread, NULL);
  }
  rma_plugin_fini(r);
  rma_dev_fini(r);
  for (int p = 0; p < comm->nranks; p++) pthread_mutex_destroy(&r->peers[p].drain_lock);
  pthread_rwlock_destroy(&r->windows_lock);
  free(r->peers);
  free(r->windows);
  free(r);
  comm->rma = NULL;
}
