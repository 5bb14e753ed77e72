/* Connection setup over TCP, never blocking: listen/connect/accept return at once and are
 * called again until the comm is there.
 *
 *   listen   TCP socket on the out-of-band interface (NCCL_SOCKET_IFNAME), handle = {magic,
 *            random secret, address}.
 *   connect  (sender) TCP connect; create CQ, QPs (INIT), CTS FIFO; send its info (QPNs, LID,
 *            GID, MTU, FIFO address and key, traffic class, the secret); receive the
 *            receiver's; QPs to RTR/RTS; post the CTS receives; send one "ready" byte.
 *   accept   (receiver) take connections, read an info; a wrong magic/secret/version is a
 *            stray connection, dropped; create the comm with as many QPs, to RTR/RTS at once,
 *            post the data receives; reply with its info (or a failure status, so the sender
 *            fails too rather than waiting); wait for "ready".
 * "ready" is what makes it safe for the receiver to post CTS writes: the sender's QPs are in
 * RTS and its receives are posted. The TCP socket then stays open for the life of the comm:
 * its end is how a dead peer shows up on a side that would otherwise wait forever. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ib_internal.h"
#include "util/param.h"

#define IB_LISTEN_MAGIC 0x69625f6c73746e31ull

/* ---- the out-of-band interface, chosen once per process ---- */

static pthread_mutex_t oob_lock = PTHREAD_MUTEX_INITIALIZER;
static int oob_found; /* 1 found, -1 none */
static weft_sockaddr oob_addr;
static char oob_name[IF_NAMESIZE];

ncclResult_t net_ib_oob_interface(weft_sockaddr* addr) {
  pthread_mutex_lock(&oob_lock);
  if (oob_found == 0) {
    char names[1][IF_NAMESIZE];
    weft_sockaddr addrs[1];
    int n = 0;
    if (socket_find_interfaces(names, addrs, 1, &n) == ncclSuccess && n > 0) {
      oob_addr = addrs[0];
      memcpy(oob_name, names[0], IF_NAMESIZE);
      oob_found = 1;
      char a[WEFT_SOCKADDR_STRLEN];
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: connection setup over %s %s", oob_name,
              socket_addr_str(&oob_addr, a, sizeof a));
    } else {
      oob_found = -1;
    }
  }
  int ok = oob_found == 1;
  if (ok) *addr = oob_addr;
  pthread_mutex_unlock(&oob_lock);
  if (!ok) {
    IB_WARN("NET/IB: no network interface for connection setup (NCCL_SOCKET_IFNAME)");
    return ncclSystemError;
  }
  return ncclSuccess;
}

/* ---- listen ---- */

typedef struct {
  int fd;
  size_t got;
  ib_conn_info info;
} ib_candidate;

typedef struct {
  uint64_t magic;
  int dev;
  int fd;
  uint64_t secret;
  ib_candidate cand[IB_ACCEPT_CANDIDATES];
  int ncand;
  /* the connection being accepted (phase 0: none) */
  int phase;
  int sfd;
  char peer[WEFT_SOCKADDR_STRLEN];
  ib_conn_info peer_info, reply;
  size_t done;
  char ready;
  ib_comm* comm;
  ncclProfilerCallback_t prof; /* the context's profFn, for the comms accept makes */
} ib_listen;

enum { ACC_NONE = 0, ACC_REPLY, ACC_READY };

ncclResult_t net_ib_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  ib_ctx* x = net_ib_ctx_check(ctx, "listen");
  if (x == NULL) return ncclInternalError;
  if (handle == NULL || listen_comm == NULL) {
    IB_WARN("NET/IB: listen: handle or listen_comm is NULL");
    return ncclInternalError;
  }
  if (net_ib_dev_get(dev) == NULL) return ncclInternalError;
  weft_sockaddr addr, bound;
  ncclResult_t res = net_ib_oob_interface(&addr);
  if (res != ncclSuccess) return res;
  socket_addr_set_port(&addr, 0);
  ib_listen* l = calloc(1, sizeof *l);
  if (l == NULL) {
    IB_WARN("NET/IB: out of memory allocating a listen comm");
    return ncclSystemError;
  }
  res = socket_listen(&addr, &l->fd, &bound);
  if (res != ncclSuccess) {
    free(l);
    return res;
  }
  l->magic = IB_LISTEN_MAGIC;
  l->dev = dev;
  l->prof = x->head.prof;
  l->sfd = -1;
  l->secret = weft_net_random64();
  ib_handle h;
  memset(&h, 0, sizeof h);
  h.magic = IB_HANDLE_MAGIC;
  h.secret = l->secret;
  h.addr = bound;
  h.version = IB_PROTO_VERSION;
  h.stage = 0;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  *listen_comm = l;
  return ncclSuccess;
}

