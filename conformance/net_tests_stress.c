/* Net tests, fifth group: several comms driven from two threads, and a peer that goes away in
 * the middle of a transfer (test() must then report an error, not hang and not report done). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net_suite.h"
#include "net_tests.h"

enum { TH_CONNS = 4, TH_THREADS = 2, TH_MSGS = 150, TH_MAX = 32768 };

static size_t th_len(int conn, int m) { return (size_t)((m * 7919 + conn * 104729) % TH_MAX) + 1; }
static uint64_t th_seed(int conn, int m) { return ((uint64_t)conn << 32) | (uint64_t)m; }

typedef struct {
  nt_side* s;
  int first;  /* first connection of this thread */
  int recv;   /* receiving side */
  conf_result result;
} th_arg;

/* Drives connections first, first+1 with one request in flight on each. */
static conf_result th_drive(th_arg* a) {
  nt_plugin* p = &a->s->plugin;
  enum { PER = TH_CONNS / TH_THREADS };
  void *buf[PER], *mh[PER], *req[PER];
  int msg[PER];
  for (int k = 0; k < PER; k++) {
    int c = a->first + k;
    void* comm = a->recv ? a->s->recv[c] : a->s->send[c];
    CONF_TRY(nt_alloc(TH_MAX, &buf[k]));
    CONF_TRY(nt_reg(p, comm, buf[k], TH_MAX, &mh[k]));
    msg[k] = 0;
    req[k] = NULL;
  }
  int remaining = PER * TH_MSGS;
  double deadline = nt_now() + nt_wait_bound((size_t)PER * TH_MSGS * TH_MAX);
  nt_backoff b = {0};
  while (remaining > 0) {
    int progress = 0;
    for (int k = 0; k < PER; k++) {
      int c = a->first + k;
      void* comm = a->recv ? a->s->recv[c] : a->s->send[c];
      if (msg[k] >= TH_MSGS) continue;
      size_t len = th_len(c, msg[k]);
      if (!req[k]) {
        if (a->recv) {
          void* data[1] = {buf[k]};
          size_t sizes[1] = {TH_MAX};
          int tags[1] = {c};
          void* mhs[1] = {mh[k]};
          void* ph[1] = {NULL};
          NT_CALL("irecv", p->api->irecv(comm, 1, data, sizes, tags, mhs, ph, &req[k]));
        } else {
          nt_fill(buf[k], len, th_seed(c, msg[k]));
          NT_CALL("isend", p->api->isend(comm, buf[k], len, c, mh[k], NULL, &req[k]));
        }
        if (req[k]) progress = 1;
        continue;
      }
      int done = 0, got = -1;
      NT_CALL("test", p->api->test(req[k], &done, &got));
      if (!done) continue;
      req[k] = NULL;
      if (a->recv) {
        char what[80];
        snprintf(what, sizeof what, "connection %d, message %d", c, msg[k] + 1);
        if (got != (int)len)
          return conf_fail("%s: %d bytes arrived, %zu sent", what, got, len);
        CONF_TRY(nt_check(buf[k], len, th_seed(c, msg[k]), what));
      }
      msg[k]++;
      remaining--;
      progress = 1;
    }
    if (progress) {
      b.polls = 0;
      continue;
    }
    if (nt_now() > deadline)
      return conf_fail("thread on connections %d-%d: %d messages left after %.0f s", a->first,
                       a->first + PER - 1, remaining,
                       nt_wait_bound((size_t)PER * TH_MSGS * TH_MAX));
    nt_backoff_wait(&b);
  }
  for (int k = 0; k < PER; k++) {
    int c = a->first + k;
    CONF_TRY(nt_dereg(p, a->recv ? a->s->recv[c] : a->s->send[c], mh[k]));
  }
  return CONF_PASS;
}

static void* th_main(void* x) {
  th_arg* a = x;
  a->result = th_drive(a);
  return NULL;
}

static conf_result th_side(nt_side* s, int recv) {
  pthread_t t[TH_THREADS];
  th_arg a[TH_THREADS];
  for (int i = 0; i < TH_THREADS; i++) {
    a[i] = (th_arg){s, i * (TH_CONNS / TH_THREADS), recv, CONF_FAIL};
    if (pthread_create(&t[i], NULL, th_main, &a[i]) != 0)
      return conf_fail("pthread_create failed");
  }
  conf_result r = CONF_PASS;
  for (int i = 0; i < TH_THREADS; i++) {
    pthread_join(t[i], NULL);
    if (a[i].result != CONF_PASS && r == CONF_PASS) r = a[i].result;
  }
  return r;
}

