/* Net tests, third group: the data path between two processes. Message sizes with every byte
 * checked, receives larger than the send, the full request window, FIFO matching under
 * back-pressure, calls staying prompt while the receiver is idle, grouped receives with tags. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "net_suite.h"
#include "net_tests.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

/* ---- one message of a given size, repeated ---- */

typedef struct {
  size_t len;      /* bytes sent */
  size_t recv_len; /* bytes the receive is posted with (>= len) */
  int reps;
} size_arg;

static int reps_for(size_t len) { return len <= 2 * MiB ? 3 : 1; }

static conf_result size_recv(nt_side* s) {
  const size_arg* a = s->arg;
  nt_plugin* p = &s->plugin;
  size_t cap = a->recv_len ? a->recv_len : 4096;
  void *buf, *mh;
  CONF_TRY(nt_alloc(cap, &buf));
  CONF_TRY(nt_reg(p, s->recv[0], buf, cap, &mh));
  for (int i = 0; i < a->reps; i++) {
    memset(buf, 0xEE, a->len < cap ? a->len + 1 : cap);
    int got = -1;
    CONF_TRY(nt_recv_msg(p, s->recv[0], buf, a->recv_len, 3, mh, &got));
    if (got < 0 || (size_t)got != a->len)
      return conf_fail("test reported %d bytes received; %zu were sent into a %zu-byte receive",
                       got, a->len, a->recv_len);
    char what[64];
    snprintf(what, sizeof what, "message %d of %zu bytes", i + 1, a->len);
    CONF_TRY(nt_check(buf, a->len, 0x5EED0000ull + (uint64_t)i, what));
  }
  CONF_TRY(nt_dereg(p, s->recv[0], mh));
  nt_free(buf, cap);
  return CONF_PASS;
}

static conf_result size_send(nt_side* s) {
  const size_arg* a = s->arg;
  nt_plugin* p = &s->plugin;
  size_t cap = a->len ? a->len : 4096;
  void *buf, *mh;
  CONF_TRY(nt_alloc(cap, &buf));
  CONF_TRY(nt_reg(p, s->send[0], buf, cap, &mh));
  for (int i = 0; i < a->reps; i++) {
    nt_fill(buf, a->len, 0x5EED0000ull + (uint64_t)i);
    CONF_TRY(nt_send_msg(p, s->send[0], buf, a->len, 3, mh));
  }
  CONF_TRY(nt_dereg(p, s->send[0], mh));
  nt_free(buf, cap);
  return CONF_PASS;
}

static conf_result run_size(size_t len) {
  size_arg a = {len, len, reps_for(len)};
  nt_pair_opts o = {.arg = &a};
  return nt_run_pair(&o, size_recv, size_send);
}

static conf_result t_size_0(void* x) { (void)x; return run_size(0); }
static conf_result t_size_1(void* x) { (void)x; return run_size(1); }
static conf_result t_size_4095(void* x) { (void)x; return run_size(4095); }
static conf_result t_size_4096(void* x) { (void)x; return run_size(4096); }
static conf_result t_size_1m1(void* x) { (void)x; return run_size(MiB + 1); }
static conf_result t_size_64m(void* x) { (void)x; return run_size(64 * MiB); }

static conf_result t_size_1g(void* x) {
  (void)x;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  size_t maxp2p = p.props.maxP2pBytes;
  CONF_TRY(nt_close(&p));
  if (maxp2p < GiB)
    return conf_skip("the plugin's maxP2pBytes is %zu, below 1 GiB", maxp2p);
  size_t avail = nt_mem_available();
  /* One GiB in each process, plus room for the plugin and the rest of the machine. */
  if (avail < 3 * GiB)
    return conf_skip("needs 3 GiB of available memory, %.1f GiB available",
                     (double)avail / (double)GiB);
  return run_size(GiB);
}

/* ---- receive larger than the send ---- */

static const size_t larger_sizes[] = {0, 1, 1000, 65536, MiB + 3};

