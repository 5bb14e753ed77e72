/* Connection setup: listen, connect, accept. None of them blocks.
 *
 * listen binds the device's address, picks the socket/thread counts (NCCL_SOCKET_NTHREADS ×
 * NCCL_NSOCKS_PERTHREAD) and a random 64-bit secret, and writes them into the handle.
 * connect opens 1 + nsocks sockets to the handle's address and sends each a hello carrying the
 * secret and a random connection id; it returns ncclSuccess with a NULL comm until every hello
 * is out. Its unfinished state lives in the context, under an id it writes into the handle.
 * accept collects incoming sockets, reads their hellos, drops any whose magic, secret, version or
 * shape is wrong (stray or stale connections), and returns a comm once one connection id has its
 * control socket and all its data sockets; NULL until then. */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_socket_internal.h"
#include "util/clock.h"
#include "util/param.h"

#define NS_LISTEN_MAGIC 0x6e735f6c73746e31ull
#define NS_MAX_PENDING 1024         /* sockets accepted but not yet part of a comm */
#define NS_REFUSED_TIMEOUT_MS 10000 /* nobody listens at the handle's address */
#define NS_RETRY_MS 10

typedef struct {
  int fd;
  unsigned char buf[NS_HELLO_BYTES];
  size_t got;
  uint64_t since_ms;
  int valid;
  uint64_t conn_id;
  int index;
} ns_incoming;

typedef struct {
  uint64_t magic;
  int fd;
  int dev;
  uint64_t secret;
  int nsocks;
  int nthreads;
  ncclProfilerCallback_t prof; /* the context's profFn, for the comms accept makes */
  char addr[WEFT_SOCKADDR_STRLEN];
  ns_incoming* in;
  int nin, cap;
} ns_listen_comm;

struct ns_pending_connect {
  struct ns_pending_connect* next;
  uint64_t id;
  int dev;
  weft_sockaddr addr;
  uint64_t secret;
  uint64_t conn_id;
  int nsocks, nthreads;
  int traffic_class;
  uint64_t start_ms, refused_since_ms, next_try_ms;
  int fd[1 + NS_MAX_SOCKS];
  int state[1 + NS_MAX_SOCKS]; /* 0 not started, 1 connecting, 2 connected */
  size_t sent[1 + NS_MAX_SOCKS];
  unsigned char hello[1 + NS_MAX_SOCKS][NS_HELLO_BYTES];
};

_Static_assert(sizeof(ns_handle) <= NCCL_NET_HANDLE_MAXSIZE, "socket handle too large");

static uint64_t timeout_ms(void) { return (uint64_t)param_int(WEFT_PARAM_INIT_TIMEOUT_MS); }

/* ---- wire encoding ---- */

static void put64(unsigned char* p, uint64_t v) {
  v = htobe64(v);
  memcpy(p, &v, 8);
}
static void put32(unsigned char* p, uint32_t v) {
  v = htobe32(v);
  memcpy(p, &v, 4);
}
static void put16(unsigned char* p, uint16_t v) {
  v = htobe16(v);
  memcpy(p, &v, 2);
}
static uint64_t get64(const unsigned char* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return be64toh(v);
}
static uint32_t get32(const unsigned char* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return be32toh(v);
}
static uint16_t get16(const unsigned char* p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return be16toh(v);
}

static void hello_encode(unsigned char* b, uint64_t secret, uint64_t conn_id, int index,
                         int nsocks) {
  put64(b, NS_HELLO_MAGIC);
  put64(b + 8, secret);
  put64(b + 16, conn_id);
  put32(b + 24, NS_PROTO_VERSION);
  put16(b + 28, (uint16_t)index);
  put16(b + 30, (uint16_t)nsocks);
}

static void hello_decode(const unsigned char* b, ns_hello* h) {
  h->magic = get64(b);
  h->secret = get64(b + 8);
  h->conn_id = get64(b + 16);
  h->version = get32(b + 24);
  h->index = get16(b + 28);
  h->nsocks = get16(b + 30);
}

/* Handle fields are stored big-endian, except addr (already in network layout). */
static void handle_write(void* handle, const ns_handle* h) {
  ns_handle w = *h;
  w.magic = htobe64(h->magic);
  w.secret = htobe64(h->secret);
  w.nsocks = htobe16(h->nsocks);
  w.nthreads = htobe16(h->nthreads);
  w.version = htobe32(h->version);
  w.stage = htobe64(h->stage);
  memcpy(handle, &w, sizeof w);
}

