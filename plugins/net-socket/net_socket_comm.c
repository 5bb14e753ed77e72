/* A connection of the socket plugin (send or receive side): its sockets, request pool, helper
 * threads, and the error state they share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_socket_internal.h"
#include "util/clock.h"

#define NS_SEND_MAGIC 0x6e735f73656e6431ull
#define NS_RECV_MAGIC 0x6e735f7265637631ull
#define NS_QUIESCE_MS 5000

ns_comm* net_socket_comm_check(void* comm, int kind, const char* fn) {
  ns_comm* c = comm;
  uint64_t want = kind == NS_SEND ? NS_SEND_MAGIC : NS_RECV_MAGIC;
  if (c == NULL || c->magic != want) {
    NS_WARN("NET/Socket: %s: %p is not a %s comm of this plugin", fn, comm,
            kind == NS_SEND ? "send" : "receive");
    return NULL;
  }
  return c;
}

/* Teardown leaves no TIME_WAIT on either end, whichever closes first, without losing data
 * (docs/design.md, "Reliability"). Bytes flow from the sending end to the receiving end only,
 * so the ends close differently:
 *  - the receiving end always resets (util/socket.h, socket_reset): once closeRecv is called
 *    nothing more will be read, so nothing that could still arrive is wanted; it never sends a
 *    FIN, so the sending end never receives one and never enters TIME_WAIT;
 *  - the sending end closes normally (socket_close): its FIN follows every byte it queued, so a
 *    message whose send completed still reaches a receiver that reads it. Its FIN_WAIT ends
 *    with the receiver's reset, or, when the receiver has closed already, it resets at once.
 * A race of the two closes cannot leave a TIME_WAIT: that needs a FIN from both ends (or a FIN
 * answered by a FIN), and the receiving end sends none. */
static void close_socket(int kind, int fd) {
  if (kind == NS_RECV)
    socket_reset(fd);
  else
    socket_close(fd);
}

ncclResult_t net_socket_comm_create(int kind, int dev, int ctrl_fd, const int* data_fds, int nsocks,
                                    int nthreads, const char* peer, ncclProfilerCallback_t prof,
                                    ns_comm** out) {
  ns_comm* c = calloc(1, sizeof *c);
  ns_sock* socks = nsocks > 0 ? calloc((size_t)nsocks, sizeof *socks) : NULL;
  if (c == NULL || (nsocks > 0 && socks == NULL)) {
    NS_WARN("NET/Socket: out of memory for a connection with %s", peer);
    free(c);
    free(socks);
    close_socket(kind, ctrl_fd);
    for (int i = 0; i < nsocks; i++) close_socket(kind, data_fds[i]);
    return ncclSystemError;
  }
  c->magic = kind == NS_SEND ? NS_SEND_MAGIC : NS_RECV_MAGIC;
  c->kind = kind;
  c->dev = dev;
  c->ctrl_fd = ctrl_fd;
  c->nsocks = nsocks;
  c->nthreads = nthreads;
  c->socks = socks;
  c->prof = prof;
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  for (int i = 0; i < nsocks; i++) c->socks[i].fd = data_fds[i];
  for (int i = 0; i < NS_MAX_THREADS; i++) c->threads[i].efd = -1;
  socket_set_nodelay(ctrl_fd);
  for (int i = 0; i < nsocks; i++) socket_set_nodelay(data_fds[i]);

  c->window = kind == NS_SEND ? NS_SEND_WINDOW : NS_RECV_WINDOW;
  c->reqs = calloc((size_t)c->window, sizeof *c->reqs);
  c->free_ids = malloc((size_t)c->window * sizeof *c->free_ids);
  c->fifo = calloc((size_t)c->window, sizeof *c->fifo);
  if (kind == NS_RECV) c->scratch = malloc(NS_SCRATCH_BYTES);
  if (!c->reqs || !c->free_ids || !c->fifo || (kind == NS_RECV && !c->scratch)) {
    NS_WARN("NET/Socket: out of memory for a connection with %s", peer);
    net_socket_comm_destroy(c);
    return ncclSystemError;
  }
  for (int i = 0; i < c->window; i++) c->free_ids[i] = c->window - 1 - i;
  c->nfree = c->window;

  ncclResult_t res = net_socket_threads_start(c);
  if (res != ncclSuccess) {
    net_socket_comm_destroy(c);
    return res;
  }
  NS_INFO(NCCL_NET, "NET/Socket: %s connection %s %s: %d data sockets, %d helper threads",
          kind == NS_SEND ? "send" : "receive", kind == NS_SEND ? "to" : "from", peer, nsocks,
          nthreads);
  *out = c;
  return ncclSuccess;
}

void net_socket_comm_destroy(ns_comm* c) {
  net_socket_threads_stop(c); /* also stops the events of data-socket tasks left open */
  net_socket_prof_stop(c, &c->ctrl_ev);
  close_socket(c->kind, c->ctrl_fd);
  for (int i = 0; i < c->nsocks; i++) close_socket(c->kind, c->socks[i].fd);
  free(c->socks);
  free(c->reqs);
  free(c->free_ids);
  free(c->fifo);
  free(c->scratch);
  c->magic = 0;
  free(c);
}

int net_socket_comm_fail(ns_comm* c, ncclResult_t res) {
  int expected = 0;
  int first = __atomic_compare_exchange_n(&c->error, &expected, (int)res, 0, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST);
  for (int i = 0; i < c->nthreads; i++) {
    uint64_t one = 1;
    if (c->threads[i].efd >= 0 && write(c->threads[i].efd, &one, sizeof one) < 0) {
      /* the counter is already non-zero: the thread will wake anyway */
    }
  }
  return first;
}

void net_socket_comm_quiesce(ns_comm* c) {
  uint64_t deadline = clock_ms() + NS_QUIESCE_MS;
  weft_backoff b = {0};
  for (int i = 0; i < c->nthreads; i++) {
    ns_thread* t = &c->threads[i];
    while (t->started && !__atomic_load_n(&t->parked, __ATOMIC_ACQUIRE)) {
      if (clock_ms() > deadline) {
        NS_WARN(
            "NET/Socket: helper thread %d of the connection with %s did not stop within "
            "%d ms",
            i, c->peer, NS_QUIESCE_MS);
        return;
      }
      backoff_wait(&b);
    }
  }
}