static conf_result larger_recv(nt_side* s) {
  for (size_t k = 0; k < sizeof larger_sizes / sizeof larger_sizes[0]; k++) {
    size_arg a = {larger_sizes[k], 2 * larger_sizes[k] + 4096, 1};
    s->arg = &a;
    CONF_TRY(size_recv(s));
  }
  return CONF_PASS;
}

static conf_result larger_send(nt_side* s) {
  for (size_t k = 0; k < sizeof larger_sizes / sizeof larger_sizes[0]; k++) {
    size_arg a = {larger_sizes[k], 0, 1};
    s->arg = &a;
    CONF_TRY(size_send(s));
  }
  return CONF_PASS;
}

static conf_result t_recv_larger(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, larger_recv, larger_send);
}

/* ---- the full request window ---- */

enum { MAXW = NCCL_NET_MAX_REQUESTS };

static size_t window_len(int i) { return 1 + (size_t)i * 4099; }

typedef struct {
  void* buf[MAXW];
  void* mh[MAXW];
  void* req[MAXW];
} window_bufs;

static conf_result window_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  int n = p->max_requests;
  window_bufs w;
  for (int i = 0; i < n; i++) {
    CONF_TRY(nt_alloc(window_len(i), &w.buf[i]));
    memset(w.buf[i], 0xEE, window_len(i));
    CONF_TRY(nt_reg(p, s->recv[0], w.buf[i], window_len(i), &w.mh[i]));
  }
  for (int i = 0; i < n; i++)
    CONF_TRY(nt_irecv(p, s->recv[0], w.buf[i], window_len(i), 9, w.mh[i], &w.req[i]));
  /* Tested newest first: a request may be tested in any order. */
  for (int i = n - 1; i >= 0; i--) {
    int got = -1;
    char what[64];
    snprintf(what, sizeof what, "receive %d of %d in flight", i + 1, n);
    CONF_TRY(nt_wait(p, w.req[i], &got, window_len(i), what));
    if (got != (int)window_len(i))
      return conf_fail("%s: test reported %d bytes, %zu were sent", what, got, window_len(i));
    CONF_TRY(nt_check(w.buf[i], window_len(i), 700 + (uint64_t)i, what));
  }
  for (int i = 0; i < n; i++) CONF_TRY(nt_dereg(p, s->recv[0], w.mh[i]));
  return CONF_PASS;
}

static conf_result window_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  int n = p->max_requests;
  window_bufs w;
  for (int i = 0; i < n; i++) {
    CONF_TRY(nt_alloc(window_len(i), &w.buf[i]));
    nt_fill(w.buf[i], window_len(i), 700 + (uint64_t)i);
    CONF_TRY(nt_reg(p, s->send[0], w.buf[i], window_len(i), &w.mh[i]));
  }
  /* Every send posted before any is tested. */
  for (int i = 0; i < n; i++)
    CONF_TRY(nt_isend(p, s->send[0], w.buf[i], window_len(i), 9, w.mh[i], &w.req[i]));
  for (int i = 0; i < n; i++) {
    char what[64];
    snprintf(what, sizeof what, "send %d of %d in flight", i + 1, n);
    CONF_TRY(nt_wait(p, w.req[i], NULL, window_len(i), what));
  }
  for (int i = 0; i < n; i++) CONF_TRY(nt_dereg(p, s->send[0], w.mh[i]));
  return CONF_PASS;
}

static conf_result t_window(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, window_recv, window_send);
}

/* ---- FIFO under back-pressure ---- */

enum { FIFO_MSGS = 400, FIFO_MAX = 65536 };

static size_t fifo_len(int i) { return (size_t)((i * 2654435761u) % FIFO_MAX) * (i % 7 != 0); }