static void handle_read(const void* handle, ns_handle* h) {
  memcpy(h, handle, sizeof *h);
  h->magic = be64toh(h->magic);
  h->secret = be64toh(h->secret);
  h->nsocks = be16toh(h->nsocks);
  h->nthreads = be16toh(h->nthreads);
  h->version = be32toh(h->version);
  h->stage = be64toh(h->stage);
}

/* NCCL_SOCKET_NTHREADS × NCCL_NSOCKS_PERTHREAD, capped at 16 threads and 64 sockets. Either set
 * to 0 means no data sockets: everything travels on the control socket. */
static void pick_counts(int* nsocks, int* nthreads) {
  int64_t nt = param_int(WEFT_PARAM_SOCKET_NTHREADS);
  int64_t ns = param_int(WEFT_PARAM_NSOCKS_PERTHREAD);
  if (nt < 0 && ns < 0) {
    nt = NS_DEFAULT_NTHREADS;
    ns = NS_DEFAULT_NSOCKS_PERTHREAD;
  } else if (nt < 0) {
    nt = NS_DEFAULT_NTHREADS;
  } else if (ns < 0) {
    ns = 1;
  }
  if (nt > NS_MAX_THREADS) nt = NS_MAX_THREADS;
  if (ns > NS_MAX_SOCKS) ns = NS_MAX_SOCKS;
  if (nt * ns > NS_MAX_SOCKS) ns = NS_MAX_SOCKS / nt;
  if (nt == 0 || ns == 0) nt = ns = 0;
  *nthreads = (int)nt;
  *nsocks = (int)(nt * ns);
}

/* ---- listen ---- */

ncclResult_t net_socket_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  ns_ctx* x = net_socket_ctx_check(ctx, "listen");
  if (x == NULL) return ncclInternalError;
  const ns_dev* d = net_socket_dev_get(dev);
  if (d == NULL) return ncclInternalError;
  if (handle == NULL || listen_comm == NULL) {
    NS_WARN("NET/Socket: listen: %s is NULL", handle == NULL ? "handle" : "listenComm");
    return ncclInternalError;
  }
  weft_sockaddr addr = d->addr, bound;
  socket_addr_set_port(&addr, 0);
  int fd = -1;
  ncclResult_t res = socket_listen(&addr, &fd, &bound);
  if (res != ncclSuccess) return res;
  res = socket_set_nonblocking(fd, 1);
  if (res != ncclSuccess) {
    close(fd);
    return res;
  }
  ns_listen_comm* lc = calloc(1, sizeof *lc);
  if (lc == NULL) {
    close(fd);
    NS_WARN("NET/Socket: listen: out of memory");
    return ncclSystemError;
  }
  lc->magic = NS_LISTEN_MAGIC;
  lc->fd = fd;
  lc->dev = dev;
  lc->prof = x->head.prof;
  lc->secret = weft_net_random64();
  pick_counts(&lc->nsocks, &lc->nthreads);
  socket_addr_str(&bound, lc->addr, sizeof lc->addr);

  ns_handle h;
  memset(&h, 0, sizeof h);
  h.magic = NS_HANDLE_MAGIC;
  h.secret = lc->secret;
  h.addr = bound;
  h.nsocks = (uint16_t)lc->nsocks;
  h.nthreads = (uint16_t)lc->nthreads;
  h.version = NS_PROTO_VERSION;
  h.stage = 0;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE); /* the whole handle travels: no stale bytes */
  handle_write(handle, &h);
  *listen_comm = lc;
  NS_INFO(NCCL_NET, "NET/Socket: listening on %s (dev %d %s), %d data sockets, %d threads",
          lc->addr, dev, d->name, lc->nsocks, lc->nthreads);
  return ncclSuccess;
}

/* ---- connect ---- */

static void pending_close(struct ns_pending_connect* p) {
  for (int i = 0; i <= p->nsocks; i++)
    socket_close(p->fd[i]); /* -1 ignored */
  free(p);
}

static void set_traffic_class(int fd, int family, int tc) {
  if (tc < 0 || tc > 255) return;
  if (family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof tc);
  else
    setsockopt(fd, IPPROTO_IP, IP_TOS, &tc, sizeof tc);
}

