/* The connection table and the setup of a batch of connections (see transport.h).
 *
 * A batch runs in phases so that no rank waits for a peer that is itself waiting:
 *  1. for every connection this rank receives on: create the receiving end (shm segment, or a
 *     net listen) and send its description to the peer (never waits for anyone);
 *  2. for every connection this rank sends on: receive the peer's description (sent in the
 *     peer's phase 1) and open the sending end;
 *  3. drive every net connect/accept of the batch until the plugin has finished them all
 *     (transport_netconn.c: worker threads, so a plugin call that blocks cannot stall the rest);
 *  4. allocate and register net buffers; in device mode write every connection's weft_dev_conn
 *     into the device table; then hand the net connections to the proxy.
 * A connection that failed half-way is closed again, so a later call starts it afresh.
 * Device mode runs the whole batch with the communicator's CUDA device current (restored on
 * return): one thread may drive communicators on several GPUs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "plugin/net.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"
#include "util/names.h"

#define CONN_TAG_BASE 0x57540000
_Static_assert(WEFT_MAX_CHANNELS <= 64, "conn_tag keeps the channel in 6 bits");

/* Table position of a protocol: Simple 0, LL 1, LL128 2 (device P2P only). */
static int proto_slot(int proto) {
  return proto == NCCL_PROTO_LL ? 1 : proto == NCCL_PROTO_LL128 ? 2 : 0;
}

static int conn_tag(const weft_conn_key* k) {
  /* channel < 64: bits 0-5; the protocol in bits 6-7 */
  return CONN_TAG_BASE | (k->kind << 8) | (proto_slot(k->proto) << 6) | k->channel;
}

const char* transport_kind_name(int kind) {
  return kind == WEFT_CONN_P2P ? "p2p" : kind == WEFT_CONN_RMA ? "one-sided" : "coll";
}
static const char* proto_name(int proto) {
  return proto == NCCL_PROTO_LL ? "LL" : proto == NCCL_PROTO_LL128 ? "LL128" : "Simple";
}

size_t transport_step_bytes(struct ncclComm* comm, int proto) {
  const weft_transport_params* p = &comm->transport->p;
  if (proto == NCCL_PROTO_LL)
    return p->ll_buffsize / WEFT_NSTEPS / WEFT_LL_LINE_BYTES * WEFT_LL_LINE_BYTES;
  if (proto == NCCL_PROTO_LL128) /* the Simple buffer size, in whole 128-byte lines */
    return p->buffsize / WEFT_NSTEPS / WEFT_LL128_LINE_BYTES * WEFT_LL128_LINE_BYTES;
  return p->buffsize / WEFT_NSTEPS / WEFT_CACHELINE * WEFT_CACHELINE;
}

static ncclResult_t key_index(struct ncclComm* comm, const weft_conn_key* k, size_t* out) {
  struct weft_transport* t = comm->transport;
  if (k->kind < 0 || k->kind >= WEFT_CONN_NKINDS || k->channel < 0 ||
      k->channel >= t->p.nchannels || k->peer < 0 || k->peer >= t->nranks ||
      k->peer == comm->rank ||
      (k->proto != NCCL_PROTO_SIMPLE && k->proto != NCCL_PROTO_LL &&
       k->proto != NCCL_PROTO_LL128)) {
    WARN("rank %d: invalid connection key (kind %d channel %d peer %d proto %d)", comm->rank,
         k->kind, k->channel, k->peer, k->proto);
    return ncclInternalError;
  }
  size_t i = (size_t)k->kind;
  i = i * (size_t)t->p.nchannels + (size_t)k->channel;
  i = i * (size_t)t->nranks + (size_t)k->peer;
  i = i * 2 + (k->send ? 1 : 0);
  i = i * 3 + (size_t)proto_slot(k->proto);
  *out = i;
  return ncclSuccess;
}

ncclResult_t transport_init(struct ncclComm* comm, const weft_transport_params* p) {
  struct weft_transport* t = calloc(1, sizeof *t);
  if (!t) {
    WARN("rank %d: out of memory for the connection table", comm->rank);
    return ncclSystemError;
  }
  t->p = *p;
  t->nranks = comm->nranks;
  t->device = comm->mode == WEFT_MODE_DEVICE;
#ifndef WEFT_HAVE_CUDA
  if (t->device) {
    free(t);
    WARN("rank %d: device-mode connections need a weft built with CUDA", comm->rank);
    return ncclInvalidUsage;
  }
#endif
  t->ntable = (size_t)WEFT_CONN_NKINDS * (size_t)p->nchannels * (size_t)comm->nranks * 2 * 3;
  t->table = calloc(t->ntable, sizeof *t->table);
  if (!t->table) {
    free(t);
    WARN("rank %d: out of memory for a connection table of %zu entries", comm->rank,
         (size_t)WEFT_CONN_NKINDS * (size_t)p->nchannels * (size_t)comm->nranks * 4);
    return ncclSystemError;
  }
  pthread_mutex_init(&t->reg_lock, NULL);
  comm->transport = t;
  if (t->device) {
    ncclResult_t res = regserve_start(comm);
    if (res != ncclSuccess) {
      transport_fini(comm);
      return res;
    }
  }
  return ncclSuccess;
}

