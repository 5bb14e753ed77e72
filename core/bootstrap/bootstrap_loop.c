/* The one place a rank waits. bs_run drives the caller's transfers (connect + hello, sends,
 * receives) and meanwhile serves everything else that may arrive: new connections on the
 * rank's listener (handshake, then dispatch: the root's verdict, the ring's previous rank, a
 * peer opening its p2p connection) and p2p messages, which land in the waiting receive or in
 * the unexpected-message queue. Every fd is non-blocking; each wait is one poll() bounded by
 * the deadline, woken by bootstrap_abort through an eventfd, and sliced so an external abort
 * flag is seen within BS_POLL_SLICE_MS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/check.h"

#define CONNECT_RETRY_MS 20

int bs_is_aborted(const weft_bootstrap* b) {
  if (__atomic_load_n(&b->aborted, __ATOMIC_ACQUIRE)) return 1;
  return b->abort_flag != NULL && __atomic_load_n(b->abort_flag, __ATOMIC_ACQUIRE) != 0;
}

void bs_close_fd(int* fd) {
  socket_close(*fd); /* a connection's (no TIME_WAIT where safe); plain fds close alike */
  *fd = -1;
}

void bs_reset_fd(int* fd) {
  socket_reset(*fd);
  *fd = -1;
}

bs_peer* bs_peer_get(weft_bootstrap* b, int peer) {
  if (b->peers[peer] == NULL) {
    bs_peer* p = calloc(1, sizeof *p);
    if (!p) {
      WARN("bootstrap rank %d/%d: out of memory for the state of peer %d", b->rank, b->nranks,
           peer);
      return NULL;
    }
    p->send_fd = p->recv_fd = p->probe_fd = -1;
    b->peers[peer] = p;
  }
  return b->peers[peer];
}

static void active_remove(weft_bootstrap* b, int peer) {
  for (int i = 0; i < b->nactive; i++)
    if (b->active[i] == peer) {
      b->active[i] = b->active[--b->nactive];
      return;
    }
}

void bs_rx_lost(weft_bootstrap* b, int peer, int state) {
  bs_peer* p = b->peers[peer];
  if (state == BS_RX_BROKEN)
    INFO(NCCL_BOOTSTRAP, "bootstrap rank %d/%d: connection from rank %d broke mid-message",
         b->rank, b->nranks, peer);
  bs_reset_fd(&p->recv_fd);
  p->rx_state = state;
  if (p->msg) bs_msg_free(b, p->msg);
  p->msg = NULL;
  p->dst = NULL;
  p->hdr_done = p->done = 0;
  active_remove(b, peer);
}

/* ---- connections arriving on the rank's listener ---- */

static void drop(weft_bootstrap* b, const weft_sockaddr* from, const char* why, int rank) {
  char a[WEFT_SOCKADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "bootstrap rank %d/%d: dropped connection from %s (says rank %d): %s",
       b->rank, b->nranks, socket_addr_str(from, a, sizeof a), rank, why);
}

/* The root's verdict follows its hello on the same connection; the root is through the
 * handshake, so a short blocking read is enough. */
static int take_verdict(weft_bootstrap* b, int fd, const bs_hello* h, const weft_sockaddr* from) {
  if (!b->in_init || b->verdict_got || h->rank != b->rank) {
    drop(b, from, "unexpected init verdict", h->rank);
    return 0;
  }
  bs_verdict v;
  if (socket_recv_all(fd, &v, sizeof v, BS_HELLO_TIMEOUT_MS) != ncclSuccess ||
      v.nranges > BS_MAX_RANGES ||
      socket_recv_all(fd, b->ranges, v.nranges * sizeof(bs_range), BS_HELLO_TIMEOUT_MS) !=
          ncclSuccess) {
    drop(b, from, "incomplete init verdict", h->rank);
    return 0;
  }
  b->verdict = v;
  b->verdict_got = 1;
  return 0;
}

