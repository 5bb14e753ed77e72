/* Requests of the socket plugin: isend, irecv, iflush, test, and the control-socket protocol
 * that test drives.
 *
 * A comm keeps a fixed pool of requests (NS_SEND_WINDOW / NS_RECV_WINDOW); when it is empty
 * isend/irecv return ncclSuccess with *request = NULL and the caller retries. Requests enter a
 * FIFO in post order; the caller's thread (in isend, irecv and test) moves the FIFO's control
 * traffic: per message a 16-byte header {size, tag, flags}, then the payload when it is inline.
 * A striped payload is queued as chunk tasks for the helper threads: by the sender when it is
 * posted, by the receiver when its header arrives (only then is the size known). A request is
 * done when its control part is done and its chunk tasks have drained.
 *
 * Receives: the header's tag picks the first unmatched slot with that tag in the oldest posted
 * receive (a grouped receive takes one message per slot). A message larger than its slot is
 * received up to the slot's size, the rest is read and dropped, and test reports
 * ncclInternalError for that request; the connection stays usable. A connection failure (peer
 * closed, reset, protocol violation) fails every request of the comm from then on. */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net_socket_internal.h"

#define NS_HDR_BYTES 16

/* ---- request pool ---- */

static ns_req* req_alloc(ns_comm* c, int kind) {
  if (c->nfree == 0) return NULL;
  ns_req* r = &c->reqs[c->free_ids[--c->nfree]];
  memset(r, 0, sizeof *r);
  r->comm = c;
  r->kind = kind;
  return r;
}

static void req_free(ns_req* r) {
  ns_comm* c = r->comm;
  r->kind = NS_REQ_FREE;
  c->free_ids[c->nfree++] = (int)(r - c->reqs);
}

static void fifo_push(ns_comm* c, ns_req* r) { c->fifo[c->fifo_tail++ % (unsigned)c->window] = r; }

/* Queue a striped payload of total bytes (the first deliver of them land at ptr) as at most
 * nsocks chunks, round-robin from next_sock; the receiver mirrors this exactly. Each chunk
 * reports its own NetPlugin event under phandle (the slot's). */
static void push_chunks(ns_comm* c, ns_req* r, char* ptr, size_t deliver, size_t total,
                        void* phandle) {
  size_t chunk = net_socket_chunk_size(total, c->nsocks);
  int count = (int)((total + chunk - 1) / chunk);
  __atomic_add_fetch(&r->pending, count, __ATOMIC_RELAXED);
  for (size_t off = 0; off < total; off += chunk) {
    ns_task t;
    t.total = total - off < chunk ? total - off : chunk;
    t.deliver = deliver > off ? (deliver - off < t.total ? deliver - off : t.total) : 0;
    t.ptr = t.deliver ? ptr + off : NULL;
    t.done = 0;
    t.req = r;
    t.phandle = phandle;
    t.ev = NULL;
    net_socket_task_push(c, c->next_sock, &t);
    c->next_sock = (c->next_sock + 1) % c->nsocks;
  }
}

/* ---- control socket ---- */