weft_conn* transport_find(struct ncclComm* comm, const weft_conn_key* key) {
  size_t i;
  if (comm->transport == NULL || key_index(comm, key, &i) != ncclSuccess) return NULL;
  tconn* c = comm->transport->table[i];
  return c && c->connected ? &c->conn : NULL;
}

int transport_kind_of(struct ncclComm* comm, const weft_conn_key* key) {
  size_t i;
  if (comm->transport == NULL || key_index(comm, key, &i) != ncclSuccess) return 0;
  tconn* c = comm->transport->table[i];
  return c && c->connected ? c->transport : 0;
}

weft_dev_conn* transport_dev_conn(struct ncclComm* comm, const weft_conn_key* key) {
  size_t i;
  if (comm->transport == NULL || comm->transport->dev_table == NULL ||
      key_index(comm, key, &i) != ncclSuccess)
    return NULL;
  tconn* c = comm->transport->table[i];
  return c && c->connected ? comm->transport->dev_table + i : NULL;
}

size_t transport_capacity(struct ncclComm* comm) {
  return comm->transport ? comm->transport->ntable : 0;
}

weft_dev_conn* transport_dev_table(struct ncclComm* comm) {
  return comm->transport ? comm->transport->dev_table : NULL;
}

void transport_memory(struct ncclComm* comm, int* nconn, size_t* fifo_bytes) {
  struct weft_transport* t = comm->transport;
  *nconn = t ? t->nconn : 0;
  *fifo_bytes = t ? t->fifo_bytes : 0;
}

int transport_uses_net(struct ncclComm* comm) {
  return comm->transport && comm->transport->nnet > 0;
}

/* Both ends compute this from facts they share (rank infos, agreed parameters). */
static int choose_transport(struct ncclComm* comm, int peer) {
  if (comm->peers[peer].host_hash != comm->peers[comm->rank].host_hash ||
      strcmp(comm->peers[peer].host, comm->peers[comm->rank].host) != 0)
    return WEFT_TRANSPORT_NET;
  if (comm->transport->device && p2p_usable(comm, peer)) return WEFT_TRANSPORT_P2P;
  if (comm->transport->p.shm_disable) return WEFT_TRANSPORT_NET;
  return WEFT_TRANSPORT_SHM;
}

static const char* transport_name(struct ncclComm* comm, const tconn* c, char* buf,
                                  size_t len) {
  switch (c->transport) {
    case WEFT_TRANSPORT_P2P: return c->p2p_how == P2P_VIA_IPC ? "P2P/IPC" : "P2P/direct";
    case WEFT_TRANSPORT_SHM: return c->host_reg ? "SHM (mapped into the GPU)" : "SHM";
    default:
      if (!c->gdr_mem) return comm->net->name;
      snprintf(buf, len, "%s/GDRDMA%s", comm->net->name, c->gdr_dmabuf ? " (dma-buf)" : "");
      return buf;
  }
}

/* The peer's process, when it is on this host and visible to kill() from here. */
static int watchable_pid(struct ncclComm* comm, int peer) {
  const weft_rank_info* me = &comm->peers[comm->rank];
  const weft_rank_info* p = &comm->peers[peer];
  if (p->host_hash != me->host_hash || p->pid == me->pid || p->pid <= 0) return 0;
  if (kill(p->pid, 0) != 0 && errno == ESRCH) return 0; /* another pid namespace */
  return p->pid;
}

static void tconn_close(struct ncclComm* comm, tconn* c) {
  /* Unregister (device mode) before the memory goes away. */
  switch (c->transport) {
    case WEFT_TRANSPORT_NET:
      net_close_comms(comm, c); /* the plugin stops touching the memory first */
      devmem_unregister_host(comm, c);
      net_close(comm, c);
      break;
    case WEFT_TRANSPORT_SHM:
      devmem_unregister_host(comm, c);
      shm_close(comm, c);
      break;
    default: p2p_close(comm, c); break;
  }
}

