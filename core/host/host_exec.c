/* Channel workers of the host executor (see host.h). Work arrives through a mutex-guarded
 * queue; the worker keeps its active items in launch order, which is also the order in which
 * they take turns on a shared connection (tickets, conn.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "comm/comm.h"
#include "comm/comm_hang.h"
#include "host/host.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"
#include "util/names.h"
#include "util/proc.h"

#define CHECK_INTERVAL_MS 100
/* w->blocked while an item waits for its turn on a connection (an earlier item holds it). */
#define BLOCKED_ON_TURN (-2)
#define SCRATCH_BUFS (WEFT_PRIM_MAX_PEERS + 1)

typedef struct {
  struct weft_host* host;
  int index;
  pthread_t thread;
  int started;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  weft_work *in_head, *in_tail; /* submitted, not yet taken */
  int incoming;                 /* hint, read without the lock */
  int stop;
  char* scratch_mem;
  char* scratch[SCRATCH_BUFS];
} host_channel;

struct weft_host {
  struct ncclComm* comm;
  weft_work_done_fn done;
  int nchannels;
  int timeout_ms;
  int caller_runs; /* WEFT_HOST_CALLER_RUNS */
  size_t scratch_bytes; /* per channel: SCRATCH_BUFS × the LL payload, mapped anonymously */
  int suspended;        /* the scratch is unmapped (host_exec_suspend) */
  host_channel* ch;
};

/* The scratch lives in its own anonymous mapping, so that suspend gives the pages back to the
 * system (a malloc'ed block may stay in the heap). */
static ncclResult_t scratch_map(weft_host* h, host_channel* c) {
  void* p = mmap(NULL, h->scratch_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    WARN("rank %d: cannot map channel %d's scratch (%zu bytes): %s", h->comm->rank, c->index,
         h->scratch_bytes, strerror(errno));
    return ncclSystemError;
  }
  c->scratch_mem = p;
  size_t each = h->scratch_bytes / SCRATCH_BUFS;
  for (int b = 0; b < SCRATCH_BUFS; b++) c->scratch[b] = c->scratch_mem + (size_t)b * each;
  return ncclSuccess;
}

static void scratch_unmap(weft_host* h, host_channel* c) {
  if (c->scratch_mem) munmap(c->scratch_mem, h->scratch_bytes);
  c->scratch_mem = NULL;
  for (int b = 0; b < SCRATCH_BUFS; b++) c->scratch[b] = NULL;
}

/* ---- work items ---- */

static void describe_wait(const weft_work* w, char* buf, size_t len) {
  if (w->blocked >= 0 && w->conns[w->blocked]) {
    const weft_conn* c = w->conns[w->blocked];
    snprintf(buf, len, "%s rank %d (channel %d, %s, step %llu)",
             c->is_send ? "room to send to" : "data from", c->peer, c->channel,
             c->proto == NCCL_PROTO_LL ? "LL" : "Simple", (unsigned long long)c->step);
  } else {
    snprintf(buf, len, "its turn on channel %d", w->channel);
  }
}