/* Send what fits of hdr (hlen bytes) followed by data (dlen bytes); *done counts both. */
static ncclResult_t send_two(int fd, const void* hdr, size_t hlen, const void* data, size_t dlen,
                             size_t* done) {
  while (*done < hlen + dlen) {
    struct iovec iov[2];
    int n = 0;
    if (*done < hlen) {
      iov[n].iov_base = (char*)hdr + *done;
      iov[n++].iov_len = hlen - *done;
      if (dlen) {
        iov[n].iov_base = (void*)data;
        iov[n++].iov_len = dlen;
      }
    } else {
      iov[n].iov_base = (char*)data + (*done - hlen);
      iov[n++].iov_len = hlen + dlen - *done;
    }
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)n;
    ssize_t k = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k > 0) {
      *done += (size_t)k;
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (k < 0 && errno == EINTR) continue;
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static ncclResult_t ctrl_send_step(ns_comm* c, ns_req* r) {
  ns_slot* s = &r->slot[0];
  int inl = c->nsocks == 0 || s->size <= NS_INLINE_MAX;
  if (!c->started) {
    uint64_t size = htobe64((uint64_t)s->size);
    uint32_t tag = htobe32((uint32_t)s->tag), flags = htobe32(inl ? NS_HDR_INLINE : 0);
    memcpy(c->hdr, &size, 8);
    memcpy(c->hdr + 8, &tag, 4);
    memcpy(c->hdr + 12, &flags, 4);
    c->cur_done = 0;
    c->started = 1;
    /* an inline payload is a task of the control socket (a striped one's header is not) */
    if (inl) net_socket_prof_start(c, c->ctrl_fd, s->size, &s->phandle, &c->ctrl_ev);
  }
  size_t dlen = inl ? s->size : 0;
  errno = 0;
  if (send_two(c->ctrl_fd, c->hdr, NS_HDR_BYTES, s->data, dlen, &c->cur_done) != ncclSuccess) {
    int err = errno;
    net_socket_prof_stop(c, &c->ctrl_ev);
    if (net_socket_comm_fail(c, ncclRemoteError))
      NS_WARN("NET/Socket: sending to %s failed on the control socket: %s", c->peer,
              err ? strerror(err) : "closed by the peer");
    return ncclRemoteError;
  }
  if (c->cur_done == NS_HDR_BYTES + dlen) {
    net_socket_prof_stop(c, &c->ctrl_ev);
    c->started = 0;
    r->ctrl_done = 1;
  }
  return ncclSuccess;
}

static ncclResult_t ctrl_lost(ns_comm* c) {
  int err = errno;
  net_socket_prof_stop(c, &c->ctrl_ev);
  if (net_socket_comm_fail(c, ncclRemoteError))
    NS_WARN("NET/Socket: receiving from %s failed on the control socket: %s", c->peer,
            err ? strerror(err) : "closed by the peer");
  return ncclRemoteError;
}

static ncclResult_t ctrl_recv_step(ns_comm* c, ns_req* r) {
  for (;;) {
    if (c->phase == NS_CTRL_HDR) {
      if (r->matched == r->n) {
        r->ctrl_done = 1;
        return ncclSuccess;
      }
      errno = 0;
      if (socket_progress(c->ctrl_fd, 0, c->hdr, NS_HDR_BYTES, &c->hdr_done) != ncclSuccess)
        return ctrl_lost(c);
      if (c->hdr_done < NS_HDR_BYTES) return ncclSuccess;
      c->hdr_done = 0;
      uint64_t size;
      uint32_t tag, flags;
      memcpy(&size, c->hdr, 8);
      memcpy(&tag, c->hdr + 8, 4);
      memcpy(&flags, c->hdr + 12, 4);
      size = be64toh(size);
      tag = be32toh(tag);
      flags = be32toh(flags);
      if ((flags & ~NS_HDR_INLINE) || (!(flags & NS_HDR_INLINE) && c->nsocks == 0)) {
        NS_WARN("NET/Socket: malformed message header from %s (flags %#x)", c->peer, flags);
        return ncclInternalError;
      }
      int i = 0;
      while (i < r->n && (r->slot[i].matched || (!r->any_tag && r->slot[i].tag != (int)tag))) i++;
      if (i == r->n) {
        NS_WARN(
            "NET/Socket: message with tag %d (%llu bytes) from %s matches no open slot of "
            "the oldest posted receive (%d slots)",
            (int)tag, (unsigned long long)size, c->peer, r->n);
        return ncclInternalError;
      }
      ns_slot* s = &r->slot[i];
      s->matched = 1;
      s->got = (size_t)size;
      r->matched++;
      size_t deliver = size <= s->size ? (size_t)size : s->size;
      if (size > s->size) {
        NS_WARN(
            "NET/Socket: message truncated: %llu bytes sent by %s (tag %d), the posted "
            "receive holds %zu",
            (unsigned long long)size, c->peer, (int)tag, s->size);
        r->error = ncclInternalError;
      }
      if (flags & NS_HDR_INLINE) {
        c->cur_ptr = s->data;
        c->cur_deliver = deliver;
        c->cur_total = (size_t)size;
        c->cur_done = 0;
        c->phase = NS_CTRL_DATA;
        net_socket_prof_start(c, c->ctrl_fd, (size_t)size, &s->phandle, &c->ctrl_ev);
      } else if (size > 0) {
        push_chunks(c, r, s->data, deliver, (size_t)size, s->phandle);
        s->phandle = NULL;
      }
      continue;
    }
    /* NS_CTRL_DATA: an inline payload, then whatever exceeds the slot into scratch */
    errno = 0;
    if (c->cur_done < c->cur_deliver) {
      if (socket_progress(c->ctrl_fd, 0, c->cur_ptr, c->cur_deliver, &c->cur_done) != ncclSuccess)
        return ctrl_lost(c);
      if (c->cur_done < c->cur_deliver) return ncclSuccess;
    }
    while (c->cur_done < c->cur_total) {
      size_t want = c->cur_total - c->cur_done, got = 0;
      if (want > NS_SCRATCH_BYTES) want = NS_SCRATCH_BYTES;
      ncclResult_t res = socket_progress(c->ctrl_fd, 0, c->scratch, want, &got);
      c->cur_done += got;
      if (res != ncclSuccess) return ctrl_lost(c);
      if (got < want) return ncclSuccess;
    }
    net_socket_prof_stop(c, &c->ctrl_ev);
    c->phase = NS_CTRL_HDR;
  }
}

/* Move the control traffic of every posted request as far as the socket allows. */
static ncclResult_t ctrl_progress(ns_comm* c) {
  while (c->fifo_head != c->fifo_tail) {
    ns_req* r = c->fifo[c->fifo_head % (unsigned)c->window];
    ncclResult_t res = c->kind == NS_SEND ? ctrl_send_step(c, r) : ctrl_recv_step(c, r);
    if (res != ncclSuccess) {
      net_socket_comm_fail(c, res);
      return res;
    }
    if (!r->ctrl_done) break;
    c->fifo_head++;
  }
  return ncclSuccess;
}

/* ---- entry points ---- */

ncclResult_t net_socket_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                              void* phandle, void** request) {
  (void)mhandle;
  ns_comm* c = net_socket_comm_check(send_comm, NS_SEND, "isend");
  if (c == NULL) return ncclInternalError;
  if (request == NULL || (data == NULL && size > 0)) {
    NS_WARN("NET/Socket: isend: %s is NULL", request == NULL ? "request" : "data");
    return ncclInternalError;
  }
  ncclResult_t err = (ncclResult_t)__atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (err != ncclSuccess) return err;
  ns_req* r = req_alloc(c, NS_REQ_SEND);
  if (r == NULL) {
    *request = NULL;
    return ncclSuccess;
  }
  r->n = 1;
  r->slot[0].data = data;
  r->slot[0].size = size;
  r->slot[0].tag = tag;
  r->slot[0].phandle = c->prof ? phandle : NULL;
  if (c->nsocks > 0 && size > NS_INLINE_MAX) {
    push_chunks(c, r, data, size, size, r->slot[0].phandle);
    r->slot[0].phandle = NULL;
  }
  fifo_push(c, r);
  ncclResult_t res = ctrl_progress(c);
  if (res != ncclSuccess) return res;
  *request = r;
  return ncclSuccess;
}

