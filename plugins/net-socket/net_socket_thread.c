/* Helper threads of a connection. Data socket s belongs to thread s % nthreads; each thread moves
 * the chunk tasks queued on its sockets with non-blocking send/recv, and when none can move it
 * sleeps in poll() on those sockets plus an eventfd (new task, error or stop), so an idle or
 * stalled connection costs no CPU. A failed socket records the connection's error; the thread
 * then parks (touches no buffer again) until the comm is closed. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net_socket_internal.h"

/* Rounds without progress spent yielding before a thread sleeps in poll(). */
#define NS_YIELD_ROUNDS 4

size_t net_socket_chunk_size(size_t total, int nsocks) {
  size_t per = (total + (size_t)nsocks - 1) / (size_t)nsocks;
  per = (per + 4095) & ~(size_t)4095;
  return per < NS_MIN_CHUNK ? NS_MIN_CHUNK : per;
}

void net_socket_prof_start(ns_comm* c, int fd, size_t length, void** phandle, void** ev) {
  if (c->prof == NULL || *phandle == NULL) return;
  ncclProfilerNetSockDescr_v1_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileSocket;
  d.sock.fd = fd;
  d.sock.op = c->kind == NS_SEND ? NS_PROF_OP_SEND : NS_PROF_OP_RECV;
  d.sock.length = length;
  weft_net_prof_start(c->prof, *phandle, NS_PROF_ID, &d, ev);
  *phandle = NULL; /* once per task, whatever the profiler answered */
}

void net_socket_prof_stop(ns_comm* c, void** ev) {
  weft_net_prof_stop(c->prof, ev, NS_PROF_ID, NULL);
}

static void wake(ns_thread* t) {
  uint64_t one = 1;
  if (write(t->efd, &one, sizeof one) < 0) {
    /* EAGAIN: the counter is saturated, the thread wakes anyway */
  }
}

void net_socket_task_push(ns_comm* c, int s, const ns_task* task) {
  ns_sock* k = &c->socks[s];
  unsigned tail = k->tail;
  k->ring[tail % NS_TASK_RING] = *task;
  /* seq_cst pairs with the thread's store of waiting then load of tail: either it sees this
   * task or we see it waiting. */
  __atomic_store_n(&k->tail, tail + 1, __ATOMIC_SEQ_CST);
  ns_thread* t = &c->threads[s % c->nthreads];
  if (__atomic_load_n(&t->waiting, __ATOMIC_SEQ_CST) &&
      __atomic_exchange_n(&t->waiting, 0, __ATOMIC_SEQ_CST))
    wake(t);
}

/* Move what the socket takes of one task. */
static ncclResult_t task_step(int fd, int send_dir, ns_task* t, char* scratch) {
  if (t->done < t->deliver) {
    ncclResult_t r = socket_progress(fd, send_dir, t->ptr, t->deliver, &t->done);
    if (r != ncclSuccess || t->done < t->deliver) return r;
  }
  while (t->done < t->total) { /* receive only: bytes beyond the posted size are dropped */
    size_t want = t->total - t->done, got = 0;
    if (want > NS_SCRATCH_BYTES) want = NS_SCRATCH_BYTES;
    ncclResult_t r = socket_progress(fd, 0, scratch, want, &got);
    t->done += got;
    if (r != ncclSuccess || got < want) return r;
  }
  return ncclSuccess;
}

/* The NetPlugin events of the tasks queued on data sockets idx, idx + step, ... that began and
 * never finished (the connection failed, or it is closing). Only the sockets' helper, or the
 * closer once the helpers are joined, touches a task's event. */
static void prof_stop_open_tasks(ns_comm* c, int idx, int step) {
  for (int s = idx; s < c->nsocks; s += step) {
    ns_sock* k = &c->socks[s];
    unsigned tail = __atomic_load_n(&k->tail, __ATOMIC_ACQUIRE);
    for (unsigned h = k->head; h != tail; h++)
      net_socket_prof_stop(c, &k->ring[h % NS_TASK_RING].ev);
  }
}

static void drain(int efd) {
  uint64_t v;
  if (read(efd, &v, sizeof v) < 0) {
    /* EAGAIN: nothing to drain */
  }
}