static void finish(const struct weft_host* h, weft_work* w, ncclResult_t res) {
  for (int i = 0; i < WEFT_WORK_MAX_CONNS; i++) {
    weft_conn* c = w->conns[i];
    if (!c) continue;
    /* A connection left mid-operation cannot carry later ones correctly. */
    if (res != ncclSuccess) {
      int ok = ncclSuccess;
      __atomic_compare_exchange_n(&c->error, &ok, (int)res, 0, __ATOMIC_RELEASE,
                                  __ATOMIC_RELAXED);
      int none = 0; /* and the peer's end, when it shares the control block (shm) */
      __atomic_compare_exchange_n(&c->ctrl->broken, &none, WEFT_CONN_BROKEN_FAILED, 0,
                                  __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    c->ticket_serving++;
  }
  h->done(w, res);
}

/* 2 done, 1 moved, 0 waiting, -1 failed (*res). */
static int work_step(host_channel* ch, weft_work* w, ncclResult_t* res) {
  if (w->pc[0] == 0 && w->pc[1] == 0) {
    for (int i = 0; i < WEFT_WORK_MAX_CONNS; i++) {
      weft_conn* c = w->conns[i];
      if (c && c->ticket_serving != w->tickets[i]) {
        w->blocked = BLOCKED_ON_TURN;
        return 0;
      }
    }
  }
  int moved = 0;
  for (int s = 0; s < w->nstreams; s++) {
    /* A bounded batch per visit keeps the other items of the channel moving. */
    for (int k = 0; k < 2 * WEFT_NSTEPS && w->pc[s] < w->npc[s]; k++) {
      if (s == 1 && w->down_after_up && w->pc[1] >= w->pc[0]) break;
      weft_prim p;
      work_prim(w, s, w->pc[s], &p);
      int r = host_prim_try(w, &p, ch->scratch, res);
      if (r < 0) return -1;
      if (r == 0) break;
      w->pc[s]++;
      moved = 1;
    }
  }
  int done = 1;
  for (int s = 0; s < w->nstreams; s++)
    if (w->pc[s] < w->npc[s]) done = 0;
  if (done) return 2;
  return moved;
}

/* An item with several streams (a tree's reduce and broadcast) waits on one connection per
 * unfinished stream, and w->blocked names only the last one tried: a dead peer on another
 * stream (a child whose data the reduce still needs, while the broadcast waits on a live
 * parent) would go unseen, and every rank would wait on a live one until WEFT_TIMEOUT_MS.
 * When some connection's peer process is gone, try each unfinished stream once: 1 when one
 * of them waits on a dead peer (w->blocked names it), -1 on a failure (*res), 0 otherwise
 * (a stream that could move did: w moved). */
static int stream_waits_on_dead(host_channel* ch, weft_work* w, ncclResult_t* res) {
  int any_dead = 0;
  for (int i = 0; i < WEFT_WORK_MAX_CONNS && !any_dead; i++)
    if (w->conns[i] && w->conns[i]->watch_pid && !proc_alive(w->conns[i]->watch_pid)) any_dead = 1;
  if (!any_dead) return 0;
  for (int s = 0; s < w->nstreams; s++) {
    if (w->pc[s] >= w->npc[s]) continue;
    if (s == 1 && w->down_after_up && w->pc[1] >= w->pc[0]) continue; /* waits on stream 0 */
    weft_prim p;
    work_prim(w, s, w->pc[s], &p);
    int r = host_prim_try(w, &p, ch->scratch, res);
    if (r < 0) return -1;
    if (r > 0) {
      w->pc[s]++;
      return 0;
    }
    if (w->blocked >= 0 && w->conns[w->blocked] && w->conns[w->blocked]->watch_pid &&
        !proc_alive(w->conns[w->blocked]->watch_pid))
      return 1;
  }
  return 0;
}

/* w waits on w->blocked, whose peer's process has exited: WARN, ncclRemoteError, 1. */
static int fail_dead_peer(weft_work* w, ncclResult_t* res) {
  char what[160];
  describe_wait(w, what, sizeof what);
  WARN("rank %d: %s (seq %llu) was waiting for %s, and that rank's process (pid %d) has exited",
       w->rank, weft_func_name(w->op->func), (unsigned long long)w->op->seq, what,
       w->conns[w->blocked]->watch_pid);
  *res = ncclRemoteError;
  return 1;
}

/* Periodic checks of a waiting item: dead peer, timeout. 1 when it must fail (*res). */
static int work_check(host_channel* ch, weft_work* w, uint64_t now, ncclResult_t* res) {
  struct weft_host* h = ch->host;
  /* Waiting for an earlier item is not waiting for a peer: that item has its own bound. */
  if (w->idle_since_ms == 0 || w->blocked == BLOCKED_ON_TURN) {
    w->idle_since_ms = now;
    return 0;
  }
  char what[160];
  if (w->blocked >= 0 && w->conns[w->blocked] && now - w->idle_since_ms >= CHECK_INTERVAL_MS) {
    const weft_conn* c = w->conns[w->blocked]; /* for the hang report (comm_hang.c) */
    comm_hang_note_wait(w->comm, c->peer, c->channel, c->is_send, c->proto, c->step);
  }
  if (w->blocked >= 0 && w->conns[w->blocked] && w->conns[w->blocked]->watch_pid &&
      !proc_alive(w->conns[w->blocked]->watch_pid)) {
    /* What it sent before it left is still in shared memory, and may have landed since this
     * item last looked (a peer that finished, destroyed its communicator and exited): look
     * again before calling the wait failed. */
    int r = work_step(ch, w, res);
    if (r < 0) return 1;
    if (r > 0) { /* moved or done: the next turn goes on (or ends it) */
      w->idle_since_ms = now;
      return 0;
    }
    if (w->blocked < 0 || !w->conns[w->blocked] || !w->conns[w->blocked]->watch_pid ||
        proc_alive(w->conns[w->blocked]->watch_pid))
      return 0; /* it now waits on another peer, which is alive */
    return fail_dead_peer(w, res);
  }
  if (w->nstreams > 1 && now - w->idle_since_ms >= CHECK_INTERVAL_MS) {
    int r = stream_waits_on_dead(ch, w, res);
    if (r < 0) return 1;
    if (r > 0) return fail_dead_peer(w, res);
  }
  /* The peer's side of this receive waiting on the other protocol's connection. */
  if (now - w->idle_since_ms >= CHECK_INTERVAL_MS && w->blocked >= 0 && w->conns[w->blocked] &&
      !w->conns[w->blocked]->is_send && host_sig_check_sibling(w, w->blocked, res))
    return 1;
  if (now - w->idle_since_ms > (uint64_t)h->timeout_ms) {
    describe_wait(w, what, sizeof what);
    WARN("rank %d: %s (seq %llu) waited %d ms for %s: timed out (WEFT_TIMEOUT_MS)", w->rank,
         weft_func_name(w->op->func), (unsigned long long)w->op->seq, h->timeout_ms, what);
    *res = ncclRemoteError;
    return 1;
  }
  return 0;
}

static void fail_all(const struct weft_host* h, weft_work** head, ncclResult_t res) {
  while (*head) {
    weft_work* w = *head;
    *head = w->next;
    finish(h, w, res);
  }
}

/* The items one thread runs, in launch order, and its back-off state. */
typedef struct {
  weft_work *head, *tail;
  weft_backoff bo;
  uint64_t next_check;
} item_list;

static void unlink_item(item_list* l, weft_work* prev, weft_work* w) {
  if (prev)
    prev->next = w->next;
  else
    l->head = w->next;
  if (l->tail == w) l->tail = prev;
}

/* One turn over l's items on ch: each steps if its FIFOs allow, the finished and failed ones
 * end (done), an abort fails them all, and every CHECK_INTERVAL_MS the waiting ones are checked
 * (dead peer, timeout). Backs off when nothing moved. */
static void run_turn(host_channel* ch, item_list* l) {
  struct ncclComm* comm = ch->host->comm;
  int moved = 0;
  weft_work *prev = NULL, *w = l->head;
  while (w) {
    ncclResult_t res = ncclSuccess;
    int r = work_step(ch, w, &res);
    if (r == 1) {
      moved = 1;
      w->idle_since_ms = 0;
    }
    if (r == 2 || r < 0) {
      weft_work* next = w->next;
      unlink_item(l, prev, w);
      finish(ch->host, w, r == 2 ? ncclSuccess : res);
      moved = 1;
      w = next;
      continue;
    }
    prev = w;
    w = w->next;
  }
  if (__atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) && l->head) {
    INFO(NCCL_COLL, "rank %d: channel %d: aborting its operations", comm->rank, ch->index);
    fail_all(ch->host, &l->head, ncclRemoteError);
    l->tail = NULL;
    return;
  }
  /* Checked whether or not something moved: one busy item must not hide a stuck one. */
  uint64_t now = clock_ms();
  if (now >= l->next_check) {
    l->next_check = now + CHECK_INTERVAL_MS;
    prev = NULL;
    w = l->head;
    while (w) {
      ncclResult_t res = ncclSuccess;
      if (work_check(ch, w, now, &res)) {
        weft_work* next = w->next;
        unlink_item(l, prev, w);
        finish(ch->host, w, res);
        w = next;
        continue;
      }
      prev = w;
      w = w->next;
    }
  }
  if (moved)
    l->bo.polls = 0;
  else
    backoff_wait(&l->bo);
}

static void* worker_main(void* arg) {
  host_channel* ch = arg;
  struct ncclComm* comm = ch->host->comm;
  weft_log_set_thread_rank(comm->rank, comm->cuda_dev);
  item_list l = {0};
  for (;;) {
    if (l.head == NULL || __atomic_load_n(&ch->incoming, __ATOMIC_ACQUIRE)) {
      pthread_mutex_lock(&ch->lock);
      while (l.head == NULL && ch->in_head == NULL && !ch->stop)
        pthread_cond_wait(&ch->cond, &ch->lock);
      if (ch->in_head) {
        if (l.tail)
          l.tail->next = ch->in_head;
        else
          l.head = ch->in_head;
        l.tail = ch->in_tail;
        ch->in_head = ch->in_tail = NULL;
      }
      __atomic_store_n(&ch->incoming, 0, __ATOMIC_RELAXED);
      int stop = ch->stop;
      pthread_mutex_unlock(&ch->lock);
      if (stop) {
        fail_all(ch->host, &l.head, ncclRemoteError);
        return NULL;
      }
      l.bo.polls = 0;
    }
    run_turn(ch, &l);
  }
}

int host_exec_caller_runs(const weft_host* h) { return h->caller_runs; }

void host_exec_run_here(weft_host* h, weft_work* works, int n) {
  host_channel* ch = &h->ch[0];
  item_list l = {0};
  for (int i = 0; i < n; i++) {
    weft_work* w = &works[i];
    if (w->channel != 0) continue;
    w->next = NULL;
    w->blocked = -1;
    w->idle_since_ms = 0;
    if (l.tail)
      l.tail->next = w;
    else
      l.head = w;
    l.tail = w;
  }
  while (l.head) run_turn(ch, &l);
}

ncclResult_t host_exec_create(struct ncclComm* comm, int nchannels, size_t ll_payload,
                              weft_work_done_fn done, weft_host** out) {
  weft_host* h = calloc(1, sizeof *h);
  host_channel* ch = h ? calloc((size_t)nchannels, sizeof *ch) : NULL;
  if (!ch) {
    free(h);
    WARN("rank %d: out of memory for %d host channels", comm->rank, nchannels);
    return ncclSystemError;
  }
  h->comm = comm;
  h->done = done;
  h->ch = ch;
  h->timeout_ms = (int)param_int(WEFT_PARAM_TIMEOUT_MS);
  h->caller_runs = param_int(WEFT_PARAM_HOST_CALLER_RUNS) != 0;
  h->scratch_bytes = SCRATCH_BUFS * (ll_payload > 0 ? ll_payload : 1);
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < nchannels; i++) {
    host_channel* c = &ch[i];
    c->host = h;
    c->index = i;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    h->nchannels = i + 1;
    if ((res = scratch_map(h, c)) != ncclSuccess) break;
    int rc = pthread_create(&c->thread, NULL, worker_main, c);
    if (rc != 0) {
      WARN("rank %d: cannot start the worker of channel %d: %s", comm->rank, i, strerror(rc));
      res = ncclSystemError;
      break;
    }
    c->started = 1;
  }
  if (res != ncclSuccess) {
    host_exec_destroy(h);
    return res;
  }
  *out = h;
  return ncclSuccess;
}