static int on_hello(void* ctx, int fd, const bs_hello* h, const weft_sockaddr* from) {
  weft_bootstrap* b = ctx;
  if (h->nranks != b->nranks) {
    drop(b, from, "different nranks", h->rank);
    return 0;
  }
  switch (h->kind) {
    case BS_KIND_VERDICT:
      return take_verdict(b, fd, h, from);
    case BS_KIND_RING: {
      int prev = (b->rank + b->nranks - 1) % b->nranks;
      if (h->rank != prev || b->ring_prev_fd >= 0) {
        drop(b, from, "not the ring's previous rank", h->rank);
        return 0;
      }
      b->ring_prev_fd = fd;
      return 1;
    }
    case BS_KIND_P2P: {
      if (h->rank == b->rank) {
        drop(b, from, "claims this rank", h->rank);
        return 0;
      }
      bs_peer* p = bs_peer_get(b, h->rank);
      if (!p) return 0;
      if (p->recv_fd >= 0) {
        drop(b, from, "that rank is already connected", h->rank);
        return 0;
      }
      if (b->nactive == b->cap_active) {
        int cap = b->cap_active ? 2 * b->cap_active : 8;
        int* a = realloc(b->active, (size_t)cap * sizeof *a);
        if (!a) {
          drop(b, from, "out of memory", h->rank);
          return 0;
        }
        b->active = a;
        b->cap_active = cap;
      }
      b->active[b->nactive++] = h->rank;
      p->recv_fd = fd;
      p->rx_state = BS_RX_OPEN;
      p->hdr_done = p->done = 0;
      return 1;
    }
    default:
      drop(b, from, "a check-in sent to a rank", h->rank);
      return 0;
  }
}

/* ---- incoming p2p messages ---- */

/* Read what has arrived from one peer. A complete message goes to the waiting receive when it
 * matches it exactly (peer, tag and size), else to the queue. */
static ncclResult_t rx_progress(weft_bootstrap* b, int peer) {
  bs_peer* p = b->peers[peer];
  for (;;) {
    if (p->hdr_done < sizeof p->hdr) {
      if (socket_progress(p->recv_fd, 0, &p->hdr, sizeof p->hdr, &p->hdr_done) != ncclSuccess) {
        bs_rx_lost(b, peer, p->hdr_done == 0 ? BS_RX_CLOSED : BS_RX_BROKEN);
        return ncclSuccess;
      }
      if (p->hdr_done < sizeof p->hdr) return ncclSuccess;
      if (p->hdr.magic != BS_P2P_MAGIC) {
        bs_rx_lost(b, peer, BS_RX_BROKEN);
        return ncclSuccess;
      }
      bs_want* w = b->want;
      p->done = 0;
      if (w && !w->done && w->peer == peer && w->tag == p->hdr.tag && w->size == p->hdr.size) {
        p->msg = NULL;
        p->dst = w->buf;
      } else {
        if (p->hdr.size > BS_MAX_QUEUED_BYTES) {
          WARN("bootstrap rank %d/%d: message from rank %d (tag %d) of %llu bytes arrived "
               "before its receive and exceeds the %u-byte queue bound",
               b->rank, b->nranks, peer, p->hdr.tag, (unsigned long long)p->hdr.size,
               BS_MAX_QUEUED_BYTES);
          bs_rx_lost(b, peer, BS_RX_BROKEN);
          return ncclInternalError;
        }
        p->msg = bs_msg_alloc(b, peer, p->hdr.tag, (size_t)p->hdr.size);
        if (!p->msg) {
          bs_rx_lost(b, peer, BS_RX_BROKEN);
          return ncclInternalError;
        }
        p->dst = p->msg->data;
      }
    }
    if (p->done < p->hdr.size) {
      if (socket_progress(p->recv_fd, 0, p->dst, (size_t)p->hdr.size, &p->done) != ncclSuccess) {
        bs_rx_lost(b, peer, BS_RX_BROKEN);
        return ncclSuccess;
      }
      if (p->done < p->hdr.size) return ncclSuccess;
    }
    if (p->msg)
      bs_queue_push(b, p->msg);
    else
      b->want->done = 1;
    p->msg = NULL;
    p->dst = NULL;
    p->hdr_done = p->done = 0;
  }
}

/* ---- the caller's transfers ---- */

static const char* peer_name(int peer, char* buf, size_t len) {
  if (peer < 0)
    snprintf(buf, len, "the root");
  else
    snprintf(buf, len, "rank %d", peer);
  return buf;
}

static ncclResult_t xfer_lost(weft_bootstrap* b, const bs_xfer* x, const char* what, int err) {
  char who[32];
  WARN("bootstrap rank %d/%d: %s: connection to %s %s (%s)", b->rank, b->nranks, what,
       peer_name(x->peer, who, sizeof who), x->kind == BS_X_RECV ? "closed" : "failed",
       err ? strerror(err) : "closed by the peer");
  return ncclRemoteError;
}

/* The listener existed (its address came from the rank itself): refusing now means its process
 * exited or closed its communicator; retrying would only wait for the timeout. */