/* Refused: nobody listens (yet, or any more). Retried for a while, then an error. */
static ncclResult_t note_refused(struct ns_pending_connect* p, uint64_t now) {
  if (p->refused_since_ms == 0) p->refused_since_ms = now;
  if (now - p->refused_since_ms > NS_REFUSED_TIMEOUT_MS) {
    char a[WEFT_SOCKADDR_STRLEN];
    NS_WARN("NET/Socket: connect to %s refused for %d ms: is the listening side gone?",
            socket_addr_str(&p->addr, a, sizeof a), NS_REFUSED_TIMEOUT_MS);
    return ncclRemoteError;
  }
  p->next_try_ms = now + NS_RETRY_MS;
  return ncclSuccess;
}

/* One non-blocking step of every socket of p. *done once all hellos are out. */
static ncclResult_t pending_progress(struct ns_pending_connect* p, int* done) {
  char a[WEFT_SOCKADDR_STRLEN];
  uint64_t now = clock_ms();
  int all = 1;
  for (int i = 0; i <= p->nsocks; i++) {
    if (p->state[i] == 0) {
      all = 0;
      if (now < p->next_try_ms) continue;
      ncclResult_t r = socket_connect_start(&p->addr, &p->fd[i]);
      if (r == ncclRemoteError) {
        p->fd[i] = -1;
        if ((r = note_refused(p, now)) != ncclSuccess) return r;
        continue;
      }
      if (r != ncclSuccess) {
        p->fd[i] = -1;
        return r;
      }
      set_traffic_class(p->fd[i], p->addr.sa.sa_family, p->traffic_class);
      p->state[i] = 1;
    }
    if (p->state[i] == 1) {
      int ok = 0;
      ncclResult_t r = socket_connect_poll(p->fd[i], &ok);
      if (r == ncclRemoteError) {
        close(p->fd[i]);
        p->fd[i] = -1;
        p->state[i] = 0;
        all = 0;
        if ((r = note_refused(p, now)) != ncclSuccess) return r;
        continue;
      }
      if (r != ncclSuccess) {
        NS_WARN("NET/Socket: connect to %s failed: %s", socket_addr_str(&p->addr, a, sizeof a),
                strerror(errno));
        return ncclSystemError;
      }
      if (!ok) {
        all = 0;
        continue;
      }
      p->state[i] = 2;
      hello_encode(p->hello[i], p->secret, p->conn_id, i, p->nsocks);
    }
    if (p->sent[i] < NS_HELLO_BYTES) {
      if (socket_progress(p->fd[i], 1, p->hello[i], NS_HELLO_BYTES, &p->sent[i]) != ncclSuccess) {
        NS_WARN("NET/Socket: connection to %s closed during the handshake (socket %d): %s",
                socket_addr_str(&p->addr, a, sizeof a), i, strerror(errno));
        return ncclRemoteError;
      }
      if (p->sent[i] < NS_HELLO_BYTES) all = 0;
    }
  }
  if (!all && now - p->start_ms > timeout_ms()) {
    NS_WARN("NET/Socket: connect to %s not finished after %llu ms (WEFT_INIT_TIMEOUT_MS)",
            socket_addr_str(&p->addr, a, sizeof a), (unsigned long long)timeout_ms());
    return ncclRemoteError;
  }
  *done = all;
  return ncclSuccess;
}

static void pending_unlink(ns_ctx* c, struct ns_pending_connect* p) {
  for (struct ns_pending_connect** pp = &c->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      return;
    }
}

