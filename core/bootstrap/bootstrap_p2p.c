/* Tagged point-to-point messages between ranks. A rank opens one connection per peer, on the
 * first send to it, and keeps it; the peer accepts it while it waits for anything (bs_run).
 * Messages are a bs_p2p_hdr (tag, size) and the payload. A message nobody waits for yet is
 * queued (FIFO per peer and tag) up to BS_MAX_QUEUED_BYTES in all; a receive takes the first
 * queued message of its (peer, tag), and its size must be the size that was sent. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/log.h"

bs_msg* bs_msg_alloc(weft_bootstrap* b, int peer, int tag, size_t size) {
  if (size > BS_MAX_QUEUED_BYTES || b->q_bytes + size > BS_MAX_QUEUED_BYTES) {
    WARN("bootstrap rank %d/%d: message from rank %d (tag %d, %zu bytes) arrived before its "
         "receive and would take the queue past its bound (%zu of %u bytes in use)",
         b->rank, b->nranks, peer, tag, size, b->q_bytes, BS_MAX_QUEUED_BYTES);
    return NULL;
  }
  bs_msg* m = malloc(sizeof *m + size);
  if (!m) {
    WARN("bootstrap rank %d/%d: out of memory queueing %zu bytes from rank %d", b->rank,
         b->nranks, size, peer);
    return NULL;
  }
  m->next = NULL;
  m->peer = peer;
  m->tag = tag;
  m->size = size;
  b->q_bytes += size;
  return m;
}

void bs_msg_free(weft_bootstrap* b, bs_msg* m) {
  b->q_bytes -= m->size;
  free(m);
}

void bs_queue_push(weft_bootstrap* b, bs_msg* m) {
  m->next = NULL;
  if (b->q_tail)
    b->q_tail->next = m;
  else
    b->q_head = m;
  b->q_tail = m;
}

void bs_queue_free(weft_bootstrap* b) {
  while (b->q_head) {
    bs_msg* m = b->q_head;
    b->q_head = m->next;
    bs_msg_free(b, m);
  }
  b->q_tail = NULL;
}

/* Unlink and return the oldest queued message of (peer, tag), or NULL. */
static bs_msg* queue_take(weft_bootstrap* b, int peer, int tag) {
  bs_msg* prev = NULL;
  for (bs_msg* m = b->q_head; m; prev = m, m = m->next) {
    if (m->peer != peer || m->tag != tag) continue;
    if (prev)
      prev->next = m->next;
    else
      b->q_head = m->next;
    if (b->q_tail == m) b->q_tail = prev;
    m->next = NULL;
    return m;
  }
  return NULL;
}

