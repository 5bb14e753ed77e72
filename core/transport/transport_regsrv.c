/* The registration service: its socket, thread and wire (transport_regsrv.h says what it
 * does). One request and one reply a message (SOCK_SEQPACKET keeps their bounds), fixed size;
 * a cuMem descriptor rides with its IMPORT as SCM_RIGHTS. Requests are served one at a time on
 * the service thread, in the order they come. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/transport_fdx.h"
#include "transport/transport_regsrv.h"
#include "util/clock.h"
#include "util/log.h"

#define REGSRV_MAGIC 0x77726567u /* "wreg" */
#define REGSRV_MAX_CONNS 64     /* peers of one rank: at most the communicator's ranks */

enum { OP_IMPORT = 1, OP_RELEASE = 2, OP_CANCEL = 3 };

typedef struct {
  uint32_t magic, op;
  uint64_t key;
  uint64_t seq; /* the requester's, echoed: a reply that comes too late is told apart */
  uint64_t id;  /* RELEASE: the import; CANCEL: the seq of the IMPORT it undoes */
  weft_regsrv_desc desc;
} regsrv_req;

typedef struct {
  uint32_t magic;
  int32_t ok;
  uint64_t seq;
  uint64_t id;
  uint64_t addr;
  char why[WEFT_REGSRV_WHY];
} regsrv_rep;

typedef struct import {
  uint64_t id;
  uint64_t seq; /* of the IMPORT request that made it (CANCEL names it) */
  weft_regsrv_desc desc;
  void* mapping;
  struct import* next;
} import;

typedef struct {
  int fd;
  import* imports;
} client;

struct weft_regsrv {
  int listen_fd, stop_fd;
  uint64_t key;
  int rank;
  weft_regsrv_ops ops;
  pthread_t thread;
  pthread_mutex_t lock; /* nimports, for regsrv_imports */
  int nimports;
  uint64_t next_id;
  client clients[REGSRV_MAX_CONNS];
  int nclients;
};

void regsrv_name(char out[WEFT_REGSRV_NAME_MAX], size_t* len, uint64_t proc_id,
                 uint64_t comm_hash, int rank) {
  memset(out, 0, WEFT_REGSRV_NAME_MAX);
  int n = snprintf(out + 1, WEFT_REGSRV_NAME_MAX - 1, "weft-reg-%016llx-%016llx-%d",
                   (unsigned long long)proc_id, (unsigned long long)comm_hash, rank);
  *len = 1 + (size_t)n;
}

static socklen_t addr_of(const char* name, size_t len, struct sockaddr_un* a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (len > sizeof a->sun_path) len = sizeof a->sun_path;
  memcpy(a->sun_path, name, len);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
}

/* ---- the server ---- */

static void client_close(weft_regsrv* s, client* c) {
  int n = 0;
  while (c->imports) {
    import* im = c->imports;
    c->imports = im->next;
    s->ops.release(s->ops.ctx, &im->desc, im->mapping);
    free(im);
    n++;
  }
  close(c->fd);
  c->fd = -1;
  pthread_mutex_lock(&s->lock);
  s->nimports -= n;
  pthread_mutex_unlock(&s->lock);
  if (n) INFO(NCCL_REG, "rank %d: a peer's connection closed: %d buffer(s) it shared released",
              s->rank, n);
}

static void refuse(regsrv_rep* rep, const char* why) {
  rep->ok = 0;
  snprintf(rep->why, sizeof rep->why, "%s", why);
}