static ib_listen* listen_check(void* comm, const char* fn) {
  ib_listen* l = comm;
  if (l == NULL || l->magic != IB_LISTEN_MAGIC) {
    IB_WARN("NET/IB: %s: invalid listen comm %p", fn, comm);
    return NULL;
  }
  return l;
}

static void drop_candidate(ib_listen* l, int i) {
  close(l->cand[i].fd);
  l->cand[i] = l->cand[--l->ncand];
}

/* Take waiting connections and read their info; returns the index of a candidate whose info
 * checks out (removed from the list, its fd moved to l->sfd), or -1. */
static int next_candidate(ib_listen* l) {
  while (l->ncand < IB_ACCEPT_CANDIDATES) {
    int fd = -1;
    if (socket_accept(l->fd, 0, &fd) != ncclSuccess || fd < 0) break;
    l->cand[l->ncand].fd = fd;
    l->cand[l->ncand].got = 0;
    l->ncand++;
  }
  for (int i = 0; i < l->ncand;) {
    ib_candidate* c = &l->cand[i];
    if (socket_progress(c->fd, 0, &c->info, sizeof c->info, &c->got) != ncclSuccess) {
      drop_candidate(l, i); /* closed before saying anything useful */
      continue;
    }
    if (c->got < sizeof c->info) {
      i++;
      continue;
    }
    if (c->info.magic != IB_INFO_MAGIC || c->info.secret != l->secret ||
        c->info.version != IB_PROTO_VERSION || c->info.nqps < 1 || c->info.nqps > IB_MAX_QPS) {
      IB_INFO(NCCL_NET, "NET/IB: accept: dropped a connection that is not a peer of this listen "
              "comm (magic, secret or version wrong)");
      drop_candidate(l, i);
      continue;
    }
    l->sfd = c->fd;
    l->peer_info = c->info;
    l->cand[i] = l->cand[--l->ncand];
    return 1;
  }
  return 0;
}

static void peer_name(int fd, char* buf, size_t len) {
  weft_sockaddr a;
  socklen_t al = sizeof a;
  if (getpeername(fd, &a.sa, &al) == 0)
    socket_addr_str(&a, buf, len);
  else
    snprintf(buf, len, "?");
}

static void accept_reset(ib_listen* l) {
  if (l->sfd >= 0) close(l->sfd);
  l->sfd = -1;
  net_ib_comm_destroy(l->comm);
  l->comm = NULL;
  l->phase = ACC_NONE;
}

ncclResult_t net_ib_accept(void* listen_comm, void** recv_comm,
                           ncclNetDeviceHandle_v11_t** dev_comm) {
  ib_listen* l = listen_check(listen_comm, "accept");
  if (l == NULL || recv_comm == NULL) return ncclInternalError;
  if (dev_comm) *dev_comm = NULL;
  *recv_comm = NULL;
  if (l->phase == ACC_NONE) {
    if (!next_candidate(l)) return ncclSuccess;
    peer_name(l->sfd, l->peer, sizeof l->peer);
    ncclResult_t res = net_ib_comm_create(IB_RECV, l->dev, (int)l->peer_info.nqps, &l->comm);
    if (res == ncclSuccess) {
      snprintf(l->comm->peer, sizeof l->comm->peer, "%s", l->peer);
      res = net_ib_comm_connect_qps(l->comm, &l->peer_info, l->peer_info.traffic_class);
    }
    if (res == ncclSuccess) {
      net_ib_comm_info(l->comm, &l->reply);
    } else {
      /* Tell the sender, so it fails too instead of waiting; then fail this accept. */
      memset(&l->reply, 0, sizeof l->reply);
      l->reply.magic = IB_INFO_MAGIC;
      l->reply.version = IB_PROTO_VERSION;
      l->reply.status = res;
      size_t done = 0;
      socket_progress(l->sfd, 1, &l->reply, sizeof l->reply, &done);
      IB_WARN("NET/IB: accept from %s: setting up the connection failed", l->peer);
      accept_reset(l);
      return res;
    }
    l->reply.secret = l->secret;
    l->reply.traffic_class = l->peer_info.traffic_class;
    l->done = 0;
    l->phase = ACC_REPLY;
  }
  if (l->phase == ACC_REPLY) {
    if (socket_progress(l->sfd, 1, &l->reply, sizeof l->reply, &l->done) != ncclSuccess) {
      IB_WARN("NET/IB: accept: peer %s went away during setup", l->peer);
      accept_reset(l);
      return ncclRemoteError;
    }
    if (l->done < sizeof l->reply) return ncclSuccess;
    l->done = 0;
    l->phase = ACC_READY;
  }
  if (socket_progress(l->sfd, 0, &l->ready, 1, &l->done) != ncclSuccess) {
    IB_WARN("NET/IB: accept: peer %s went away before its QPs were ready", l->peer);
    accept_reset(l);
    return ncclRemoteError;
  }
  if (l->done < 1) return ncclSuccess;
  ib_comm* c = l->comm;
  c->fd = l->sfd;
  c->prof = l->prof;
  l->sfd = -1;
  l->comm = NULL;
  l->phase = ACC_NONE;
  IB_INFO(NCCL_NET, "NET/IB: %s:%d: accepted %s, %d QP%s", c->dev->name, c->dev->port, c->peer,
          c->nqps, c->nqps == 1 ? "" : "s");
  *recv_comm = c;
  return ncclSuccess;
}

