/* Phase 3 of a connection batch: the plugin's connects and accepts, driven so that a plugin
 * whose connect or accept blocks (the ABI says they must not; some do) cannot deadlock two
 * ranks. The calls are made by worker threads, never by the caller: one to start with, which
 * polls every pending connection in turn; whenever every worker has been inside one plugin call
 * for a while and a connection is waiting for its turn, one more worker starts (at most one per
 * pending connection), so a blocked call never holds up the others. A plugin that behaves needs
 * only the first worker.
 *
 * The caller watches: a connection still pending after NETCONN_REPORT_MS is reported once (INFO
 * while the plugin keeps returning, WARN while one of its calls has not returned), and at
 * WEFT_TIMEOUT_MS the batch fails with one WARN per pending connection naming the peer and the
 * plugin call. A worker still inside a plugin call then is left behind: it holds the run and a
 * reference to the communicator's net, and closes what it gets when the call returns.
 *
 * The run owns the plugin's listen and connection comms until a connection is complete; complete
 * ones go back to their tconn when the batch ends. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "plugin/net.h"
#include "transport/transport_internal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/param.h"
#include "util/names.h"

#define NETCONN_REPORT_MS 5000 /* a connection pending this long is reported once */
#define NETCONN_GROW_MS 20     /* all workers inside a call this long: start another */
#define NETCONN_REPORT_MAX 8   /* connections named in one report; the rest are counted */
#define NETCONN_PEER_CHECK_MS 100 /* how often the peers of pending connections are looked at */

typedef struct {
  tconn* c;          /* NULL once the caller has left (the run is abandoned) */
  int kind;
  int is_send;
  int dev;
  int peer, channel;
  _Alignas(16) unsigned char handle[NCCL_NET_HANDLE_MAXSIZE]; /* cast by plugins: aligned */
  void* listen;      /* receiver: the listen comm, until the accept completes */
  void* comm;        /* the plugin's send or receive comm, once it exists */
  int done;
  int in_call;       /* a worker is inside connect/accept for this connection */
  uint64_t call_start_ms;
  unsigned calls;    /* connect/accept calls made so far */
} netconn_item;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  weft_net* net; /* a reference of the run's own */
  int rank;
  int cuda_dev;  /* device mode: the workers' CUDA device; -1 in host mode */
  int n, pending;
  int cursor;    /* next item a worker looks at */
  int workers;   /* started and not yet returned */
  int in_call;   /* workers inside a plugin call */
  int stop;      /* the caller left, or a call failed */
  ncclResult_t err;
  int err_item;
  int refs;      /* the caller + each worker */
  netconn_item items[];
} netconn_run;

static const char* call_name(const netconn_item* it) { return it->is_send ? "connect" : "accept"; }

/* Close whatever the run still owns and drop its net reference. No worker is inside a call. */
static void run_free(netconn_run* r) {
  const ncclNet_v12_t* api = r->net->api;
  for (int i = 0; i < r->n; i++) {
    netconn_item* it = &r->items[i];
    if (it->comm) {
      if (it->is_send)
        api->closeSend(it->comm);
      else
        api->closeRecv(it->comm);
    }
    if (it->listen) api->closeListen(it->listen);
  }
  net_close_for_comm(r->net);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

/* Drop one reference (lock held; released here). */
static void run_unref_locked(netconn_run* r) {
  int last = --r->refs == 0;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->lock);
  if (last) run_free(r);
}

/* The next pending connection no worker is calling, round robin; -1 when there is none. */
static int pick_locked(netconn_run* r) {
  for (int k = 0; k < r->n; k++) {
    int i = (r->cursor + k) % r->n;
    if (!r->items[i].done && !r->items[i].in_call) {
      r->cursor = (i + 1) % r->n;
      return i;
    }
  }
  return -1;
}

