/* Descriptor hand-over by SCM_RIGHTS (transport_fdx.h says the protocol). */
#include "transport/transport_fdx.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

struct weft_fdx {
  int listen_fd;
};

static socklen_t fdx_addr(int32_t pid, uint64_t token, struct sockaddr_un* a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  /* Abstract: sun_path[0] is 0 and the name is the bytes after it (no file, gone with us). */
  int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "weft-fdx-%d-%016llx", (int)pid,
                   (unsigned long long)token);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

ncclResult_t fdx_open(int backlog, weft_fdx** out, uint64_t* token) {
  *out = NULL;
  weft_fdx* x = calloc(1, sizeof *x);
  if (!x) {
    WARN("descriptor exchange: out of memory");
    return ncclSystemError;
  }
  x->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (x->listen_fd < 0) {
    WARN("descriptor exchange: socket(AF_UNIX): %s", strerror(errno));
    free(x);
    return ncclSystemError;
  }
  for (int tries = 0;; tries++) {
    if (getrandom(token, sizeof *token, 0) != (ssize_t)sizeof *token)
      *token = (uint64_t)clock_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)tries;
    struct sockaddr_un a;
    socklen_t len = fdx_addr((int32_t)getpid(), *token, &a);
    if (bind(x->listen_fd, (struct sockaddr*)&a, len) == 0) break;
    if (errno != EADDRINUSE || tries == 8) {
      WARN("descriptor exchange: bind of an abstract UNIX socket: %s", strerror(errno));
      fdx_close(x);
      return ncclSystemError;
    }
  }
  if (listen(x->listen_fd, backlog < 1 ? 1 : backlog) != 0) {
    WARN("descriptor exchange: listen: %s", strerror(errno));
    fdx_close(x);
    return ncclSystemError;
  }
  *out = x;
  return ncclSuccess;
}

void fdx_close(weft_fdx* x) {
  if (!x) return;
  if (x->listen_fd >= 0) close(x->listen_fd);
  free(x);
}

/* Wait until fd is ready for events or the deadline passes: 1 ready, 0 not. */
static int ready(int fd, short events, uint64_t deadline) {
  for (;;) {
    uint64_t now = clock_ms();
    if (now >= deadline) return 0;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)(deadline - now));
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return 0;
  }
}

static int peer_cred(int fd, struct ucred* c) {
  socklen_t len = sizeof *c;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, c, &len) == 0;
}

ssize_t fdx_send(int sock, const void* buf, size_t len, int fd, int flags) {
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {(void*)buf, len};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    memset(cbuf, 0, sizeof cbuf);
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    struct cmsghdr* h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
  }
  return sendmsg(sock, &m, flags | MSG_NOSIGNAL);
}

ssize_t fdx_recv(int sock, void* buf, size_t len, int flags, int* fd, int* msg_flags) {
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {buf, len};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = cbuf;
  m.msg_controllen = sizeof cbuf;
  *fd = -1;
  ssize_t n = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
  if (msg_flags) *msg_flags = n < 0 ? 0 : m.msg_flags;
  /* Failed (ECONNRESET: the peer closed with a reply unread): no descriptor came, and the
   * kernel left msg_controllen as set above, so cbuf must not be read (it holds garbage or an
   * earlier message's SCM_RIGHTS, whose descriptor number may belong to someone else now). */
  if (n < 0) return n;
  /* Keep the first descriptor that came, close any other: one SCM_RIGHTS header can carry
   * two (on LP64, CMSG_SPACE pads cbuf to room for two ints). */
  for (struct cmsghdr* h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
        h->cmsg_len >= CMSG_LEN(sizeof(int)))
      for (size_t j = 0; j < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); j++) {
        int got;
        memcpy(&got, CMSG_DATA(h) + j * sizeof got, sizeof got);
        if (*fd < 0) *fd = got;
        else close(got);
      }
  return n;
}