ncclResult_t net_socket_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                                   ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class) {
  ns_ctx* c = net_socket_ctx_check(ctx, "connect");
  if (c == NULL) return ncclInternalError;
  if (net_socket_dev_get(dev) == NULL) return ncclInternalError;
  if (handle == NULL || send_comm == NULL) {
    NS_WARN("NET/Socket: connect: %s is NULL", handle == NULL ? "handle" : "sendComm");
    return ncclInternalError;
  }
  *send_comm = NULL;
  ns_handle h;
  handle_read(handle, &h);
  int fam = h.addr.sa.sa_family;
  if (h.magic != NS_HANDLE_MAGIC || h.version != NS_PROTO_VERSION ||
      (fam != AF_INET && fam != AF_INET6) || h.nsocks > NS_MAX_SOCKS ||
      h.nthreads > NS_MAX_THREADS || (h.nsocks == 0) != (h.nthreads == 0) ||
      h.nthreads > h.nsocks) {
    NS_WARN(
        "NET/Socket: connect: not a valid socket plugin handle (magic %llx, version %u, "
        "family %d, %u sockets, %u threads)",
        (unsigned long long)h.magic, h.version, fam, h.nsocks, h.nthreads);
    return ncclInternalError;
  }

  pthread_mutex_lock(&c->head.lock);
  struct ns_pending_connect* p = NULL;
  if (h.stage != 0)
    for (p = c->pending; p && p->id != h.stage; p = p->next) {
    }
  if (p == NULL) {
    p = calloc(1, sizeof *p);
    if (p == NULL) {
      pthread_mutex_unlock(&c->head.lock);
      NS_WARN("NET/Socket: connect: out of memory");
      return ncclSystemError;
    }
    p->id = weft_net_random64();
    p->dev = dev;
    p->addr = h.addr;
    p->secret = h.secret;
    p->conn_id = weft_net_random64();
    p->nsocks = h.nsocks;
    p->nthreads = h.nthreads;
    p->traffic_class = traffic_class;
    p->start_ms = clock_ms();
    for (int i = 0; i <= p->nsocks; i++) p->fd[i] = -1;
    p->next = c->pending;
    c->pending = p;
    h.stage = p->id;
    handle_write(handle, &h);
  }
  int done = 0;
  ncclResult_t res = pending_progress(p, &done);
  if (res != ncclSuccess || done) pending_unlink(c, p);
  pthread_mutex_unlock(&c->head.lock);
  if (res != ncclSuccess || done) {
    h.stage = 0; /* the handle may start another connect */
    handle_write(handle, &h);
  }
  if (res != ncclSuccess) {
    pending_close(p);
    return res;
  }
  if (!done) return ncclSuccess;

  char peer[WEFT_SOCKADDR_STRLEN];
  socket_addr_str(&p->addr, peer, sizeof peer);
  ns_comm* comm = NULL;
  res = net_socket_comm_create(NS_SEND, dev, p->fd[0], p->fd + 1, p->nsocks, p->nthreads, peer,
                               c->head.prof, &comm);
  free(p); /* its fds now belong to the comm (closed by net_socket_comm_create on failure) */
  if (res != ncclSuccess) return res;
  if (dev_comm) *dev_comm = NULL;
  *send_comm = comm;
  return ncclSuccess;
}

ncclResult_t net_socket_connect(void* ctx, int dev, void* handle, void** send_comm,
                                ncclNetDeviceHandle_v11_t** dev_comm) {
  ns_ctx* c = net_socket_ctx_check(ctx, "connect");
  if (c == NULL) return ncclInternalError;
  return net_socket_connect_tc(ctx, dev, handle, send_comm, dev_comm, c->head.traffic_class);
}

void net_socket_pending_free_all(ns_ctx* c) {
  pthread_mutex_lock(&c->head.lock);
  while (c->pending) {
    struct ns_pending_connect* p = c->pending;
    c->pending = p->next;
    pending_close(p);
  }
  pthread_mutex_unlock(&c->head.lock);
}

/* ---- accept ---- */

static ns_listen_comm* listen_check(void* listen_comm, const char* fn) {
  ns_listen_comm* lc = listen_comm;
  if (lc == NULL || lc->magic != NS_LISTEN_MAGIC) {
    NS_WARN("NET/Socket: %s: %p is not a listen comm of this plugin", fn, listen_comm);
    return NULL;
  }
  return lc;
}

/* The accepting end is a connection's receiving end: it closes what it drops with a reset
 * (no TIME_WAIT on either end; see net_socket_comm.c). */
static void incoming_drop(ns_listen_comm* lc, int i, int close_fd) {
  if (close_fd) socket_reset(lc->in[i].fd);
  lc->in[i] = lc->in[--lc->nin];
}