static conf_result fifo_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  enum { DEPTH = 2 };
  void *buf[DEPTH], *mh[DEPTH], *req[DEPTH];
  for (int k = 0; k < DEPTH; k++) {
    CONF_TRY(nt_alloc(FIFO_MAX, &buf[k]));
    CONF_TRY(nt_reg(p, s->recv[0], buf[k], FIFO_MAX, &mh[k]));
  }
  int posted = 0;
  for (; posted < DEPTH; posted++)
    CONF_TRY(nt_irecv(p, s->recv[0], buf[posted], FIFO_MAX, 4, mh[posted], &req[posted]));
  for (int i = 0; i < FIFO_MSGS; i++) {
    int k = i % DEPTH, got = -1;
    char what[64];
    snprintf(what, sizeof what, "message %d of %d", i + 1, FIFO_MSGS);
    CONF_TRY(nt_wait(p, req[k], &got, FIFO_MAX, what));
    if (got != (int)fifo_len(i))
      return conf_fail("%s: %d bytes arrived where message %d has %zu (out of order?)", what, got,
                       i + 1, fifo_len(i));
    CONF_TRY(nt_check(buf[k], fifo_len(i), 9000 + (uint64_t)i, what));
    /* A slow receiver: the sender runs into back-pressure. */
    if (i % 16 == 15) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
    if (posted < FIFO_MSGS) {
      CONF_TRY(nt_irecv(p, s->recv[0], buf[k], FIFO_MAX, 4, mh[k], &req[k]));
      posted++;
    }
  }
  for (int k = 0; k < DEPTH; k++) CONF_TRY(nt_dereg(p, s->recv[0], mh[k]));
  return CONF_PASS;
}

static conf_result fifo_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  int depth = p->max_requests;
  void *buf[MAXW], *mh[MAXW], *req[MAXW];
  int msg[MAXW];
  for (int k = 0; k < depth; k++) {
    CONF_TRY(nt_alloc(FIFO_MAX, &buf[k]));
    CONF_TRY(nt_reg(p, s->send[0], buf[k], FIFO_MAX, &mh[k]));
    req[k] = NULL;
  }
  int next = 0, done_count = 0, nulls = 0;
  double deadline = nt_now() + nt_wait_bound((size_t)FIFO_MSGS * FIFO_MAX);
  nt_backoff b = {0};
  while (done_count < FIFO_MSGS) {
    int progress = 0;
    /* Post into free slots, in message order; a NULL request is retried with the same
     * message, which must still arrive in its place. */
    for (int k = 0; k < depth && next < FIFO_MSGS; k++) {
      if (req[k]) continue;
      nt_fill(buf[k], fifo_len(next), 9000 + (uint64_t)next);
      NT_CALL("isend", p->api->isend(s->send[0], buf[k], fifo_len(next), 4, mh[k], NULL, &req[k]));
      if (!req[k]) {
        nulls++;
        break;
      }
      msg[k] = next++;
      progress = 1;
    }
    for (int k = 0; k < depth; k++) {
      if (!req[k]) continue;
      int done = 0;
      int size[1];
      NT_CALL("test", p->api->test(req[k], &done, size));
      if (done) {
        req[k] = NULL;
        done_count++;
        progress = 1;
        (void)msg[k];
      }
    }
    if (progress) {
      b.polls = 0;
    } else {
      if (nt_now() > deadline)
        return conf_fail("%d of %d sends complete after %.0f s", done_count, FIFO_MSGS,
                         nt_wait_bound((size_t)FIFO_MSGS * FIFO_MAX));
      nt_backoff_wait(&b);
    }
  }
  conf_note("isend returned a NULL request %d times", nulls);
  for (int k = 0; k < depth; k++) CONF_TRY(nt_dereg(p, s->send[0], mh[k]));
  return CONF_PASS;
}

static conf_result t_fifo(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, fifo_recv, fifo_send);
}

/* ---- prompt calls while the receiver is idle ---- */

enum { BP_LEN = 1 << 20 };

static conf_result bp_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  int n = p->max_requests;
  char go;
  /* Idle until the sender has spent a second posting and testing. */
  CONF_TRY(nt_ctl_recv(s, &go, 1));
  void *buf, *mh, *req;
  CONF_TRY(nt_alloc(BP_LEN, &buf));
  CONF_TRY(nt_reg(p, s->recv[0], buf, BP_LEN, &mh));
  for (int i = 0; i < n; i++) {
    int got = -1;
    CONF_TRY(nt_irecv(p, s->recv[0], buf, BP_LEN, 2, mh, &req));
    CONF_TRY(nt_wait(p, req, &got, BP_LEN, "receive after the idle period"));
    if (got != BP_LEN) return conf_fail("message %d: %d bytes arrived, %d sent", i + 1, got, BP_LEN);
    CONF_TRY(nt_check(buf, BP_LEN, 40 + (uint64_t)i, "message after the idle period"));
  }
  return nt_dereg(p, s->recv[0], mh);
}