static ncclResult_t check_peer(const weft_bootstrap* b, const char* fn, int peer,
                               const void* data, size_t size) {
  if (peer < 0 || peer >= b->nranks) {
    WARN("bootstrap rank %d/%d: %s: peer %d out of range", b->rank, b->nranks, fn, peer);
    return ncclInvalidArgument;
  }
  if (data == NULL && size > 0) {
    WARN("bootstrap rank %d/%d: %s: NULL buffer for %zu bytes", b->rank, b->nranks, fn, size);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static ncclResult_t open_send(weft_bootstrap* b, bs_peer* p, int peer, uint64_t deadline) {
  char a[WEFT_SOCKADDR_STRLEN], what[64];
  bs_hello h;
  bs_hello_init(&h, &b->id, BS_KIND_P2P, b->rank, b->nranks);
  bs_xfer x = {.kind = BS_X_CONNECT, .peer = peer, .fd = -1, .addr = &b->addrs[peer],
               .buf = &h, .len = sizeof h, .refused_fatal = 1};
  snprintf(what, sizeof what, "connect to rank %d", peer);
  ncclResult_t r = bs_run(b, &x, 1, NULL, NULL, deadline, what);
  if (r != ncclSuccess) {
    bs_close_fd(&x.fd);
    if (b->timed_out)
      WARN("bootstrap rank %d/%d: cannot connect to rank %d at %s within %d ms", b->rank,
           b->nranks, peer, socket_addr_str(&b->addrs[peer], a, sizeof a), b->timeout_ms);
    return r;
  }
  p->send_fd = x.fd;
  return ncclSuccess;
}

ncclResult_t bootstrap_send(weft_bootstrap* b, int peer, int tag, const void* data,
                            size_t size) {
  WEFT_CHECK(check_peer(b, "send", peer, data, size));
  if (bs_is_aborted(b)) return ncclRemoteError;
  if (peer == b->rank) { /* to itself: straight into the queue */
    bs_msg* m = bs_msg_alloc(b, peer, tag, size);
    if (!m) return ncclInternalError;
    if (size) memcpy(m->data, data, size);
    bs_queue_push(b, m);
    return ncclSuccess;
  }
  bs_peer* p = bs_peer_get(b, peer);
  if (!p) return ncclSystemError;
  uint64_t deadline = clock_ms() + (uint64_t)b->timeout_ms;
  if (p->send_fd < 0) WEFT_CHECK(open_send(b, p, peer, deadline));
  bs_p2p_hdr hdr = {.tag = tag, .magic = BS_P2P_MAGIC, .size = size};
  bs_xfer x[2] = {
      {.kind = BS_X_SEND, .peer = peer, .fd = p->send_fd, .buf = &hdr, .len = sizeof hdr},
      {.kind = BS_X_SEND, .peer = peer, .fd = p->send_fd, .buf = (void*)data, .len = size},
  };
  char what[96];
  snprintf(what, sizeof what, "send to rank %d (tag %d, %zu bytes)", peer, tag, size);
  ncclResult_t r = bs_run(b, x, size ? 2 : 1, NULL, NULL, deadline, what);
  if (r != ncclSuccess) {
    if (b->timed_out)
      WARN("bootstrap rank %d/%d: %s did not complete within %d ms (is rank %d receiving?)",
           b->rank, b->nranks, what, b->timeout_ms, peer);
    bs_close_fd(&p->send_fd); /* a half-sent message leaves the stream unusable */
  }
  return r;
}

/* A receive from a peer that died would wait for the whole timeout: its process closed every
 * socket (our connection to it reads EOF) and its listener refuses connections. 1 when gone. */
static int peer_gone(weft_bootstrap* b, bs_peer* p, int peer, const char** how) {
  if (p->send_fd >= 0) { /* the peer never writes on it: readable means closed or reset */
    struct pollfd q = {.fd = p->send_fd, .events = POLLIN};
    char c;
    if (poll(&q, 1, 0) != 1) return 0;
    ssize_t n = recv(p->send_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      *how = "its connection to this rank closed";
      return 1;
    }
    return 0;
  }
  uint64_t now = clock_ms();
  if (p->probe_at == 0) p->probe_at = now + BS_PROBE_MS;
  if (p->probe_fd < 0) {
    if (now < p->probe_at) return 0;
    p->probe_at = now + BS_PROBE_MS;
    errno = 0;
    ncclResult_t r = socket_connect_start(&b->addrs[peer], &p->probe_fd);
    if (r == ncclRemoteError && errno == ECONNREFUSED) {
      *how = "its listener refuses connections";
      return 1;
    }
    if (r != ncclSuccess) p->probe_fd = -1;
    return 0;
  }
  int done = 0;
  if (socket_connect_poll(p->probe_fd, &done) != ncclSuccess) {
    int err = errno;
    bs_close_fd(&p->probe_fd);
    if (err == ECONNREFUSED) {
      *how = "its listener refuses connections";
      return 1;
    }
  } else if (done) {
    bs_close_fd(&p->probe_fd); /* it listens: alive (it drops the probe as a stray client) */
  }
  return 0;
}

static int peer_alloc_ok(weft_bootstrap* b, int peer) { return bs_peer_get(b, peer) != NULL; }

int bootstrap_peer_gone(weft_bootstrap* b, int peer, const char** how) {
  if (!b || !b->addrs || peer < 0 || peer >= b->nranks || peer == b->rank || bs_is_aborted(b))
    return 0;
  bs_peer* p = bs_peer_get(b, peer);
  if (!p) return 0;
  if (p->recv_fd < 0 && p->rx_state == BS_RX_CLOSED) {
    *how = "it closed its bootstrap connection";
    return 1;
  }
  return peer_gone(b, p, peer, how);
}

static ncclResult_t recv_until(weft_bootstrap* b, void* ctx, int* ok) {
  bs_want* w = ctx;
  *ok = 0;
  if (w->done) {
    *ok = 1;
    return ncclSuccess;
  }
  bs_msg* m = queue_take(b, w->peer, w->tag);
  if (m) {
    if (m->size != w->size) {
      WARN("bootstrap rank %d/%d: recv from rank %d (tag %d): expected %zu bytes, rank %d sent "
           "%zu",
           b->rank, b->nranks, w->peer, w->tag, w->size, w->peer, m->size);
      bs_msg_free(b, m);
      return ncclInternalError;
    }
    if (m->size) memcpy(w->buf, m->data, m->size);
    bs_msg_free(b, m);
    w->done = 1;
    *ok = 1;
    return ncclSuccess;
  }
  if (w->peer == b->rank) {
    WARN("bootstrap rank %d/%d: recv from itself (tag %d): nothing was sent", b->rank, b->nranks,
         w->tag);
    return ncclInvalidUsage;
  }
  if (w->give_up) {
    ncclResult_t r = w->give_up(b, w->give_up_ctx);
    if (r != ncclSuccess) return r;
  }
  /* A peer that closed at a message boundary has closed its bootstrap: nothing more will come.
   * After a break mid-message it may still connect again (its next send does), so wait. */
  bs_peer* p = b->peers[w->peer];
  if (p && p->recv_fd < 0 && p->rx_state == BS_RX_CLOSED) {
    WARN("bootstrap rank %d/%d: recv from rank %d (tag %d, %zu bytes): rank %d closed its "
         "connection",
         b->rank, b->nranks, w->peer, w->tag, w->size, w->peer);
    return ncclRemoteError;
  }
  const char* how = NULL;
  if (b->addrs && peer_alloc_ok(b, w->peer) && peer_gone(b, b->peers[w->peer], w->peer, &how)) {
    WARN("bootstrap rank %d/%d: recv from rank %d (tag %d, %zu bytes): rank %d is gone (%s): "
         "its process has exited or closed its communicator",
         b->rank, b->nranks, w->peer, w->tag, w->size, w->peer, how);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

int bootstrap_queued_tags(const weft_bootstrap* b, int peer, int lo, int hi, int* tags, int max) {
  int n = 0;
  for (const bs_msg* m = b->q_head; m && n < max; m = m->next)
    if (m->peer == peer && m->tag >= lo && m->tag <= hi) tags[n++] = m->tag;
  return n;
}

ncclResult_t bootstrap_recv(weft_bootstrap* b, int peer, int tag, void* data, size_t size) {
  return bootstrap_recv_unless(b, peer, tag, data, size, NULL, NULL);
}

ncclResult_t bootstrap_recv_unless(weft_bootstrap* b, int peer, int tag, void* data, size_t size,
                                   bootstrap_give_up_fn give_up, void* ctx) {
  WEFT_CHECK(check_peer(b, "recv", peer, data, size));
  if (bs_is_aborted(b)) return ncclRemoteError;
  bs_want w = {.peer = peer, .tag = tag, .buf = data, .size = size, .give_up = give_up,
               .give_up_ctx = ctx};
  if (peer != b->rank && b->peers[peer]) b->peers[peer]->probe_at = 0; /* probe after a grace */
  char what[96];
  snprintf(what, sizeof what, "recv from rank %d (tag %d, %zu bytes)", peer, tag, size);
  b->want = &w;
  ncclResult_t r =
      bs_run(b, NULL, 0, recv_until, &w, clock_ms() + (uint64_t)b->timeout_ms, what);
  b->want = NULL;
  if (r == ncclSuccess) return ncclSuccess;
  /* A message half landed in the caller's buffer cannot continue elsewhere. */
  bs_peer* p = peer != b->rank ? b->peers[peer] : NULL;
  if (p && p->recv_fd >= 0 && p->hdr_done == sizeof p->hdr && p->msg == NULL && p->dst)
    bs_rx_lost(b, peer, BS_RX_BROKEN);
  if (b->timed_out)
    WARN("bootstrap rank %d/%d: %s: nothing arrived within %d ms%s", b->rank, b->nranks, what,
         b->timeout_ms,
         p && p->rx_state == BS_RX_BROKEN ? " (its connection had broken mid-message)" : "");
  return r;
}