static void* thread_main(void* arg) {
  ns_thread* t = arg;
  ns_comm* c = t->comm;
  int send_dir = c->kind == NS_SEND;
  struct pollfd pfd[NS_MAX_SOCKS + 1];
  unsigned seen[NS_MAX_SOCKS];
  int idle_rounds = 0;
  for (;;) {
    if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) break;
    if (__atomic_load_n(&c->error, __ATOMIC_ACQUIRE)) {
      if (c->prof && !t->parked) prof_stop_open_tasks(c, t->idx, c->nthreads);
      __atomic_store_n(&t->parked, 1, __ATOMIC_RELEASE);
      struct pollfd p = {.fd = t->efd, .events = POLLIN};
      poll(&p, 1, 100);
      drain(t->efd);
      continue;
    }
    int moved = 0, np = 0, nmine = 0;
    for (int s = t->idx; s < c->nsocks; s += c->nthreads, nmine++) {
      ns_sock* k = &c->socks[s];
      unsigned head = k->head;
      unsigned tail = __atomic_load_n(&k->tail, __ATOMIC_ACQUIRE);
      seen[nmine] = tail;
      while (head != tail) {
        ns_task* task = &k->ring[head % NS_TASK_RING];
        size_t before = task->done;
        if (task->phandle) net_socket_prof_start(c, k->fd, task->total, &task->phandle, &task->ev);
        errno = 0;
        ncclResult_t r = task_step(k->fd, send_dir, task, t->scratch);
        if (task->done != before) moved = 1;
        if (r != ncclSuccess) {
          int err = errno;
          net_socket_prof_stop(c, &task->ev); /* failed: the task moves no more */
          if (net_socket_comm_fail(c, r)) /* later failures are consequences: no WARN */
            NS_WARN("NET/Socket: %s data socket %d of the connection %s %s failed: %s",
                    send_dir ? "sending on" : "receiving on", s, send_dir ? "to" : "from", c->peer,
                    err ? strerror(err) : "closed by the peer");
          break;
        }
        if (task->done < task->total) break;
        net_socket_prof_stop(c, &task->ev); /* before the request can complete */
        ns_req* req = task->req;
        head++;
        /* head first: the producer may reuse the slot once the request completes */
        __atomic_store_n(&k->head, head, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&req->pending, 1, __ATOMIC_RELEASE);
      }
      if (head != tail) {
        pfd[np].fd = k->fd;
        pfd[np].events = send_dir ? POLLOUT : POLLIN;
        pfd[np].revents = 0;
        np++;
      }
    }
    if (moved) {
      idle_rounds = 0;
      continue;
    }
    if (np > 0 && idle_rounds++ < NS_YIELD_ROUNDS) {
      sched_yield();
      continue;
    }
    idle_rounds = 0;
    /* Sleep until a socket is ready or a producer/closer writes the eventfd. */
    __atomic_store_n(&t->waiting, 1, __ATOMIC_SEQ_CST);
    int fresh =
        __atomic_load_n(&c->stop, __ATOMIC_SEQ_CST) || __atomic_load_n(&c->error, __ATOMIC_SEQ_CST);
    nmine = 0;
    for (int s = t->idx; s < c->nsocks && !fresh; s += c->nthreads, nmine++)
      fresh = __atomic_load_n(&c->socks[s].tail, __ATOMIC_SEQ_CST) != seen[nmine];
    if (!fresh) {
      pfd[np].fd = t->efd;
      pfd[np].events = POLLIN;
      pfd[np].revents = 0;
      poll(pfd, (nfds_t)np + 1, np > 0 ? 100 : 1000);
    }
    __atomic_store_n(&t->waiting, 0, __ATOMIC_SEQ_CST);
    drain(t->efd);
  }
  return NULL;
}

ncclResult_t net_socket_threads_start(ns_comm* c) {
  for (int i = 0; i < c->nthreads; i++) {
    ns_thread* t = &c->threads[i];
    t->comm = c;
    t->idx = i;
    t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (t->efd < 0) {
      NS_WARN("NET/Socket: eventfd failed: %s", strerror(errno));
      return ncclSystemError;
    }
    if (c->kind == NS_RECV && (t->scratch = malloc(NS_SCRATCH_BYTES)) == NULL) {
      NS_WARN("NET/Socket: out of memory for a helper thread");
      return ncclSystemError;
    }
  }
  /* Helpers take no signals: those belong to the application's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < c->nthreads && res == ncclSuccess; i++) {
    ns_thread* t = &c->threads[i];
    int rc = pthread_create(&t->tid, NULL, thread_main, t);
    if (rc != 0) {
      NS_WARN("NET/Socket: cannot start helper thread %d of %d: %s", i, c->nthreads, strerror(rc));
      res = ncclSystemError;
      break;
    }
    t->started = 1;
    char name[32];
    snprintf(name, sizeof name, "weft-sock-%c%u", c->kind == NS_SEND ? 's' : 'r',
             (unsigned)i % 100u);
    name[15] = '\0'; /* the kernel keeps 15 characters */
    pthread_setname_np(t->tid, name);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return res;
}

void net_socket_threads_stop(ns_comm* c) {
  __atomic_store_n(&c->stop, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < c->nthreads; i++)
    if (c->threads[i].efd >= 0) wake(&c->threads[i]);
  for (int i = 0; i < c->nthreads; i++) {
    ns_thread* t = &c->threads[i];
    if (t->started) pthread_join(t->tid, NULL);
    t->started = 0;
    if (t->efd >= 0) close(t->efd);
    t->efd = -1;
    free(t->scratch);
    t->scratch = NULL;
  }
  if (c->prof) prof_stop_open_tasks(c, 0, 1);
}