static void serve_import(weft_regsrv* s, client* c, const regsrv_req* q, int fd,
                         regsrv_rep* rep) {
  const weft_regsrv_desc* d = &q->desc;
  if (d->how != WEFT_REGSRV_IPC && d->how != WEFT_REGSRV_FD) {
    refuse(rep, "unknown kind of buffer");
    return;
  }
  if (d->how == WEFT_REGSRV_FD && fd < 0) {
    refuse(rep, "a cuMem buffer came without its descriptor");
    return;
  }
  if (d->size == 0 || (d->how == WEFT_REGSRV_FD && (d->offset > d->alloc ||
                                                    d->size > d->alloc - d->offset))) {
    refuse(rep, "the buffer does not fit its allocation");
    return;
  }
  import* im = calloc(1, sizeof *im);
  if (!im) {
    refuse(rep, "out of memory");
    return;
  }
  uint64_t addr = 0;
  if (!s->ops.import(s->ops.ctx, d, fd, &addr, &im->mapping, rep->why, sizeof rep->why)) {
    free(im);
    rep->ok = 0;
    return;
  }
  im->id = ++s->next_id;
  im->seq = q->seq;
  im->desc = *d;
  im->next = c->imports;
  c->imports = im;
  pthread_mutex_lock(&s->lock);
  s->nimports++;
  pthread_mutex_unlock(&s->lock);
  rep->ok = 1;
  rep->id = im->id;
  rep->addr = addr;
}

/* RELEASE (by the import's id) or CANCEL (by its request's seq): undo one import. */
static void serve_release(weft_regsrv* s, client* c, const regsrv_req* q, regsrv_rep* rep) {
  for (import** pp = &c->imports; *pp; pp = &(*pp)->next) {
    import* im = *pp;
    if (q->op == OP_RELEASE ? im->id != q->id : im->seq != q->id) continue;
    *pp = im->next;
    s->ops.release(s->ops.ctx, &im->desc, im->mapping);
    if (q->op == OP_CANCEL)
      INFO(NCCL_REG, "rank %d: a peer stopped waiting for its buffer to be mapped: unmapped",
           s->rank);
    free(im);
    pthread_mutex_lock(&s->lock);
    s->nimports--;
    pthread_mutex_unlock(&s->lock);
    rep->ok = 1;
    rep->id = q->id;
    return;
  }
  refuse(rep, q->op == OP_RELEASE ? "no such import on this connection"
                                  : "no import of that request (it failed) to cancel");
}

/* One message from c: 0 when the connection is done (closed or unusable). */
static int serve_one(weft_regsrv* s, client* c) {
  regsrv_req q;
  int fd = -1, mflags = 0;
  ssize_t n = fdx_recv(c->fd, &q, sizeof q, MSG_DONTWAIT, &fd, &mflags);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 1;
  if (n < 0) return 0; /* no descriptor came (fdx_recv reads none from a failed call) */
  if (n == 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  regsrv_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.magic = REGSRV_MAGIC;
  rep.seq = (size_t)n == sizeof q ? q.seq : 0;
  if ((size_t)n != sizeof q || (mflags & (MSG_TRUNC | MSG_CTRUNC)) || q.magic != REGSRV_MAGIC)
    refuse(&rep, "not a weft registration request");
  else if (q.key != s->key)
    refuse(&rep, "a request for another communicator");
  else if (q.op == OP_IMPORT)
    serve_import(s, c, &q, fd, &rep);
  else if (q.op == OP_RELEASE || q.op == OP_CANCEL)
    serve_release(s, c, &q, &rep);
  else
    refuse(&rep, "unknown request");
  if (fd >= 0) close(fd);
  if (!rep.ok)
    INFO(NCCL_REG, "rank %d: a peer's registration request refused: %s", s->rank, rep.why);
  ssize_t w = send(c->fd, &rep, sizeof rep, MSG_NOSIGNAL);
  /* A requester that does not read its answers (unwaited releases sent faster than they are
   * served) fills its side: the answer is dropped, the connection and its imports stay. */
  if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;
  return w == (ssize_t)sizeof rep;
}

static void serve_accept(weft_regsrv* s) {
  int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  struct ucred cred;
  socklen_t clen = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid()) {
    INFO(NCCL_REG, "rank %d: a registration request from another user refused", s->rank);
    close(fd);
    return;
  }
  if (s->nclients == REGSRV_MAX_CONNS) {
    INFO(NCCL_REG, "rank %d: more than %d peers asked to share buffers; one refused", s->rank,
         REGSRV_MAX_CONNS);
    close(fd);
    return;
  }
  s->clients[s->nclients].fd = fd;
  s->clients[s->nclients].imports = NULL;
  s->nclients++;
}