void host_exec_submit(weft_host* h, weft_work* w) {
  host_channel* c = &h->ch[w->channel];
  w->next = NULL;
  w->blocked = -1;
  w->idle_since_ms = 0;
  pthread_mutex_lock(&c->lock);
  if (c->in_tail)
    c->in_tail->next = w;
  else
    c->in_head = w;
  c->in_tail = w;
  __atomic_store_n(&c->incoming, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

void host_exec_destroy(weft_host* h) {
  if (!h) return;
  for (int i = 0; i < h->nchannels; i++) {
    host_channel* c = &h->ch[i];
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    __atomic_store_n(&c->incoming, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
  for (int i = 0; i < h->nchannels; i++) {
    host_channel* c = &h->ch[i];
    if (c->started) pthread_join(c->thread, NULL);
    fail_all(h, &c->in_head, ncclRemoteError);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    scratch_unmap(h, c);
  }
  free(h->ch);
  free(h);
}

size_t host_exec_suspend(weft_host* h) {
  if (h->suspended) return 0;
  for (int i = 0; i < h->nchannels; i++) scratch_unmap(h, &h->ch[i]);
  h->suspended = 1;
  return (size_t)h->nchannels * h->scratch_bytes;
}

ncclResult_t host_exec_resume(weft_host* h) {
  if (!h->suspended) return ncclSuccess;
  for (int i = 0; i < h->nchannels; i++) {
    ncclResult_t res = scratch_map(h, &h->ch[i]);
    if (res != ncclSuccess) {
      for (int k = 0; k < i; k++) scratch_unmap(h, &h->ch[k]);
      return res;
    }
  }
  h->suspended = 0;
  return ncclSuccess;
}

size_t host_exec_mem_bytes(const weft_host* h) {
  return h ? (size_t)h->nchannels * h->scratch_bytes : 0;
}