static void describe(const tconn* c, char* buf, size_t len) {
  snprintf(buf, len, "%s %s channel %d %s rank %d", transport_kind_name(c->key.kind),
           proto_name(c->key.proto), c->key.channel, c->conn.is_send ? "to" : "from",
           c->key.peer);
}

static ncclResult_t recv_side(struct ncclComm* comm, tconn* c) {
  conn_info info;
  memset(&info, 0, sizeof info);
  info.magic = CONN_INFO_MAGIC;
  info.transport = c->transport;
  info.kind = c->key.kind;
  info.channel = c->key.channel;
  info.proto = c->key.proto;
  info.pid = (int32_t)getpid();
  info.step_bytes = c->conn.step_bytes;
  info.why = c->why;
  if (c->transport == WEFT_TRANSPORT_P2P) {
    WEFT_CHECK(p2p_recv_setup(comm, c, &info));
  } else if (c->transport == WEFT_TRANSPORT_SHM) {
    WEFT_CHECK(shm_recv_setup(comm, c, &info));
    if (comm->transport->device) WEFT_CHECK(devmem_register_host(comm, c, c->map, c->map_bytes));
  } else {
    WEFT_CHECK(net_recv_setup(comm, c, &info));
  }
  return bootstrap_send(comm->bootstrap, c->key.peer, conn_tag(&c->key), &info, sizeof info);
}

static void describe_why(const weft_conn_why* w, char* buf, size_t len) {
  ncclDataType_t t = (ncclDataType_t)w->dtype;
  if (w->func == ncclFuncSend || w->func == ncclFuncRecv)
    snprintf(buf, len, "%s %s rank %d of %llu x %s (%llu bytes)",
             w->func == ncclFuncSend ? "ncclSend" : "ncclRecv",
             w->func == ncclFuncSend ? "to" : "from", w->peer, (unsigned long long)w->count,
             dtype_name(t), (unsigned long long)(w->count * dtype_size(t)));
  else if (w->func == ncclFuncBroadcast || w->func == ncclFuncReduce)
    snprintf(buf, len, "%s #%llu (count %llu, %s, root %d)", weft_func_name(w->func),
             (unsigned long long)w->seq, (unsigned long long)w->count, dtype_name(t), w->root);
  else
    snprintf(buf, len, "%s #%llu (count %llu, %s)", weft_func_name(w->func),
             (unsigned long long)w->seq, (unsigned long long)w->count, dtype_name(t));
}

/* The batch a send side waits in: a connection's details from the peer that no connection of
 * the batch expects means the peer set up for another operation; the one this rank waits for
 * will not come (the peer sends all of a batch's details before it waits for any). */
typedef struct {
  tconn** todo;
  int m;
  int peer, stray_tag;
} setup_wait;