static void* worker_main(void* arg) {
  netconn_run* r = arg;
  const ncclNet_v12_t* api = r->net->api;
  weft_backoff bo = {0};
  int idle_calls = 0; /* calls since the last progress this worker saw */
  weft_log_set_thread_rank(r->rank, r->cuda_dev);
  devmem_thread_device(r->cuda_dev);
  pthread_mutex_lock(&r->lock);
  while (!r->stop && r->pending > 0) {
    int i = pick_locked(r);
    if (i < 0) { /* every pending connection is inside another worker's call */
      pthread_mutex_unlock(&r->lock);
      backoff_wait(&bo);
      pthread_mutex_lock(&r->lock);
      continue;
    }
    netconn_item* it = &r->items[i];
    it->in_call = 1;
    it->call_start_ms = clock_ms();
    it->calls++;
    r->in_call++;
    pthread_mutex_unlock(&r->lock);

    void* comm = NULL;
    ncclNetDeviceHandle_v12_t* devh = NULL;
    ncclResult_t res = it->is_send
                           ? api->connect(r->net->ctx, it->dev, it->handle, &comm, &devh)
                           : api->accept(it->listen, &comm, &devh);
    void* listen_done = NULL;
    if (res == ncclSuccess && comm && !it->is_send) {
      listen_done = it->listen; /* only this worker touches it while in_call is set */
      it->listen = NULL;
    }
    if (listen_done) api->closeListen(listen_done);

    pthread_mutex_lock(&r->lock);
    it->in_call = 0;
    r->in_call--;
    if (res != ncclSuccess) {
      if (!r->stop) {
        r->stop = 1;
        r->err = res;
        r->err_item = i;
      }
    } else if (comm) {
      it->comm = comm;
      it->done = 1;
      r->pending--;
      idle_calls = 0;
      bo.polls = 0;
    } else if (++idle_calls >= r->pending) {
      /* A whole round without progress: wait a little before the next one. */
      idle_calls = 0;
      pthread_mutex_unlock(&r->lock);
      backoff_wait(&bo);
      pthread_mutex_lock(&r->lock);
    }
    pthread_cond_broadcast(&r->cv);
  }
  r->workers--;
  run_unref_locked(r);
  return NULL;
}

/* Start one more worker (lock held). 0 when the thread could not be made. */
static int spawn_locked(netconn_run* r) {
  pthread_attr_t attr;
  pthread_t th;
  if (pthread_attr_init(&attr) != 0) return 0;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  r->refs++;
  r->workers++;
  int rc = pthread_create(&th, &attr, worker_main, r);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    r->refs--;
    r->workers--;
    return 0;
  }
  return 1;
}

static void describe_item(const netconn_item* it, char* buf, size_t len) {
  snprintf(buf, len, "%s channel %d %s rank %d", transport_kind_name(it->kind),
           it->channel,
           it->is_send ? "to" : "from", it->peer);
}

/* One line per pending connection (the first few): what the plugin call is doing. */
static void report_pending_locked(netconn_run* r, uint64_t now, int final, int timeout_ms) {
  int named = 0, more = 0;
  for (int i = 0; i < r->n; i++) {
    const netconn_item* it = &r->items[i];
    if (it->done) continue;
    if (!final && named >= NETCONN_REPORT_MAX) {
      more++;
      continue;
    }
    char what[96];
    describe_item(it, what, sizeof what);
    const char* name = r->net->name;
    /* A plugin that polls returns at once with no comm and is called again: being in a call
     * then says nothing (it began 0 ms ago); only a call that has run a while is blocking. */
    int blocked = it->in_call && now - it->call_start_ms >= NETCONN_GROW_MS;
    if (final) {
      if (blocked)
        WARN("rank %d: net %s: connection %s not established after %d ms (WEFT_TIMEOUT_MS): "
             "the plugin's %s has not returned for %llu ms",
             r->rank, name, what, timeout_ms, call_name(it),
             (unsigned long long)(now - it->call_start_ms));
      else
        WARN("rank %d: net %s: connection %s not established after %d ms (WEFT_TIMEOUT_MS): "
             "the plugin's %s returned no comm in %u calls",
             r->rank, name, what, timeout_ms, call_name(it), it->calls);
    } else if (blocked) {
      WARN("rank %d: net %s: connection %s still pending after %d ms: the plugin's %s has not "
           "returned for %llu ms (a net plugin's connect/accept must not block; weft keeps "
           "driving the other connections, up to WEFT_TIMEOUT_MS)",
           r->rank, name, what, NETCONN_REPORT_MS, call_name(it),
           (unsigned long long)(now - it->call_start_ms));
    } else if (it->calls == 0 && !it->in_call) {
      INFO(NCCL_INIT | NCCL_NET,
           "rank %d: net %s: connection %s still pending after %d ms: its %s has not been called "
           "yet (every worker is inside another plugin call)",
           r->rank, name, what, NETCONN_REPORT_MS, call_name(it));
    } else {
      INFO(NCCL_INIT | NCCL_NET,
           "rank %d: net %s: connection %s still pending after %d ms: the plugin's %s returned no "
           "comm in %u calls (waiting up to WEFT_TIMEOUT_MS for rank %d)",
           r->rank, name, what, NETCONN_REPORT_MS, call_name(it), it->calls, it->peer);
    }
    named++;
  }
  if (more)
    INFO(NCCL_INIT | NCCL_NET, "rank %d: net %s: and %d more pending connection(s)", r->rank,
         r->net->name, more);
}

/* The longest-running plugin call now (ms), and whether a pending connection waits for a turn. */
static int needs_worker_locked(netconn_run* r, uint64_t now) {
  if (r->workers >= r->pending || r->in_call < r->workers) return 0;
  uint64_t shortest = UINT64_MAX;
  int waiting = 0;
  for (int i = 0; i < r->n; i++) {
    const netconn_item* it = &r->items[i];
    if (it->done) continue;
    if (!it->in_call)
      waiting = 1;
    else if (now - it->call_start_ms < shortest)
      shortest = now - it->call_start_ms;
  }
  return waiting && shortest != UINT64_MAX && shortest >= NETCONN_GROW_MS;
}