static conf_result th_recv(nt_side* s) { return th_side(s, 1); }
static conf_result th_send(nt_side* s) { return th_side(s, 0); }

static conf_result t_threads(void* x) {
  (void)x;
  nt_pair_opts o = {.nconns = TH_CONNS};
  return nt_run_pair(&o, th_recv, th_send);
}

/* ---- a peer that leaves mid-transfer ----
 * The side that stays posts its half of one large transfer; the side that leaves posts the other
 * half, polls a little and exits. Only then does the staying side poll test(), so the transfer
 * cannot have completed: at most the kernel's socket buffers' worth moved (the message is sized
 * well past them). test() must then report an error within the wait bound. */

/* Third field of a /proc/sys/net/ipv4/tcp_[rw]mem file (the autotuning maximum), 0 if unknown. */
static size_t tcp_mem_max(const char* path) {
  FILE* f = fopen(path, "r");
  unsigned long long a = 0, b = 0, c = 0;
  if (f) {
    if (fscanf(f, "%llu %llu %llu", &a, &b, &c) != 3) c = 0;
    fclose(f);
  }
  return (size_t)c;
}

#define EXIT_SEED 0xE817ull

static size_t exit_len(void) {
  size_t buffers = tcp_mem_max("/proc/sys/net/ipv4/tcp_rmem") +
                   tcp_mem_max("/proc/sys/net/ipv4/tcp_wmem");
  size_t len = (size_t)64 << 20;
  while (len < 4 * buffers && len < ((size_t)1 << 30)) len *= 2;
  return len;
}

/* Poll test() on req until it reports an error (PASS), or fail when it reports done or stays
 * pending for the wait bound. */
static conf_result done_before_exit(const void* buf, size_t len, int size, int send);

static conf_result expect_error(nt_plugin* p, void* req, const void* buf, size_t len, int send) {
  const char* what = send ? "isend" : "irecv";
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  for (;;) {
    int done = 0, size = -1;
    ncclResult_t r;
    NT_CALL_RES("test", p->api->test(req, &done, &size), r);
    if (r != ncclSuccess) {
      conf_note("%s: test returned %s after the peer left", what, nt_result_str(r));
      return CONF_PASS;
    }
    if (done) return done_before_exit(buf, len, size, send);
    if (nt_now() > deadline)
      return conf_fail("%s: test still pending %.0f s after the peer left (a dead peer must "
                       "surface as an error)",
                       what, nt_ctx->wait_s);
    nt_backoff_wait(&b);
  }
}

/* A post that kept returning a NULL request: some plugins (libfabric rxm among them) take a send
 * only once the peer has made progress, which the leaving side cannot count on. The test then
 * never reaches a transfer cut short: inconclusive, not a defect. */
static conf_result post_or_inconclusive(conf_result r) {
  if (r == CONF_FAIL && strstr(conf_reason(), "kept returning a NULL request")) {
    char why[1024];
    snprintf(why, sizeof why, "%s", conf_reason());
    conf_clear_reason();
    return conf_inconclusive("the transfer never started (%s; the plugin seems to need the "
                             "peer's progress before it takes the request), so a peer leaving "
                             "mid-transfer could not be staged",
                             why);
  }
  return r;
}

/* A receive that completed before the sender was gone. A fast transport (shared memory with
 * single-copy reads) can move the whole message in the few calls the leaving side makes: if the
 * message arrived whole and intact, no transfer was cut short and the test could not be staged
 * (inconclusive); a completion with missing or wrong bytes is a defect. A send that completes
 * while the receiver leaves cannot be checked from this side, and stays a failure. */
static conf_result done_before_exit(const void* buf, size_t len, int size, int send) {
  if (!send && size == (int)len && nt_check(buf, len, EXIT_SEED, "message") == CONF_PASS)
    return conf_inconclusive("the whole %zu-byte message arrived intact before the sender left, "
                             "so no transfer was cut short (a faster transport than the test "
                             "can outrun)",
                             len);
  conf_clear_reason();
  return conf_fail("%s: test reported done (%d bytes) although the peer leaves before %zu bytes "
                   "can move%s",
                   send ? "isend" : "irecv", size, len,
                   send ? "" : ", and the bytes are not the sender's");
}