static ncclResult_t connect_refused(weft_bootstrap* b, const bs_xfer* x, const char* what) {
  char who[32], a[WEFT_SOCKADDR_STRLEN];
  WARN("bootstrap rank %d/%d: %s: %s refused the connection at %s: its process has exited or "
       "closed its communicator",
       b->rank, b->nranks, what, peer_name(x->peer, who, sizeof who),
       socket_addr_str(x->addr, a, sizeof a));
  return ncclRemoteError;
}

/* A failed connect (err) that is not worth retrying any more (bs_xfer's give_up_at): logged. */
static int connect_gives_up(weft_bootstrap* b, const bs_xfer* x, int err, uint64_t now,
                            const char* what) {
  if (!x->give_up_at || now < x->give_up_at) return 0;
  int refused = err == ECONNREFUSED && !x->refused_waits;
  int unroutable = err == EHOSTUNREACH || err == ENETUNREACH;
  if (!refused && !unroutable) return 0;
  char who[32], a[WEFT_SOCKADDR_STRLEN];
  WARN("bootstrap rank %d/%d: %s: %s at %s: %s, still after %llu ms of retries (%s)", b->rank,
       b->nranks, what, peer_name(x->peer, who, sizeof who),
       socket_addr_str(x->addr, a, sizeof a), strerror(err),
       (unsigned long long)(now - (x->give_up_at - BS_GIVE_UP_MS)),
       refused ? "nothing listens there: the process that made the unique id has exited or "
                 "the id is stale"
               : "no route to that address: is it this job's, and is the network up?");
  return 1;
}

static ncclResult_t xfer_step(weft_bootstrap* b, bs_xfer* x, uint64_t now, const char* what) {
  if (x->kind == BS_X_CONNECT && x->state < 2) {
    if (x->state == 0) {
      if (now < x->retry_at) return ncclSuccess;
      ncclResult_t r = socket_connect_start(x->addr, &x->fd);
      if (r == ncclRemoteError && x->refused_fatal && errno == ECONNREFUSED)
        return connect_refused(b, x, what);
      if (r == ncclRemoteError && connect_gives_up(b, x, errno, now, what)) return r;
      if (r == ncclRemoteError) { /* refused at once: the listener is not up yet */
        x->retry_at = now + CONNECT_RETRY_MS;
        return ncclSuccess;
      }
      WEFT_CHECK(r);
      x->state = 1;
    }
    int done = 0;
    if (socket_connect_poll(x->fd, &done) != ncclSuccess) {
      int err = errno;
      bs_close_fd(&x->fd);
      if (x->refused_fatal && err == ECONNREFUSED) return connect_refused(b, x, what);
      if (connect_gives_up(b, x, err, now, what)) return ncclRemoteError;
      x->state = 0;
      x->retry_at = now + CONNECT_RETRY_MS;
      return ncclSuccess;
    }
    if (!done) return ncclSuccess;
    if (x->hello_deadline) { /* tell the root how long this rank still waits, as of now */
      bs_hello* h = x->buf;
      h->timeout_ms = x->hello_deadline > now ? (int32_t)(x->hello_deadline - now) : 0;
    }
    x->state = 2;
    x->done = 0;
  }
  errno = 0;
  int send = x->kind != BS_X_RECV;
  if (socket_progress(x->fd, send, x->buf, x->len, &x->done) != ncclSuccess)
    return xfer_lost(b, x, what, errno);
  if (x->done < x->len) return ncclSuccess;
  x->complete = 1;
  if (x->expect) {
    const bs_coll_hdr* got = x->buf;
    if (got->op != x->expect->op || got->seq != x->expect->seq ||
        got->size != x->expect->size) {
      const char* gop = got->op == BS_OP_ALLGATHER ? "allgather"
                        : got->op == BS_OP_BARRIER ? "barrier"
                                                   : "?";
      const char* wop = x->expect->op == BS_OP_ALLGATHER ? "allgather" : "barrier";
      WARN("bootstrap rank %d/%d: %s: rank %d is in %s #%u with %llu bytes per rank, this rank "
           "in %s #%u with %llu",
           b->rank, b->nranks, what, x->peer, gop, got->seq, (unsigned long long)got->size, wop,
           x->expect->seq, (unsigned long long)x->expect->size);
      return ncclInternalError;
    }
  }
  return ncclSuccess;
}

/* Xfers on one fd run in array order: x[i] may move only when no earlier one on its fd is
 * still incomplete. */
static int xfer_blocked(const bs_xfer* x, int i) {
  for (int j = 0; j < i; j++)
    if (!x[j].complete && x[j].fd >= 0 && x[j].fd == x[i].fd) return 1;
  return 0;
}