static int send_fd(int sock, int fd) {
  char byte = 'F';
  ssize_t n;
  do n = fdx_send(sock, &byte, 1, fd, 0);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

/* One descriptor from sock, or -1 (the reason in why). */
static int recv_fd(int sock, char* why, size_t whylen) {
  char byte = 0;
  int fd = -1;
  ssize_t n;
  do n = fdx_recv(sock, &byte, 1, 0, &fd, NULL);
  while (n < 0 && errno == EINTR);
  if (n != 1) {
    if (fd >= 0) close(fd);
    snprintf(why, whylen, "%s", n == 0 ? "it closed without a descriptor" : strerror(errno));
    return -1;
  }
  if (fd < 0) snprintf(why, whylen, "its message carried no descriptor");
  return fd;
}

fdx_deadline fdx_deadline_in(int timeout_ms) {
  if (timeout_ms < 1) timeout_ms = 1;
  fdx_deadline d = {clock_ms() + (uint64_t)timeout_ms, timeout_ms};
  return d;
}

ncclResult_t fdx_connect(int32_t pid, uint64_t token, int* sock, char* why, size_t whylen) {
  struct sockaddr_un a;
  socklen_t len = fdx_addr(pid, token, &a);
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct ucred c = {0, 0, 0};
  *sock = -1;
  if (s < 0 || connect(s, (struct sockaddr*)&a, len) != 0) {
    snprintf(why, whylen, "connecting to process %d: %s", (int)pid, strerror(errno));
  } else if (!peer_cred(s, &c) || c.pid != pid || c.uid != getuid()) {
    snprintf(why, whylen, "the socket of process %d is held by process %d of user %d", (int)pid,
             (int)c.pid, (int)c.uid);
  } else {
    *sock = s;
    return ncclSuccess;
  }
  if (s >= 0) close(s);
  return ncclSystemError;
}

ncclResult_t fdx_serve(weft_fdx* x, int fd, int nserve, fdx_deadline d, char* why,
                       size_t whylen) {
  ncclResult_t res = ncclSuccess;
  for (int k = 0; k < nserve; k++) {
    if (!ready(x->listen_fd, POLLIN, d.at_ms)) {
      snprintf(why, whylen, "%d of %d peer process(es) never came for this process's descriptor",
               nserve - k, nserve);
      return ncclSystemError;
    }
    int s = accept4(x->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0) {
      k--; /* a connection that went away before its accept: wait for the next */
      continue;
    }
    struct ucred c = {0, 0, (uid_t)-1};
    if (!peer_cred(s, &c) || c.uid != getuid()) {
      INFO(NCCL_REG, "descriptor exchange: refused a connection of user %d", (int)c.uid);
      k--;
    } else if (!send_fd(s, fd) && res == ncclSuccess) {
      /* keep serving the others: they then fail on their own step, not at the deadline */
      snprintf(why, whylen, "handing the descriptor to process %d: %s", (int)c.pid,
               strerror(errno));
      res = ncclSystemError;
    }
    close(s);
  }
  return res;
}

ncclResult_t fdx_take(int sock, int32_t pid, fdx_deadline d, int* fd, char* why, size_t whylen) {
  char r[96];
  *fd = -1;
  if (!ready(sock, POLLIN, d.at_ms)) {
    snprintf(why, whylen, "process %d did not hand over its descriptor in %d ms", (int)pid,
             d.timeout_ms);
    return ncclSystemError;
  }
  if ((*fd = recv_fd(sock, r, sizeof r)) < 0) {
    snprintf(why, whylen, "process %d: %s", (int)pid, r);
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t fdx_exchange(weft_fdx* x, int fd, int nserve, int nfetch, const int32_t* pids,
                          const uint64_t* tokens, int* fds_out, int timeout_ms, char* why,
                          size_t whylen) {
  fdx_deadline d = fdx_deadline_in(timeout_ms);
  int* socks = nfetch > 0 ? malloc((size_t)nfetch * sizeof *socks) : NULL;
  if (nfetch > 0 && !socks) {
    snprintf(why, whylen, "out of memory");
    return ncclSystemError;
  }
  for (int i = 0; i < nfetch; i++) fds_out[i] = socks[i] = -1;
  ncclResult_t res = ncclSuccess;
  /* 1: connect to every process to fetch from (the backlog holds the connection). */
  for (int i = 0; i < nfetch && res == ncclSuccess; i++)
    res = fdx_connect(pids[i], tokens[i], &socks[i], why, whylen);
  /* 2: serve every fetcher (each is of this user), even after a failure above, so that the
   * peers waiting on this process fail on their own timeouts only when this one is gone. */
  if (x && nserve > 0) {
    char r[160];
    if (fdx_serve(x, fd, nserve, d, r, sizeof r) != ncclSuccess && res == ncclSuccess) {
      snprintf(why, whylen, "%s", r);
      res = ncclSystemError;
    }
  }
  /* 3: receive what was fetched. */
  for (int i = 0; i < nfetch && res == ncclSuccess; i++)
    res = fdx_take(socks[i], pids[i], d, &fds_out[i], why, whylen);
  for (int i = 0; i < nfetch; i++) {
    if (socks[i] >= 0) close(socks[i]);
    if (res != ncclSuccess && fds_out[i] >= 0) {
      close(fds_out[i]);
      fds_out[i] = -1;
    }
  }
  free(socks);
  return res;
}