ncclResult_t net_ib_close_listen(void* listen_comm) {
  ib_listen* l = listen_check(listen_comm, "closeListen");
  if (l == NULL) return ncclInternalError;
  while (l->ncand > 0) drop_candidate(l, 0);
  accept_reset(l);
  close(l->fd);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}

/* ---- connect ---- */

enum { CON_CONNECTING = 0, CON_SEND_INFO, CON_RECV_REPLY, CON_SEND_READY };

typedef struct ib_pending_connect {
  struct ib_pending_connect* next;
  uint64_t id;
  int dev;
  int fd;
  int phase;
  int traffic_class;
  weft_sockaddr addr;
  char peer[WEFT_SOCKADDR_STRLEN];
  ib_comm* comm;
  ib_conn_info info, reply;
  size_t done;
  char ready;
} ib_pending_connect;

static void pending_free(ib_pending_connect* p) {
  if (p->fd >= 0) close(p->fd);
  net_ib_comm_destroy(p->comm);
  free(p);
}

static void pending_remove(ib_ctx* ctx, ib_pending_connect* p) {
  pthread_mutex_lock(&ctx->head.lock);
  for (ib_pending_connect** pp = &ctx->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&ctx->head.lock);
}

void net_ib_pending_free_all(ib_ctx* ctx) {
  pthread_mutex_lock(&ctx->head.lock);
  ib_pending_connect* p = ctx->pending;
  ctx->pending = NULL;
  pthread_mutex_unlock(&ctx->head.lock);
  while (p) {
    ib_pending_connect* next = p->next;
    pending_free(p);
    p = next;
  }
}

/* One step of the sender's setup. *finished = 1 when the comm is ready (p->comm). */
static ncclResult_t connect_step(ib_pending_connect* p, int* finished) {
  *finished = 0;
  if (p->phase == CON_CONNECTING) {
    int done = 0;
    ncclResult_t r = socket_connect_poll(p->fd, &done);
    if (r != ncclSuccess) {
      IB_WARN("NET/IB: connect to %s failed (refused or unreachable)", p->peer);
      return ncclRemoteError;
    }
    if (!done) return ncclSuccess;
    r = net_ib_comm_create(IB_SEND, p->dev, net_ib_qps_per_conn(), &p->comm);
    if (r != ncclSuccess) return r;
    snprintf(p->comm->peer, sizeof p->comm->peer, "%s", p->peer);
    net_ib_comm_info(p->comm, &p->info);
    p->info.secret = 0; /* set by the caller from the handle */
    p->phase = CON_SEND_INFO;
    p->done = 0;
    return ncclSuccess;
  }
  if (p->phase == CON_SEND_INFO) {
    if (socket_progress(p->fd, 1, &p->info, sizeof p->info, &p->done) != ncclSuccess) {
      IB_WARN("NET/IB: connect: %s closed the connection during setup", p->peer);
      return ncclRemoteError;
    }
    if (p->done < sizeof p->info) return ncclSuccess;
    p->phase = CON_RECV_REPLY;
    p->done = 0;
  }
  if (p->phase == CON_RECV_REPLY) {
    if (socket_progress(p->fd, 0, &p->reply, sizeof p->reply, &p->done) != ncclSuccess) {
      IB_WARN("NET/IB: connect: %s closed the connection during setup (wrong handle, or its "
              "accept failed)", p->peer);
      return ncclRemoteError;
    }
    if (p->done < sizeof p->reply) return ncclSuccess;
    if (p->reply.magic != IB_INFO_MAGIC || p->reply.version != IB_PROTO_VERSION) {
      IB_WARN("NET/IB: connect: %s answered with something that is not net-ib setup data", p->peer);
      return ncclRemoteError;
    }
    if (p->reply.status == ncclSuccess && p->reply.secret != p->info.secret) {
      IB_WARN("NET/IB: connect: %s answered for another listen comm (secret differs)", p->peer);
      return ncclRemoteError;
    }
    if (p->reply.status != ncclSuccess) {
      IB_WARN("NET/IB: connect: %s could not set up its side of the connection (error %d)",
              p->peer, p->reply.status);
      return ncclRemoteError;
    }
    ncclResult_t r = net_ib_comm_connect_qps(p->comm, &p->reply, p->traffic_class);
    if (r != ncclSuccess) return r;
    p->phase = CON_SEND_READY;
    p->done = 0;
    p->ready = 1;
  }
  if (socket_progress(p->fd, 1, &p->ready, 1, &p->done) != ncclSuccess) {
    IB_WARN("NET/IB: connect: %s closed the connection during setup", p->peer);
    return ncclRemoteError;
  }
  if (p->done < 1) return ncclSuccess;
  *finished = 1;
  return ncclSuccess;
}