ncclResult_t net_socket_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                              void** mhandles, void** phandles, void** request) {
  (void)mhandles;
  ns_comm* c = net_socket_comm_check(recv_comm, NS_RECV, "irecv");
  if (c == NULL) return ncclInternalError;
  if (n < 1 || n > NS_MAX_RECVS) {
    NS_WARN("NET/Socket: irecv: n = %d, expected 1 to %d (maxRecvs)", n, NS_MAX_RECVS);
    return ncclInternalError;
  }
  if (request == NULL || data == NULL || sizes == NULL) {
    NS_WARN("NET/Socket: irecv: %s is NULL", request == NULL ? "request"
                                             : data == NULL  ? "data"
                                                             : "sizes");
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++)
    if (data[i] == NULL && sizes[i] > 0) {
      NS_WARN("NET/Socket: irecv: data[%d] is NULL for %zu bytes", i, sizes[i]);
      return ncclInternalError;
    }
  ncclResult_t err = (ncclResult_t)__atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (err != ncclSuccess) return err;
  ns_req* r = req_alloc(c, NS_REQ_RECV);
  if (r == NULL) {
    *request = NULL;
    return ncclSuccess;
  }
  r->n = n;
  r->any_tag = tags == NULL;
  for (int i = 0; i < n; i++) {
    r->slot[i].data = data[i];
    r->slot[i].size = sizes[i];
    r->slot[i].tag = tags ? tags[i] : 0;
    r->slot[i].phandle = c->prof && phandles ? phandles[i] : NULL;
  }
  fifo_push(c, r);
  ncclResult_t res = ctrl_progress(c);
  if (res != ncclSuccess) return res;
  *request = r;
  return ncclSuccess;
}