static ncclResult_t stray_setup(weft_bootstrap* b, void* ctx) {
  setup_wait* sw = ctx;
  int tags[16];
  int n = bootstrap_queued_tags(b, sw->peer, CONN_TAG_BASE, CONN_TAG_BASE | 0xffff, tags, 16);
  for (int i = 0; i < n; i++) {
    int expected = 0;
    for (int k = 0; k < sw->m && !expected; k++) {
      const tconn* o = sw->todo[k];
      expected = o->conn.is_send && o->key.peer == sw->peer && conn_tag(&o->key) == tags[i];
    }
    if (!expected) {
      sw->stray_tag = tags[i];
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

/* The peer's details for another connection than c (the operations differ): WARN naming both
 * sides' operations. */
static ncclResult_t report_stray(struct ncclComm* comm, const tconn* c, int tag) {
  conn_info other;
  memset(&other, 0, sizeof other);
  ncclResult_t r = bootstrap_recv(comm->bootstrap, c->key.peer, tag, &other, sizeof other);
  char mine[128], theirs[128], want[96];
  describe(c, want, sizeof want);
  describe_why(&c->why, mine, sizeof mine);
  if (r != ncclSuccess || other.magic != CONN_INFO_MAGIC) {
    WARN("rank %d: %s needs connection %s, and rank %d set up another one: the ranks' "
         "operations differ", comm->rank, mine, want, c->key.peer);
    return ncclInvalidUsage;
  }
  describe_why(&other.why, theirs, sizeof theirs);
  WARN("rank %d: %s needs connection %s, while rank %d set up %s %s channel %d for its %s: "
       "the ranks' operations differ (every rank must call the same collectives with the same "
       "root, and a send's size must match its receive's)",
       comm->rank, mine, want, c->key.peer, transport_kind_name(other.kind), proto_name(other.proto),
       other.channel, theirs);
  return ncclInvalidUsage;
}

static ncclResult_t send_side(struct ncclComm* comm, tconn* c, tconn** todo, int m) {
  conn_info info;
  setup_wait sw = {todo, m, c->key.peer, 0};
  ncclResult_t r = bootstrap_recv_unless(comm->bootstrap, c->key.peer, conn_tag(&c->key), &info,
                                         sizeof info, stray_setup, &sw);
  if (r == ncclInvalidUsage && sw.stray_tag) return report_stray(comm, c, sw.stray_tag);
  if (r != ncclSuccess) {
    char what[96], mine[128];
    describe(c, what, sizeof what);
    describe_why(&c->why, mine, sizeof mine);
    WARN("rank %d: %s needs connection %s, and rank %d did not set up its end: it is not in the "
         "same operation (a collective or root that differs: WEFT_CHECK_COLLECTIVES=1 names it), "
         "or it failed or is stuck (%s)",
         comm->rank, mine, what, c->key.peer, weft_result_str(r));
    return r;
  }
  if (info.magic != CONN_INFO_MAGIC || info.kind != c->key.kind ||
      info.channel != c->key.channel || info.proto != c->key.proto ||
      info.step_bytes != c->conn.step_bytes || info.transport != c->transport) {
    char what[96];
    describe(c, what, sizeof what);
    WARN("rank %d: connection %s: the peer describes it differently (transport %d vs %d, "
         "step %llu vs %zu bytes); are NCCL_BUFFSIZE / NCCL_SHM_DISABLE the same everywhere?",
         comm->rank, what, info.transport, c->transport, (unsigned long long)info.step_bytes,
         c->conn.step_bytes);
    return ncclInvalidUsage;
  }
  if (c->transport == WEFT_TRANSPORT_P2P) return p2p_send_connect(comm, c, &info);
  if (c->transport == WEFT_TRANSPORT_SHM) {
    WEFT_CHECK(shm_send_connect(comm, c, &info));
    if (comm->transport->device) WEFT_CHECK(devmem_register_host(comm, c, c->map, c->map_bytes));
    return ncclSuccess;
  }
  return net_send_setup(comm, c, &info);
}

static ncclResult_t connect_batch(struct ncclComm* comm, const weft_conn_key* keys,
                                  const weft_conn_why* whys, int n);

ncclResult_t transport_connect(struct ncclComm* comm, const weft_conn_key* keys,
                               const weft_conn_why* whys, int n) {
  if (n == 0) return ncclSuccess;
  if (!comm->transport->device) return connect_batch(comm, keys, whys, n);
  int saved;
  WEFT_CHECK(devmem_enter(comm, &saved));
  ncclResult_t res = connect_batch(comm, keys, whys, n);
  devmem_leave(comm, saved);
  return res;
}

static ncclResult_t connect_batch(struct ncclComm* comm, const weft_conn_key* keys,
                                  const weft_conn_why* whys, int n) {
  struct weft_transport* t = comm->transport;
  ncclResult_t res = ncclSuccess;
  tconn** todo = calloc((size_t)n, sizeof *todo);
  if (!todo) {
    WARN("rank %d: out of memory setting up %d connections", comm->rank, n);
    return ncclSystemError;
  }
  int m = 0;
  for (int i = 0; i < n; i++) {
    size_t idx;
    WEFT_CHECK_GOTO(key_index(comm, &keys[i], &idx), res, fail);
    if (t->table[idx]) continue;
    tconn* c = calloc(1, sizeof *c);
    if (!c) {
      WARN("rank %d: out of memory for a connection", comm->rank);
      res = ncclSystemError;
      goto fail;
    }
    c->key = keys[i];
    c->key.send = keys[i].send ? 1 : 0;
    if (whys) c->why = whys[i];
    c->slot = idx;
    c->transport = choose_transport(comm, c->key.peer);
    if (c->key.proto == NCCL_PROTO_LL128 && c->transport != WEFT_TRANSPORT_P2P) {
      /* LL128 relies on NVLink delivering a warp's 128-byte store whole; the planner only
       * picks it when every rank reaches its peers peer-to-peer. */
      WARN("rank %d: an LL128 connection to rank %d would not be peer-to-peer", comm->rank,
           c->key.peer);
      free(c);
      res = ncclInternalError;
      goto fail;
    }
    c->conn.step_bytes = transport_step_bytes(comm, c->key.proto);
    c->conn.proto = c->key.proto;
    c->conn.is_send = c->key.send;
    c->conn.peer = c->key.peer;
    c->conn.channel = c->key.channel;
    /* A same-host peer's death fails a wait at once, except a receive over the net: a sender
     * that finished and exited may still have its last bytes in the plugin's hands (socket
     * buffers), and they arrive after it is gone. There the plugin reports the closed
     * connection once what was sent has been received. */
    c->conn.watch_pid = c->transport == WEFT_TRANSPORT_NET && !c->key.send
                            ? 0
                            : watchable_pid(comm, c->key.peer);
    if (c->transport == WEFT_TRANSPORT_NET && comm->net == NULL) {
      WARN("rank %d: rank %d needs the network, and this communicator has none", comm->rank,
           c->key.peer);
      free(c);
      res = ncclInternalError;
      goto fail;
    }
    t->table[idx] = c;
    todo[m++] = c;
  }
  for (int i = 0; i < m; i++)
    if (!todo[i]->conn.is_send) WEFT_CHECK_GOTO(recv_side(comm, todo[i]), res, fail);
  for (int i = 0; i < m; i++)
    if (todo[i]->conn.is_send) WEFT_CHECK_GOTO(send_side(comm, todo[i], todo, m), res, fail);
  /* p2p FIFO descriptors handed over by SCM_RIGHTS: every rank's offers are out by now. */
  if (t->device) WEFT_CHECK_GOTO(vmem_fdx_finish(comm, todo, (size_t)m), res, fail);
  WEFT_CHECK_GOTO(net_connect_all(comm, todo, m), res, fail);
  for (int i = 0; i < m; i++)
    if (todo[i]->transport == WEFT_TRANSPORT_NET)
      WEFT_CHECK_GOTO(net_finish(comm, todo[i]), res, fail);
  /* The kernels' descriptors exist before any key counts as connected. */
  if (t->device) WEFT_CHECK_GOTO(devmem_fill(comm, todo, m), res, fail);
  for (int i = 0; i < m; i++) {
    if (todo[i]->transport == WEFT_TRANSPORT_NET) {
      WEFT_CHECK_GOTO(net_start(comm, todo[i]), res, fail);
      t->nnet++;
    }
    todo[i]->connected = 1; /* from here on the proxy may use it: never undone below */
    t->nconn++;
    t->fifo_bytes += conn_mem_bytes(todo[i]->conn.step_bytes);
    if (weft_log_enabled(NCCL_LOG_INFO, NCCL_INIT)) {
      char what[96], how[96];
      describe(todo[i], what, sizeof what);
      INFO(NCCL_INIT, "rank %d: connected %s via %s (%d connection(s), %zu KiB of FIFOs)",
           comm->rank, what, transport_name(comm, todo[i], how, sizeof how), t->nconn,
           t->fifo_bytes >> 10);
    }
  }
  free(todo);
  return ncclSuccess;
fail:
  /* Undo what this batch created but did not finish. */
  for (int i = 0; i < m; i++) {
    tconn* c = todo[i];
    if (c->connected) continue;
    size_t idx;
    if (key_index(comm, &c->key, &idx) == ncclSuccess) t->table[idx] = NULL;
    tconn_close(comm, c);
    free(c);
  }
  free(todo);
  return res;
}

void transport_fini(struct ncclComm* comm) {
  struct weft_transport* t = comm->transport;
  if (!t) return;
  int saved = -1;
  /* Device mode: free on the comm's device; when even that fails, still try (and warn). */
  if (t->device && devmem_enter(comm, &saved) != ncclSuccess) saved = -1;
  /* Every net connection ends before any CUDA call below: a CUDA free or unregister may wait
   * for kernels of this process that still wait on those peers, and only the connection ending
   * (the peer's proxy then fails and stops them) releases them. */
  for (size_t i = 0; i < t->ntable; i++)
    if (t->table[i] && t->table[i]->transport == WEFT_TRANSPORT_NET)
      net_close_comms(comm, t->table[i]);
  for (size_t i = 0; i < t->ntable; i++) {
    if (!t->table[i]) continue;
    tconn_close(comm, t->table[i]);
    free(t->table[i]);
  }
  if (t->device) {
    regserve_fini(comm); /* peers' buffers mapped here: their operations have ended */
    devmem_fini(comm);
    devmem_leave(comm, saved);
  }
  pthread_mutex_destroy(&t->reg_lock);
  free(t->table);
  free(t);
  comm->transport = NULL;
}