static void* serve(void* arg) {
  weft_regsrv* s = arg;
  struct pollfd p[2 + REGSRV_MAX_CONNS];
  for (;;) {
    p[0] = (struct pollfd){s->stop_fd, POLLIN, 0};
    p[1] = (struct pollfd){s->listen_fd, POLLIN, 0};
    for (int i = 0; i < s->nclients; i++) p[2 + i] = (struct pollfd){s->clients[i].fd, POLLIN, 0};
    int nc = s->nclients;
    if (poll(p, (nfds_t)(2 + nc), -1) < 0) {
      if (errno == EINTR) continue;
      WARN("rank %d: the registration service stops: poll failed: %s", s->rank, strerror(errno));
      break;
    }
    if (p[0].revents) break;
    for (int i = nc - 1; i >= 0; i--) {
      if (!p[2 + i].revents) continue;
      if (!serve_one(s, &s->clients[i])) {
        client_close(s, &s->clients[i]);
        s->clients[i] = s->clients[--s->nclients];
      }
    }
    if (p[1].revents & POLLIN) serve_accept(s);
  }
  return NULL;
}

ncclResult_t regsrv_start(const char* name, size_t len, uint64_t key, int rank,
                          const weft_regsrv_ops* ops, weft_regsrv** out) {
  *out = NULL;
  weft_regsrv* s = calloc(1, sizeof *s);
  if (!s) {
    WARN("rank %d: out of memory for the registration service", rank);
    return ncclSystemError;
  }
  s->key = key;
  s->rank = rank;
  s->ops = *ops;
  s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  s->stop_fd = eventfd(0, EFD_CLOEXEC);
  struct sockaddr_un a;
  socklen_t alen = addr_of(name, len, &a);
  const char* what = s->listen_fd < 0 ? "socket" : s->stop_fd < 0 ? "eventfd" : NULL;
  if (!what && bind(s->listen_fd, (struct sockaddr*)&a, alen) != 0) what = "bind";
  if (!what && listen(s->listen_fd, REGSRV_MAX_CONNS) != 0) what = "listen";
  pthread_mutex_init(&s->lock, NULL);
  int e = what ? 0 : pthread_create(&s->thread, NULL, serve, s);
  if (!what && e != 0) {
    errno = e;
    what = "pthread_create";
  }
  if (what) {
    WARN("rank %d: the registration service cannot start: %s failed: %s", rank, what,
         strerror(errno));
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->stop_fd >= 0) close(s->stop_fd);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return ncclSystemError;
  }
  *out = s;
  return ncclSuccess;
}

void regsrv_stop(weft_regsrv* s) {
  if (!s) return;
  uint64_t one = 1;
  if (write(s->stop_fd, &one, sizeof one) != sizeof one)
    WARN("rank %d: waking the registration service failed: %s", s->rank, strerror(errno));
  pthread_join(s->thread, NULL);
  while (s->nclients > 0) client_close(s, &s->clients[--s->nclients]);
  close(s->listen_fd);
  close(s->stop_fd);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

int regsrv_imports(weft_regsrv* s) {
  pthread_mutex_lock(&s->lock);
  int n = s->nimports;
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* ---- the requester ---- */

int regsrv_connect(const char* name, size_t len, int timeout_ms, char* why, size_t whylen) {
  struct sockaddr_un a;
  socklen_t alen = addr_of(name, len, &a);
  uint64_t end = clock_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      snprintf(why, whylen, "socket: %s", strerror(errno));
      return -1;
    }
    if (connect(fd, (struct sockaddr*)&a, alen) == 0) return fd;
    int e = errno;
    close(fd);
    /* Not listening yet (the peer is still starting): retry until the deadline. */
    if ((e != ECONNREFUSED && e != ENOENT && e != EAGAIN) || clock_ms() >= end) {
      snprintf(why, whylen, "connecting to its registration service: %s", strerror(e));
      return -1;
    }
    usleep(2000);
  }
}