static conf_result bp_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  int n = p->max_requests;
  void *buf[MAXW], *mh[MAXW], *req[MAXW];
  for (int i = 0; i < n; i++) {
    CONF_TRY(nt_alloc(BP_LEN, &buf[i]));
    nt_fill(buf[i], BP_LEN, 40 + (uint64_t)i);
    CONF_TRY(nt_reg(p, s->send[0], buf[i], BP_LEN, &mh[i]));
    req[i] = NULL;
  }
  /* For a second: post what the plugin takes and test everything; every call is timed. */
  int posted = 0, nulls = 0, done_count = 0;
  int done_flags[MAXW] = {0};
  double until = nt_now() + 1.0;
  while (nt_now() < until) {
    if (posted < n) {
      NT_CALL("isend", p->api->isend(s->send[0], buf[posted], BP_LEN, 2, mh[posted], NULL,
                                     &req[posted]));
      if (req[posted])
        posted++;
      else
        nulls++;
    }
    for (int i = 0; i < posted; i++) {
      if (done_flags[i]) continue;
      int size[1];
      NT_CALL("test", p->api->test(req[i], &done_flags[i], size));
      if (done_flags[i]) done_count++;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  conf_note("while the receiver was idle: %d posted, %d NULL requests, %d completed", posted,
            nulls, done_count);
  char go = 1;
  CONF_TRY(nt_ctl_send(s, &go, 1));
  for (; posted < n; posted++)
    CONF_TRY(nt_isend(p, s->send[0], buf[posted], BP_LEN, 2, mh[posted], &req[posted]));
  for (int i = 0; i < n; i++)
    if (!done_flags[i]) CONF_TRY(nt_wait(p, req[i], NULL, BP_LEN, "send after the idle period"));
  for (int i = 0; i < n; i++) CONF_TRY(nt_dereg(p, s->send[0], mh[i]));
  return CONF_PASS;
}

static conf_result t_backpressure(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, bp_recv, bp_send);
}

/* ---- grouped receives ---- */

enum { GRP_MAX = 8 };

static size_t grp_cap(int round, int slot) { return 1000 * (size_t)(slot + 1) + (size_t)round; }
static size_t grp_len(int round, int slot) { return grp_cap(round, slot) - (size_t)(17 * slot); }
static int grp_tag(int slot) { return 100 + slot; }
static uint64_t grp_seed(int round, int slot) { return 50000 + (uint64_t)round * 64 + (uint64_t)slot; }

static conf_result grp_skip(nt_side* s) {
  if (s->plugin.props.maxRecvs <= 1)
    return conf_skip("maxRecvs is %d: the plugin does not group receives",
                     s->plugin.props.maxRecvs);
  return CONF_PASS;
}