/* The caller's side: hand back finished connections; the run stays with the workers still in a
 * call. Lock held; released here. */
static void run_leave_locked(netconn_run* r) {
  for (int i = 0; i < r->n; i++) {
    netconn_item* it = &r->items[i];
    if (it->done && it->c) {
      it->c->net_comm = it->comm;
      it->comm = NULL;
    }
    it->c = NULL;
  }
  r->stop = 1;
  run_unref_locked(r);
}

/* A pending connection whose peer is gone (it exited, or failed and closed its communicator:
 * its bootstrap says so) will never be made: 1 after a WARN naming it. An accept learns of it
 * no other way (a connect is refused). */
static int pending_peer_gone_locked(struct ncclComm* comm, netconn_run* r) {
  if (!comm->bootstrap) return 0;
  for (int i = 0; i < r->n; i++) {
    const netconn_item* it = &r->items[i];
    const char* how = NULL;
    if (it->done || !bootstrap_peer_gone(comm->bootstrap, it->peer, &how)) continue;
    char what[96];
    describe_item(it, what, sizeof what);
    WARN("rank %d: net %s: connection %s cannot be made: rank %d is gone (%s)", r->rank,
         r->net->name, what, it->peer, how);
    return 1;
  }
  return 0;
}

static void timed_wait_ms(netconn_run* r, int ms) {
  struct timespec ts = clock_deadline(CLOCK_REALTIME, ms);
  pthread_cond_timedwait(&r->cv, &r->lock, &ts);
}

ncclResult_t net_connect_all(struct ncclComm* comm, tconn** todo, int m) {
  int n = 0;
  for (int i = 0; i < m; i++)
    if (todo[i]->transport == WEFT_TRANSPORT_NET && todo[i]->net_comm == NULL) n++;
  if (n == 0) return ncclSuccess;
  netconn_run* r = calloc(1, sizeof *r + (size_t)n * sizeof(netconn_item));
  if (r == NULL) {
    WARN("rank %d: out of memory driving %d net connections", comm->rank, n);
    return ncclSystemError;
  }
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->cv, NULL);
  net_retain(comm->net);
  r->net = comm->net;
  r->rank = comm->rank;
  r->cuda_dev = comm->transport->device ? comm->cuda_dev : -1;
  r->refs = 1;
  for (int i = 0; i < m; i++) {
    tconn* c = todo[i];
    if (c->transport != WEFT_TRANSPORT_NET || c->net_comm) continue;
    netconn_item* it = &r->items[r->n++];
    it->c = c;
    it->kind = c->key.kind;
    it->is_send = c->conn.is_send;
    it->dev = c->dev;
    it->peer = c->key.peer;
    it->channel = c->key.channel;
    memcpy(it->handle, c->handle, sizeof it->handle);
    it->listen = c->listen_comm; /* the run's now */
    c->listen_comm = NULL;
  }
  r->pending = r->n;

  int timeout = (int)param_int(WEFT_PARAM_TIMEOUT_MS);
  uint64_t start = clock_ms(), next_peer_check = start + NETCONN_PEER_CHECK_MS;
  int reported = 0;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&r->lock);
  if (!spawn_locked(r)) {
    WARN("rank %d: cannot start a thread to drive %d net connections", comm->rank, n);
    res = ncclSystemError;
    goto leave;
  }
  while (r->pending > 0 && !r->stop) {
    timed_wait_ms(r, 5);
    uint64_t now = clock_ms();
    if (needs_worker_locked(r, now)) spawn_locked(r); /* failing to grow is not fatal */
    if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE)) {
      WARN("rank %d: connection setup aborted", comm->rank);
      res = ncclRemoteError;
      goto leave;
    }
    if (now >= next_peer_check && r->pending > 0) {
      next_peer_check = now + NETCONN_PEER_CHECK_MS;
      if (pending_peer_gone_locked(comm, r)) {
        res = ncclRemoteError;
        goto leave;
      }
    }
    if (!reported && now - start >= NETCONN_REPORT_MS && r->pending > 0) {
      reported = 1;
      report_pending_locked(r, now, 0, timeout);
    }
    if (now - start > (uint64_t)timeout && r->pending > 0) {
      report_pending_locked(r, now, 1, timeout);
      res = ncclRemoteError;
      goto leave;
    }
  }
  if (r->err != ncclSuccess) {
    const netconn_item* it = &r->items[r->err_item];
    char what[96];
    describe_item(it, what, sizeof what);
    WARN("rank %d: net %s: %s for connection %s failed (%s)", comm->rank, comm->net->name,
         call_name(it), what, weft_result_str(r->err));
    res = r->err;
  }
leave:
  run_leave_locked(r);
  return res;
}