/* Read what has arrived of each hello; drop closed, late, stray or malformed sockets. */
static void incoming_progress(ns_listen_comm* lc) {
  uint64_t now = clock_ms();
  for (int i = 0; i < lc->nin;) {
    ns_incoming* e = &lc->in[i];
    if (e->valid) {
      if (now - e->since_ms > timeout_ms()) {
        NS_INFO(NCCL_NET,
                "NET/Socket: %s: dropping part of connection %llx: its other "
                "sockets never came",
                lc->addr, (unsigned long long)e->conn_id);
        incoming_drop(lc, i, 1);
        continue;
      }
      i++;
      continue;
    }
    if (socket_progress(e->fd, 0, e->buf, NS_HELLO_BYTES, &e->got) != ncclSuccess) {
      NS_INFO(NCCL_NET, "NET/Socket: %s: dropping a connection closed before its hello", lc->addr);
      incoming_drop(lc, i, 1);
      continue;
    }
    if (e->got < NS_HELLO_BYTES) {
      if (now - e->since_ms > timeout_ms()) {
        NS_INFO(NCCL_NET, "NET/Socket: %s: dropping a connection that sent no hello", lc->addr);
        incoming_drop(lc, i, 1);
        continue;
      }
      i++;
      continue;
    }
    ns_hello h;
    hello_decode(e->buf, &h);
    int ok = h.magic == NS_HELLO_MAGIC && h.secret == lc->secret && h.version == NS_PROTO_VERSION &&
             h.nsocks == lc->nsocks && h.index <= lc->nsocks;
    for (int j = 0; ok && j < lc->nin; j++)
      if (lc->in[j].valid && lc->in[j].conn_id == h.conn_id && lc->in[j].index == h.index) ok = 0;
    if (!ok) {
      NS_INFO(NCCL_NET,
              "NET/Socket: %s: dropping a stray connection (magic %llx, wrong "
              "secret, version or shape)",
              lc->addr, (unsigned long long)h.magic);
      incoming_drop(lc, i, 1);
      continue;
    }
    e->valid = 1;
    e->conn_id = h.conn_id;
    e->index = h.index;
    e->since_ms = now;
    i++;
  }
}

ncclResult_t net_socket_accept(void* listen_comm, void** recv_comm,
                               ncclNetDeviceHandle_v11_t** dev_comm) {
  ns_listen_comm* lc = listen_check(listen_comm, "accept");
  if (lc == NULL) return ncclInternalError;
  if (recv_comm == NULL) {
    NS_WARN("NET/Socket: accept: recvComm is NULL");
    return ncclInternalError;
  }
  *recv_comm = NULL;
  for (;;) {
    int fd = -1;
    ncclResult_t r = socket_accept(lc->fd, 0, &fd);
    if (r != ncclSuccess) return r;
    if (fd < 0) break;
    if (lc->nin == lc->cap) {
      int cap = lc->cap ? lc->cap * 2 : 16;
      ns_incoming* in = cap <= NS_MAX_PENDING ? realloc(lc->in, (size_t)cap * sizeof *in) : NULL;
      if (in == NULL) {
        NS_INFO(NCCL_NET, "NET/Socket: %s: %d connections waiting already, dropping one", lc->addr,
                lc->nin);
        socket_reset(fd);
        continue;
      }
      lc->in = in;
      lc->cap = cap;
    }
    ns_incoming* e = &lc->in[lc->nin++];
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->since_ms = clock_ms();
  }
  incoming_progress(lc);

  /* A connection is complete when its control socket and every data socket are here. */
  for (int i = 0; i < lc->nin; i++) {
    if (!lc->in[i].valid || lc->in[i].index != 0) continue;
    uint64_t id = lc->in[i].conn_id;
    int count = 0;
    for (int j = 0; j < lc->nin; j++) count += lc->in[j].valid && lc->in[j].conn_id == id;
    if (count != lc->nsocks + 1) continue;
    int ctrl = -1, data[NS_MAX_SOCKS];
    for (int j = 0; j < lc->nin;) {
      if (lc->in[j].valid && lc->in[j].conn_id == id) {
        if (lc->in[j].index == 0)
          ctrl = lc->in[j].fd;
        else
          data[lc->in[j].index - 1] = lc->in[j].fd;
        incoming_drop(lc, j, 0);
        continue;
      }
      j++;
    }
    char peer[WEFT_SOCKADDR_STRLEN] = "?";
    weft_sockaddr pa;
    socklen_t len = sizeof pa;
    if (getpeername(ctrl, &pa.sa, &len) == 0) socket_addr_str(&pa, peer, sizeof peer);
    ns_comm* comm = NULL;
    ncclResult_t res =
        net_socket_comm_create(NS_RECV, lc->dev, ctrl, data, lc->nsocks, lc->nthreads, peer,
                               lc->prof, &comm);
    if (res != ncclSuccess) return res;
    if (dev_comm) *dev_comm = NULL;
    *recv_comm = comm;
    return ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t net_socket_close_listen(void* listen_comm) {
  ns_listen_comm* lc = listen_check(listen_comm, "closeListen");
  if (lc == NULL) return ncclInternalError;
  for (int i = 0; i < lc->nin; i++) socket_reset(lc->in[i].fd);
  free(lc->in);
  close(lc->fd);
  lc->magic = 0;
  free(lc);
  return ncclSuccess;
}