static conf_result grp_recv(nt_side* s) {
  CONF_TRY(grp_skip(s));
  nt_plugin* p = &s->plugin;
  int n = p->props.maxRecvs > GRP_MAX ? GRP_MAX : p->props.maxRecvs;
  int rounds = p->max_requests;
  static void* buf[MAXW][GRP_MAX];
  static void* mh[MAXW][GRP_MAX];
  void* req[MAXW];
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < n; j++) {
      CONF_TRY(nt_alloc(grp_cap(r, j), &buf[r][j]));
      memset(buf[r][j], 0xEE, grp_cap(r, j));
      CONF_TRY(nt_reg(p, s->recv[0], buf[r][j], grp_cap(r, j), &mh[r][j]));
    }
  /* Every grouped receive posted at once: the full window. */
  for (int r = 0; r < rounds; r++) {
    size_t sizes[GRP_MAX];
    int tags[GRP_MAX];
    void* ph[GRP_MAX] = {0};
    for (int j = 0; j < n; j++) {
      sizes[j] = grp_cap(r, j);
      tags[j] = grp_tag(j);
    }
    double deadline = nt_now() + nt_ctx->wait_s;
    nt_backoff b = {0};
    for (req[r] = NULL; !req[r];) {
      NT_CALL("irecv", p->api->irecv(s->recv[0], n, buf[r], sizes, tags, mh[r], ph, &req[r]));
      if (!req[r] && nt_now() > deadline)
        return conf_fail("irecv of %d grouped receives kept returning NULL", n);
      if (!req[r]) nt_backoff_wait(&b);
    }
  }
  for (int r = 0; r < rounds; r++) {
    int got[GRP_MAX];
    for (int j = 0; j < n; j++) got[j] = -1;
    char what[64];
    snprintf(what, sizeof what, "grouped receive %d", r + 1);
    CONF_TRY(nt_wait(p, req[r], got, 64 * 1024, what));
    for (int j = 0; j < n; j++) {
      if (got[j] != (int)grp_len(r, j))
        return conf_fail("%s, slot %d (tag %d): test reported %d bytes, %zu sent with that tag",
                         what, j, grp_tag(j), got[j], grp_len(r, j));
      char w2[96];
      snprintf(w2, sizeof w2, "%s, slot %d (tag %d)", what, j, grp_tag(j));
      CONF_TRY(nt_check(buf[r][j], grp_len(r, j), grp_seed(r, j), w2));
    }
  }
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < n; j++) CONF_TRY(nt_dereg(p, s->recv[0], mh[r][j]));
  return CONF_PASS;
}

static conf_result grp_send(nt_side* s) {
  CONF_TRY(grp_skip(s));
  nt_plugin* p = &s->plugin;
  int n = p->props.maxRecvs > GRP_MAX ? GRP_MAX : p->props.maxRecvs;
  int rounds = p->max_requests;
  static void* buf[MAXW][GRP_MAX];
  static void* mh[MAXW][GRP_MAX];
  static void* req[MAXW][GRP_MAX];
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < n; j++) {
      CONF_TRY(nt_alloc(grp_len(r, j), &buf[r][j]));
      nt_fill(buf[r][j], grp_len(r, j), grp_seed(r, j));
      CONF_TRY(nt_reg(p, s->send[0], buf[r][j], grp_len(r, j), &mh[r][j]));
    }
  /* Tags in reverse slot order; every send posted before any is tested (the send comm takes
   * NCCL_NET_MAX_REQUESTS x maxRecvs). */
  for (int r = 0; r < rounds; r++)
    for (int j = n - 1; j >= 0; j--)
      CONF_TRY(nt_isend(p, s->send[0], buf[r][j], grp_len(r, j), grp_tag(j), mh[r][j], &req[r][j]));
  for (int r = 0; r < rounds; r++)
    for (int j = n - 1; j >= 0; j--) CONF_TRY(nt_wait(p, req[r][j], NULL, 64 * 1024, "tagged send"));
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < n; j++) CONF_TRY(nt_dereg(p, s->send[0], mh[r][j]));
  return CONF_PASS;
}

static conf_result t_grouped(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, grp_recv, grp_send);
}

const conf_test net_tests_data[] = {
    {"net_message_of_0_bytes_arrives_intact", t_size_0, 0},
    {"net_message_of_1_byte_arrives_intact", t_size_1, 0},
    {"net_message_of_4095_bytes_arrives_intact", t_size_4095, 0},
    {"net_message_of_4096_bytes_arrives_intact", t_size_4096, 0},
    {"net_message_of_1MiB_plus_1_arrives_intact", t_size_1m1, 0},
    {"net_message_of_64MiB_arrives_intact", t_size_64m, 2},
    {"net_message_of_1GiB_arrives_intact", t_size_1g, 10},
    {"net_recv_larger_than_send_reports_sent_size", t_recv_larger, 0},
    {"net_full_request_window_in_flight_completes", t_window, 0},
    {"net_messages_keep_post_order_under_backpressure", t_fifo, 0},
    {"net_isend_does_not_block_while_receiver_is_idle", t_backpressure, 0},
    {"net_grouped_receive_fills_slots_by_tag", t_grouped, 0},
};
const int net_tests_data_count = sizeof net_tests_data / sizeof net_tests_data[0];