ncclResult_t net_ib_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class) {
  ib_ctx* c = net_ib_ctx_check(ctx, "connect");
  if (c == NULL) return ncclInternalError;
  if (handle == NULL || send_comm == NULL) {
    IB_WARN("NET/IB: connect: handle or send_comm is NULL");
    return ncclInternalError;
  }
  if (dev_comm) *dev_comm = NULL;
  *send_comm = NULL;
  if (net_ib_dev_get(dev) == NULL) return ncclInternalError;
  ib_handle* h = handle;
  if (h->magic != IB_HANDLE_MAGIC || h->version != IB_PROTO_VERSION) {
    IB_WARN("NET/IB: connect: the handle is not a net-ib handle of this version (magic %#llx)",
            (unsigned long long)h->magic);
    return ncclInternalError;
  }
  ib_pending_connect* p = NULL;
  if (h->stage != 0) {
    pthread_mutex_lock(&c->head.lock);
    for (p = c->pending; p && p->id != h->stage; p = p->next) {
    }
    pthread_mutex_unlock(&c->head.lock);
    if (p == NULL) {
      IB_WARN("NET/IB: connect: the handle names a connect this context does not know");
      return ncclInternalError;
    }
  } else {
    p = calloc(1, sizeof *p);
    if (p == NULL) {
      IB_WARN("NET/IB: out of memory allocating a connect");
      return ncclSystemError;
    }
    p->fd = -1;
    p->dev = dev;
    p->addr = h->addr;
    p->traffic_class = traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF ? traffic_class
                       : c->head.traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF
                           ? c->head.traffic_class
                           : (int)param_int(WEFT_PARAM_IB_TC);
    socket_addr_str(&p->addr, p->peer, sizeof p->peer);
    ncclResult_t r = socket_connect_start(&p->addr, &p->fd);
    if (r != ncclSuccess) {
      IB_WARN("NET/IB: connect to %s failed", p->peer);
      free(p);
      return r == ncclRemoteError ? ncclRemoteError : ncclSystemError;
    }
    do {
      p->id = weft_net_random64();
    } while (p->id == 0);
    pthread_mutex_lock(&c->head.lock);
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->head.lock);
    h->stage = p->id;
  }
  int finished = 0;
  int phase_before = p->phase;
  ncclResult_t res = connect_step(p, &finished);
  if (res == ncclSuccess && phase_before == CON_CONNECTING && p->phase == CON_SEND_INFO) {
    p->info.secret = h->secret;
    p->info.traffic_class = p->traffic_class;
    res = connect_step(p, &finished);
  }
  if (res != ncclSuccess) {
    pending_remove(c, p);
    pending_free(p);
    h->stage = 0;
    return res;
  }
  if (!finished) return ncclSuccess;
  pending_remove(c, p);
  ib_comm* comm = p->comm;
  comm->fd = p->fd;
  comm->prof = c->head.prof;
  p->fd = -1;
  p->comm = NULL;
  free(p);
  h->stage = 0;
  IB_INFO(NCCL_NET, "NET/IB: %s:%d: connected to %s, %d QP%s", comm->dev->name, comm->dev->port,
          comm->peer, comm->nqps, comm->nqps == 1 ? "" : "s");
  *send_comm = comm;
  return ncclSuccess;
}

ncclResult_t net_ib_connect(void* ctx, int dev, void* handle, void** send_comm,
                            ncclNetDeviceHandle_v11_t** dev_comm) {
  return net_ib_connect_tc(ctx, dev, handle, send_comm, dev_comm, NCCL_NET_TRAFFIC_CLASS_UNDEF);
}