static conf_result leave_midway(nt_side* s, int send) {
  nt_plugin* p = &s->plugin;
  size_t len = exit_len();
  void *buf, *mh, *req;
  void* comm = send ? s->send[0] : s->recv[0];
  CONF_TRY(nt_alloc(len, &buf));
  CONF_TRY(nt_reg(p, comm, buf, len, &mh));
  if (send) nt_fill(buf, len, EXIT_SEED);
  char ready;
  CONF_TRY(nt_ctl_recv(s, &ready, 1)); /* the other side has posted */
  if (send)
    CONF_TRY(post_or_inconclusive(nt_isend(p, comm, buf, len, 5, mh, &req)));
  else
    CONF_TRY(post_or_inconclusive(nt_irecv(p, comm, buf, len, 5, mh, &req)));
  /* Leave at once, without a test() call: on a single-copy transport (libfabric shm reads the
   * sender's pages directly) a few test() calls are enough to move the whole message. */
  (void)req;
  _exit(0);
}

static conf_result stay(nt_side* s, int send) {
  nt_plugin* p = &s->plugin;
  size_t len = exit_len();
  s->peer_may_exit = 1;
  void *buf, *mh, *req;
  void* comm = send ? s->send[0] : s->recv[0];
  CONF_TRY(nt_alloc(len, &buf));
  CONF_TRY(nt_reg(p, comm, buf, len, &mh));
  if (send) {
    nt_fill(buf, len, 1);
    CONF_TRY(post_or_inconclusive(nt_isend(p, comm, buf, len, 5, mh, &req)));
  } else {
    CONF_TRY(post_or_inconclusive(nt_irecv(p, comm, buf, len, 5, mh, &req)));
  }
  char ready = 1;
  CONF_TRY(nt_ctl_send(s, &ready, 1));
  /* Keep polling while the peer posts and leaves, as NCCL's proxy does: a plugin may need this
   * side's progress before the peer's post is taken. An error before the peer has gone is not
   * judged; the peer giving up without a transfer makes the test inconclusive. */
  double deadline = nt_now() + nt_ctx->wait_s;
  int errored = 0;
  nt_backoff b = {0};
  for (;;) {
    conf_result pr = nt_peer_reported(s);
    if (pr == CONF_INCONCLUSIVE) return conf_inconclusive("peer: %s", nt_peer_reason());
    if (pr == CONF_FAIL || pr == CONF_SKIP) return conf_fail("peer: %s", nt_peer_reason());
    if (nt_peer_exited(s)) break;
    if (!errored) {
      int done = 0, size = -1;
      ncclResult_t r;
      NT_CALL_RES("test", p->api->test(req, &done, &size), r);
      if (r != ncclSuccess) errored = 1;
      if (done) return done_before_exit(buf, len, size, send);
    }
    if (nt_now() > deadline) return conf_fail("the peer did not exit within %.0f s", nt_ctx->wait_s);
    nt_backoff_wait(&b);
  }
  if (!errored) CONF_TRY(expect_error(p, req, buf, len, send));
  /* The comm is broken; deregistering and closing it must still work (NCCL's abort path). */
  CONF_TRY(nt_dereg(p, comm, mh));
  return CONF_PASS;
}

static conf_result sender_leaves(nt_side* s) { return leave_midway(s, 1); }
static conf_result receiver_stays(nt_side* s) { return stay(s, 0); }
static conf_result receiver_leaves(nt_side* s) { return leave_midway(s, 0); }
static conf_result sender_stays(nt_side* s) { return stay(s, 1); }

static conf_result t_sender_exits(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, receiver_stays, sender_leaves);
}

static conf_result t_receiver_exits(void* x) {
  (void)x;
  nt_pair_opts o = {.bidir = 1};
  return nt_run_pair(&o, sender_stays, receiver_leaves);
}

const conf_test net_tests_stress[] = {
    {"net_two_threads_drive_separate_comms", t_threads, 0},
    {"net_sender_exit_mid_transfer_fails_receiver_test", t_sender_exits, 0},
    {"net_receiver_exit_mid_transfer_fails_sender_test", t_receiver_exits, 0},
};
const int net_tests_stress_count = sizeof net_tests_stress / sizeof net_tests_stress[0];