/* Send q (with fd when >= 0), wait for the reply within timeout_ms: 1 done, 0 refused or
 * failed, CALL_NO_ANSWER when none came in time (the request may still be served). */
#define CALL_NO_ANSWER (-1)
static int call(int conn, const regsrv_req* q, int fd, int timeout_ms, regsrv_rep* rep,
                char* why, size_t whylen) {
  if (fdx_send(conn, q, sizeof *q, fd, 0) != (ssize_t)sizeof *q) {
    snprintf(why, whylen, "sending to its registration service: %s", strerror(errno));
    return 0;
  }
  uint64_t end = clock_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) { /* replies to earlier requests that timed out are skipped */
    uint64_t now = clock_ms();
    struct pollfd p = {conn, POLLIN, 0};
    int r = now < end ? poll(&p, 1, (int)(end - now)) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      snprintf(why, whylen, "its registration service did not answer within %d ms", timeout_ms);
      return CALL_NO_ANSWER;
    }
    ssize_t n = r > 0 ? recv(conn, rep, sizeof *rep, MSG_DONTWAIT) : -1;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n != (ssize_t)sizeof *rep || rep->magic != REGSRV_MAGIC) {
      snprintf(why, whylen, "its registration service answered %s",
               n == 0 ? "nothing (closed)" : "something else");
      return 0;
    }
    if (rep->seq == q->seq) break;
  }
  rep->why[sizeof rep->why - 1] = '\0';
  if (!rep->ok) snprintf(why, whylen, "its registration service refused: %s", rep->why);
  return rep->ok;
}

static void request(regsrv_req* q, uint32_t op, uint64_t key) {
  memset(q, 0, sizeof *q);
  q->magic = REGSRV_MAGIC;
  q->op = op;
  q->key = key;
  q->seq = clock_ns();
}

/* Send q without waiting for its answer, which the next call skips: 1 sent, else 0 with errno.
 * First take the answers that came meanwhile, so that unread ones never fill the service's side
 * of the connection (it would end it, and every import with it). */
static int send_unwaited(int conn, const regsrv_req* q) {
  regsrv_rep old;
  while (recv(conn, &old, sizeof old, MSG_DONTWAIT) > 0) continue;
  return send(conn, q, sizeof *q, MSG_NOSIGNAL) == (ssize_t)sizeof *q;
}

int regsrv_import(int conn, uint64_t key, const weft_regsrv_desc* d, int fd, int timeout_ms,
                  uint64_t* addr, uint64_t* id, char* why, size_t whylen) {
  regsrv_req q;
  request(&q, OP_IMPORT, key);
  q.desc = *d;
  regsrv_rep rep;
  int r = call(conn, &q, fd, timeout_ms, &rep, why, whylen);
  if (r == CALL_NO_ANSWER) {
    /* The service may still map it, and would hold the mapping for nobody until the
     * connection closes (while it is held, the driver refuses to map a buffer this process
     * allocates over that range with another size): have the service undo it once done. */
    regsrv_req cancel;
    request(&cancel, OP_CANCEL, key);
    cancel.id = q.seq;
    (void)send_unwaited(conn, &cancel); /* best effort: the connection's end undoes it too */
  }
  if (r != 1) return 0;
  *addr = rep.addr;
  *id = rep.id;
  return 1;
}

int regsrv_release(int conn, uint64_t key, uint64_t id, int timeout_ms, char* why,
                   size_t whylen) {
  regsrv_req q;
  request(&q, OP_RELEASE, key);
  q.id = id;
  if (timeout_ms == 0) {
    if (send_unwaited(conn, &q)) return 1;
    snprintf(why, whylen, "sending to its registration service: %s", strerror(errno));
    return 0;
  }
  regsrv_rep rep;
  return call(conn, &q, -1, timeout_ms, &rep, why, whylen) == 1;
}