/* Host memory needs no flush: the request handed back is already complete. */
static ns_req ns_flush_done = {.kind = NS_REQ_FLUSH};

ncclResult_t net_socket_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                               void** request) {
  (void)n;
  (void)data;
  (void)sizes;
  (void)mhandles;
  if (net_socket_comm_check(recv_comm, NS_RECV, "iflush") == NULL) return ncclInternalError;
  if (request == NULL) {
    NS_WARN("NET/Socket: iflush: request is NULL");
    return ncclInternalError;
  }
  *request = &ns_flush_done;
  return ncclSuccess;
}

ncclResult_t net_socket_test(void* request, int* done, int* sizes) {
  ns_req* r = request;
  if (r == NULL || done == NULL) {
    NS_WARN("NET/Socket: test: %s is NULL", r == NULL ? "request" : "done");
    return ncclInternalError;
  }
  if (r == &ns_flush_done) {
    *done = 1;
    return ncclSuccess;
  }
  if (r->kind != NS_REQ_SEND && r->kind != NS_REQ_RECV) {
    NS_WARN("NET/Socket: test: %p is not a request in flight (already completed?)", request);
    return ncclInternalError;
  }
  ns_comm* c = r->comm;
  *done = 0;
  if (__atomic_load_n(&c->error, __ATOMIC_ACQUIRE) == 0) (void)ctrl_progress(c);
  if (r->ctrl_done && __atomic_load_n(&r->pending, __ATOMIC_ACQUIRE) == 0) {
    *done = 1;
    if (sizes)
      for (int i = 0; i < r->n; i++) {
        size_t v = r->kind == NS_REQ_SEND ? r->slot[i].size : r->slot[i].got;
        sizes[i] = v > INT_MAX ? INT_MAX : (int)v; /* the ABI reports int sizes */
      }
    ncclResult_t res = r->error;
    req_free(r);
    return res;
  }
  ncclResult_t err = (ncclResult_t)__atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (err != ncclSuccess) {
    net_socket_comm_quiesce(c); /* no helper touches the caller's buffers once we return */
    req_free(r);
    return err;
  }
  return ncclSuccess;
}

ncclResult_t net_socket_close_send(void* send_comm) {
  ns_comm* c = net_socket_comm_check(send_comm, NS_SEND, "closeSend");
  if (c == NULL) return ncclInternalError;
  net_socket_comm_destroy(c);
  return ncclSuccess;
}

ncclResult_t net_socket_close_recv(void* recv_comm) {
  ns_comm* c = net_socket_comm_check(recv_comm, NS_RECV, "closeRecv");
  if (c == NULL) return ncclInternalError;
  net_socket_comm_destroy(c);
  return ncclSuccess;
}