static ncclResult_t pfd_reserve(weft_bootstrap* b, int n) {
  if (n <= b->pfd_cap) return ncclSuccess;
  int cap = n + 16;
  struct pollfd* p = realloc(b->pfd, (size_t)cap * sizeof *p);
  if (!p) {
    WARN("bootstrap rank %d/%d: out of memory for a poll set of %d", b->rank, b->nranks, n);
    return ncclSystemError;
  }
  b->pfd = p;
  b->pfd_cap = cap;
  return ncclSuccess;
}

static void pfd_set(struct pollfd* p, int fd, short events) {
  p->fd = fd;
  p->events = events;
  p->revents = 0;
}

ncclResult_t bs_run(weft_bootstrap* b, bs_xfer* x, int nx, bs_until_fn until, void* ctx,
                    uint64_t deadline, const char* what) {
  ncclResult_t r;
  b->timed_out = 0;
  for (;;) {
    uint64_t now = clock_ms();
    for (int i = 0; i < nx; i++)
      if (!x[i].complete && !xfer_blocked(x, i)) {
        if ((r = xfer_step(b, &x[i], now, what)) != ncclSuccess) return r;
      }
    int all = 1;
    for (int i = 0; i < nx; i++) all &= x[i].complete;
    if (all) {
      int ok = 1;
      if (until && (r = until(b, ctx, &ok)) != ncclSuccess) return r;
      if (ok) return ncclSuccess;
    }
    if (bs_is_aborted(b)) {
      INFO(NCCL_BOOTSTRAP, "bootstrap rank %d/%d: %s: aborted", b->rank, b->nranks, what);
      return ncclRemoteError;
    }
    now = clock_ms();
    if (now >= deadline) {
      b->timed_out = 1;
      return ncclRemoteError;
    }

    /* The poll set: wake, listener, pending handshakes, p2p peers, the caller's transfers. */
    int npend = b->pending.n;
    if ((r = pfd_reserve(b, 2 + npend + b->nactive + nx)) != ncclSuccess) return r;
    struct pollfd* pfd = b->pfd;
    pfd_set(&pfd[0], b->wake_fd, POLLIN);
    pfd_set(&pfd[1], b->listen_fd, POLLIN);
    bs_pending_pollfds(&b->pending, pfd + 2);
    int base_active = 2 + npend;
    for (int i = 0; i < b->nactive; i++)
      pfd_set(&pfd[base_active + i], b->peers[b->active[i]]->recv_fd, POLLIN);
    int n = base_active + b->nactive;
    uint64_t wake = deadline;
    uint64_t pd = bs_pending_next_deadline(&b->pending);
    if (pd < wake) wake = pd;
    for (int i = 0; i < nx; i++) {
      if (x[i].complete || xfer_blocked(x, i)) continue;
      if (x[i].kind == BS_X_CONNECT && x[i].state == 0) {
        if (x[i].retry_at < wake) wake = x[i].retry_at;
        continue;
      }
      short ev = (x[i].kind == BS_X_RECV) ? POLLIN : POLLOUT;
      pfd_set(&pfd[n++], x[i].fd, ev);
    }
    /* A receive also checks that its peer still exists (bootstrap_p2p.c) between waits. */
    int slice = until ? BS_PROBE_MS : 1000;
    int ms = wake <= now ? 0 : (wake - now > (uint64_t)slice ? slice : (int)(wake - now));
    if (b->abort_flag && ms > BS_POLL_SLICE_MS) ms = BS_POLL_SLICE_MS;
    if (poll(pfd, (nfds_t)n, ms) < 0) {
      if (errno == EINTR) continue;
      WARN("bootstrap rank %d/%d: %s: poll failed: %s", b->rank, b->nranks, what,
           strerror(errno));
      return ncclSystemError;
    }
    if (pfd[0].revents) {
      uint64_t v;
      if (read(b->wake_fd, &v, sizeof v) < 0) { /* nothing to do: the flag is what counts */
      }
    }
    /* Backwards, so that a peer removed from the active list (swap with the last) is one
     * already looked at. */
    for (int i = b->nactive - 1; i >= 0; i--) {
      if (i >= b->nactive || !pfd[base_active + i].revents) continue;
      if ((r = rx_progress(b, b->active[i])) != ncclSuccess) return r;
    }
    char who[48];
    snprintf(who, sizeof who, "bootstrap rank %d/%d", b->rank, b->nranks);
    bs_pending_advance(&b->pending, pfd + 2, b->id.magic, b->id.secret, who, on_hello, b);
    if (pfd[1].revents) bs_pending_accept(&b->pending, b->listen_fd, who);
  }
}
