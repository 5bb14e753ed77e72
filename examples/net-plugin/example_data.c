/* The data path of the example plugin. A message is a header (size, tag) and its payload on
 * the comm's TCP socket. Requests are served strictly in post order: the oldest posted request
 * moves bytes until the socket would block, then the next. Every isend, irecv and test call
 * pushes the comm's queue as far as the socket allows, so the caller's polling is the progress
 * engine (a NIC plugin would poll its completion queue here). A comm holds EX_MAX_REQS
 * requests; when all are in use, isend/irecv return a NULL request ("try again"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "example_net.h"

struct ex_mr {
  struct ex_comm* comm;
};

struct ex_comm* ex_comm_new(int fd, int is_recv) {
  struct ex_comm* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->is_recv = is_recv;
  for (int i = 0; i < EX_MAX_REQS; i++) c->pool[i].comm = c;
  return c;
}

void ex_comm_free(struct ex_comm* comm) {
  if (!comm) return;
  close(comm->fd);
  free(comm);
}

ncclResult_t ex_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  (void)data, (void)size;
  *mhandle = NULL;
  if (type != NCCL_PTR_HOST) {
    EX_WARN("regMr: memory type %d not supported (host memory only)", type);
    return ncclInternalError;
  }
  /* Sockets need no registration; a NIC pins and registers [data, data+size) here. */
  struct ex_mr* mr = malloc(sizeof *mr);
  if (!mr) return ncclSystemError;
  mr->comm = comm;
  *mhandle = mr;
  return ncclSuccess;
}

ncclResult_t ex_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle) {
  (void)comm, (void)data, (void)size, (void)type, (void)offset, (void)fd;
  *mhandle = NULL;
  EX_WARN("regMrDmaBuf: DMA-BUF is not supported (ptrSupport is host only)");
  return ncclInvalidUsage;
}

ncclResult_t ex_dereg_mr(void* comm, void* mhandle) {
  struct ex_mr* mr = mhandle;
  if (mr && mr->comm != comm) {
    EX_WARN("deregMr: handle %p belongs to another comm", mhandle);
    return ncclInternalError;
  }
  free(mr);
  return ncclSuccess;
}

/* Marks the connection failed: every pending and later request reports `res`. */
static ncclResult_t ex_fail(struct ex_comm* c, ncclResult_t res, const char* what, int err) {
  if (c->error == ncclSuccess) {
    if (err)
      EX_WARN("%s %s: %s", c->is_recv ? "receive" : "send", what, strerror(err));
    else
      EX_WARN("%s %s", c->is_recv ? "receive" : "send", what);
    c->error = res;
  }
  return c->error;
}

static ncclResult_t ex_io_error(struct ex_comm* c, int err) {
  int peer_gone = err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ETIMEDOUT;
  return ex_fail(c, peer_gone ? ncclRemoteError : ncclSystemError,
                 peer_gone ? "failed: the peer closed the connection" : "failed", err);
}

/* Moves the bytes of the oldest request; 1 when it completed, 0 when the socket would block. */
static int ex_step(struct ex_comm* c, struct ex_request* r) {
  const size_t hdr = sizeof r->header;
  while (c->error == ncclSuccess) {
    int header = r->moved < hdr;
    char* p = header ? (char*)&r->header + r->moved : r->data + (r->moved - hdr);
    size_t want = header ? hdr - r->moved : (c->is_recv ? r->header.size : r->size) - (r->moved - hdr);
    if (!header && want == 0) return 1;
    ssize_t n = c->is_recv ? recv(c->fd, p, want, MSG_DONTWAIT)
                           : send(c->fd, p, want, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ex_io_error(c, errno);
      return 0;
    }
    if (n == 0 && c->is_recv) {
      ex_fail(c, ncclRemoteError, "failed: the peer closed the connection mid-message", 0);
      return 0;
    }
    r->moved += (size_t)n;
    if (c->is_recv && r->moved == hdr) { /* the header is in: check it against the buffer */
      if (r->header.magic != EX_WIRE_MAGIC) {
        ex_fail(c, ncclSystemError, "failed: bad message header (stream out of step)", 0);
      } else if (r->header.size > r->size) {
        ex_fail(c, ncclInternalError, "failed: message larger than the posted receive", 0);
      }
    }
  }
  return 0;
}

/* Pushes the queue in post order as far as the socket allows. */
static ncclResult_t ex_progress(struct ex_comm* c) {
  while (c->count > 0 && c->error == ncclSuccess) {
    struct ex_request* r = c->queue[c->head];
    if (!ex_step(c, r)) break;
    r->done = 1;
    c->head = (c->head + 1) % EX_MAX_REQS;
    c->count--;
  }
  return c->error;
}

static struct ex_request* ex_post(struct ex_comm* c, void* data, size_t size, int tag) {
  if (c->count == EX_MAX_REQS) return NULL;
  struct ex_request* r = NULL;
  for (int i = 0; i < EX_MAX_REQS && !r; i++)
    if (!c->pool[i].used) r = &c->pool[i];
  if (!r) return NULL; /* every request is still waiting for its test */
  *r = (struct ex_request){.comm = c, .used = 1, .data = data, .size = size};
  r->header = (struct ex_wire_header){.size = size, .tag = tag, .magic = EX_WIRE_MAGIC};
  c->queue[(c->head + c->count) % EX_MAX_REQS] = r;
  c->count++;
  return r;
}

ncclResult_t ex_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                      void* phandle, void** request) {
  (void)mhandle, (void)phandle;
  struct ex_comm* c = send_comm;
  *request = NULL;
  if (c->error) return c->error;
  *request = ex_post(c, data, size, tag);
  return ex_progress(c);
}

ncclResult_t ex_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** phandles, void** request) {
  (void)mhandles, (void)phandles;
  struct ex_comm* c = recv_comm;
  /* *request may hold NCCL_NET_OPTIONAL_RECV_COMPLETION: a hint this plugin does not use. */
  *request = NULL;
  if (n != 1) {
    EX_WARN("irecv: %d receives grouped, but maxRecvs is 1", n);
    return ncclInternalError;
  }
  if (c->error) return c->error;
  *request = ex_post(c, data[0], sizes[0], tags[0]);
  return ex_progress(c);
}

ncclResult_t ex_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                       void** request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory only: received bytes are visible once the receive completed */
  return ncclSuccess;
}

ncclResult_t ex_test(void* request, int* done, int* sizes) {
  struct ex_request* r = request;
  *done = 0;
  if (!r || !r->used) {
    EX_WARN("test: %p is not a pending request", request);
    return ncclInternalError;
  }
  ncclResult_t res = ex_progress(r->comm);
  if (r->done) {
    if (sizes) sizes[0] = (int)(r->comm->is_recv ? r->header.size : r->size);
    r->used = 0;
    *done = 1;
    return ncclSuccess;
  }
  return res;
}
