/* Connection setup of the example plugin, none of it blocking. listen binds a socket to the
 * device's address and writes address and a random secret into the handle. connect opens a
 * non-blocking TCP connection and, once it is up, sends a hello (the handle's magic and secret);
 * until then it returns a NULL comm and keeps its state in the caller's copy of the handle.
 * accept takes one pending connection at a time and returns the comm once that connection's
 * hello has arrived and is right; a socket that sends anything else is closed and forgotten. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "example_net.h"

struct ex_hello {
  uint64_t magic;
  uint64_t secret;
};

struct ex_listen_comm {
  int fd;
  uint64_t secret;
  int pending_fd; /* accepted, hello not complete yet; -1 when none */
  size_t hello_got;
  struct ex_hello hello;
};

/* A connect in progress, in the connecting side's copy of the handle. */
struct ex_connecting {
  int fd;
  size_t hello_sent;
  struct ex_hello hello;
};

static void ex_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

ncclResult_t ex_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  (void)ctx;
  *listen_comm = NULL;
  const struct ex_device* d = ex_device_get(dev);
  if (!d) return ncclInvalidArgument;
  struct ex_listen_comm* l = calloc(1, sizeof *l);
  if (!l) return ncclSystemError;
  l->pending_fd = -1;
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = d->addr;
  socklen_t len = sizeof addr;
  if (l->fd < 0 || bind(l->fd, (struct sockaddr*)&addr, sizeof addr) != 0 ||
      listen(l->fd, 128) != 0 || getsockname(l->fd, (struct sockaddr*)&addr, &len) != 0 ||
      getrandom(&l->secret, sizeof l->secret, 0) != (ssize_t)sizeof l->secret) {
    EX_WARN("listen on %s: %s", d->name, strerror(errno));
    if (l->fd >= 0) close(l->fd);
    free(l);
    return ncclSystemError;
  }
  struct ex_handle h = {.magic = EX_HANDLE_MAGIC, .secret = l->secret, .addr = addr};
  memcpy(handle, &h, sizeof h); /* stage is NULL: no connect has begun on this copy */
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t ex_connect(void* ctx, int dev, void* handle, void** send_comm,
                        ncclNetDeviceHandle_v11_t** dev_comm) {
  (void)ctx;
  *send_comm = NULL;
  if (dev_comm) *dev_comm = NULL;
  if (!ex_device_get(dev)) return ncclInvalidArgument;
  struct ex_handle* h = handle;
  if (h->magic != EX_HANDLE_MAGIC) {
    EX_WARN("connect: the handle was not written by this plugin's listen");
    return ncclInvalidArgument;
  }
  struct ex_connecting* c = h->stage;
  if (!c) { /* first call: start the TCP connection */
    c = calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    c->hello = (struct ex_hello){.magic = EX_HANDLE_MAGIC, .secret = h->secret};
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 ||
        (connect(c->fd, (struct sockaddr*)&h->addr, sizeof h->addr) != 0 && errno != EINPROGRESS)) {
      EX_WARN("connect: %s", strerror(errno));
      if (c->fd >= 0) close(c->fd);
      free(c);
      return ncclSystemError;
    }
    h->stage = c;
    return ncclSuccess;
  }
  struct pollfd p = {.fd = c->fd, .events = POLLOUT};
  if (poll(&p, 1, 0) == 0) return ncclSuccess; /* not connected yet: call again */
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  while (err == 0 && c->hello_sent < sizeof c->hello) {
    ssize_t n = send(c->fd, (char*)&c->hello + c->hello_sent, sizeof c->hello - c->hello_sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) c->hello_sent += (size_t)n;
    else if (errno == EAGAIN || errno == EWOULDBLOCK) return ncclSuccess;
    else if (errno != EINTR) err = errno;
  }
  h->stage = NULL;
  if (err) {
    EX_WARN("connect: %s", strerror(err));
    close(c->fd);
    free(c);
    return ncclSystemError;
  }
  ex_nodelay(c->fd);
  struct ex_comm* comm = ex_comm_new(c->fd, 0);
  free(c);
  *send_comm = comm;
  return comm ? ncclSuccess : ncclSystemError;
}

ncclResult_t ex_connect_tc(void* ctx, int dev, void* handle, void** send_comm,
                           ncclNetDeviceHandle_v11_t** dev_comm, int traffic_class) {
  (void)traffic_class; /* TCP here has no traffic classes; a NIC would set it on the QP */
  return ex_connect(ctx, dev, handle, send_comm, dev_comm);
}

static void ex_drop_pending(struct ex_listen_comm* l) {
  close(l->pending_fd);
  l->pending_fd = -1;
  l->hello_got = 0;
}

ncclResult_t ex_accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** dev_comm) {
  struct ex_listen_comm* l = listen_comm;
  *recv_comm = NULL;
  if (dev_comm) *dev_comm = NULL;
  if (l->pending_fd < 0) {
    l->pending_fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (l->pending_fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
        return ncclSuccess; /* nobody connected yet */
      EX_WARN("accept: %s", strerror(errno));
      return ncclSystemError;
    }
  }
  while (l->hello_got < sizeof l->hello) {
    ssize_t n = recv(l->pending_fd, (char*)&l->hello + l->hello_got,
                     sizeof l->hello - l->hello_got, MSG_DONTWAIT);
    if (n > 0) {
      l->hello_got += (size_t)n;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return ncclSuccess; /* the hello is on its way */
    } else {
      ex_drop_pending(l); /* closed before its hello: a stray connection */
      return ncclSuccess;
    }
  }
  if (l->hello.magic != EX_HANDLE_MAGIC || l->hello.secret != l->secret) {
    EX_INFO("accept: dropped a connection without this listener's secret");
    ex_drop_pending(l);
    return ncclSuccess;
  }
  ex_nodelay(l->pending_fd);
  struct ex_comm* comm = ex_comm_new(l->pending_fd, 1);
  if (!comm) {
    ex_drop_pending(l);
    return ncclSystemError;
  }
  l->pending_fd = -1;
  l->hello_got = 0;
  *recv_comm = comm;
  return ncclSuccess;
}

ncclResult_t ex_close_listen(void* listen_comm) {
  struct ex_listen_comm* l = listen_comm;
  if (!l) return ncclSuccess;
  if (l->pending_fd >= 0) close(l->pending_fd);
  close(l->fd);
  free(l);
  return ncclSuccess;
}

ncclResult_t ex_close_send(void* send_comm) {
  ex_comm_free(send_comm);
  return ncclSuccess;
}

ncclResult_t ex_close_recv(void* recv_comm) {
  ex_comm_free(recv_comm);
  return ncclSuccess;
}
