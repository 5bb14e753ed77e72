/* Net tests, second group: the connection state machine (listen, connect, accept never block
 * and complete within bounded polls), several connections per listen comm, closing, and fds
 * over many connect/close cycles. */
#include <stdio.h>
#include <string.h>

#include "net_suite.h"
#include "net_tests.h"

static conf_result t_listen(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* l;
  CONF_TRY(nt_listen(&p, handle, &l));
  NT_CALL_SETUP("closeListen", p.api->closeListen(l));
  return nt_close(&p);
}

/* One message over (s, r) in this process: irecv first, then isend, both checked. */
static conf_result local_message(nt_plugin* p, void* s, void* r, size_t len, uint64_t seed) {
  void *sbuf, *rbuf, *smh, *rmh, *sreq, *rreq;
  CONF_TRY(nt_alloc(len, &sbuf));
  CONF_TRY(nt_alloc(len, &rbuf));
  nt_fill(sbuf, len, seed);
  memset(rbuf, 0xEE, len);
  CONF_TRY(nt_reg(p, s, sbuf, len, &smh));
  CONF_TRY(nt_reg(p, r, rbuf, len, &rmh));
  CONF_TRY(nt_irecv(p, r, rbuf, len, 7, rmh, &rreq));
  CONF_TRY(nt_isend(p, s, sbuf, len, 7, smh, &sreq));
  int rsize = -1, ssize = -1, sdone = 0, rdone = 0;
  double deadline = nt_now() + nt_wait_bound(len);
  nt_backoff b = {0};
  while (!sdone || !rdone) {
    if (!sdone) NT_CALL("test", p->api->test(sreq, &sdone, &ssize));
    if (!rdone) NT_CALL("test", p->api->test(rreq, &rdone, &rsize));
    if (nt_now() > deadline)
      return conf_fail("a %zu-byte message over a local connection not complete after %.0f s",
                       len, nt_wait_bound(len));
    if (!sdone || !rdone) nt_backoff_wait(&b);
  }
  if (rsize != (int)len) return conf_fail("test reported %d bytes received, %zu sent", rsize, len);
  CONF_TRY(nt_check(rbuf, len, seed, "local message"));
  CONF_TRY(nt_dereg(p, s, smh));
  CONF_TRY(nt_dereg(p, r, rmh));
  nt_free(sbuf, len);
  nt_free(rbuf, len);
  return CONF_PASS;
}

static conf_result close_all(nt_plugin* p, void* s, void* r, void* l) {
  if (s) NT_CALL_SETUP("closeSend", p->api->closeSend(s));
  if (r) NT_CALL_SETUP("closeRecv", p->api->closeRecv(r));
  if (l) NT_CALL_SETUP("closeListen", p->api->closeListen(l));
  return CONF_PASS;
}

static conf_result t_connect_local(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  void *s, *r, *l;
  CONF_TRY(nt_connect_local(&p, &s, &r, &l));
  CONF_TRY(local_message(&p, s, r, 1000, 11));
  CONF_TRY(close_all(&p, s, r, l));
  return nt_close(&p);
}

static conf_result pair_recv_one(nt_side* s) {
  void *buf, *mh;
  int got = -1;
  CONF_TRY(nt_alloc(1024, &buf));
  CONF_TRY(nt_reg(&s->plugin, s->recv[0], buf, 1024, &mh));
  CONF_TRY(nt_recv_msg(&s->plugin, s->recv[0], buf, 1024, 1, mh, &got));
  if (got != 1024) return conf_fail("received %d bytes, 1024 sent", got);
  CONF_TRY(nt_check(buf, 1024, 21, "message"));
  return nt_dereg(&s->plugin, s->recv[0], mh);
}

static conf_result pair_send_one(nt_side* s) {
  void *buf, *mh;
  CONF_TRY(nt_alloc(1024, &buf));
  nt_fill(buf, 1024, 21);
  CONF_TRY(nt_reg(&s->plugin, s->send[0], buf, 1024, &mh));
  CONF_TRY(nt_send_msg(&s->plugin, s->send[0], buf, 1024, 1, mh));
  return nt_dereg(&s->plugin, s->send[0], mh);
}

static conf_result t_connect_pair(void* arg) {
  (void)arg;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, pair_recv_one, pair_send_one);
}

static conf_result t_accept_first(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *l, *r = NULL, *s = NULL;
  CONF_TRY(nt_listen(&p, handle, &l));
  ncclNetDeviceHandle_v12_t* dev = NULL;
  for (int i = 0; i < 50; i++) {
    NT_CALL("accept", p.api->accept(l, &r, &dev));
    if (r) return conf_fail("accept returned a comm before anyone connected");
  }
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  while (!s || !r) {
    if (!s) NT_CALL("connect", p.api->connect(p.nctx, p.dev, handle, &s, &dev));
    if (!r) NT_CALL("accept", p.api->accept(l, &r, &dev));
    if (nt_now() > deadline) return conf_fail("connect/accept not complete after %.0f s", nt_ctx->wait_s);
    nt_backoff_wait(&b);
  }
  CONF_TRY(local_message(&p, s, r, 100, 5));
  CONF_TRY(close_all(&p, s, r, l));
  return nt_close(&p);
}

/* Several connections set up at once, accepted in the reverse order of the connects: each
 * connect must pair with the accept on the listen comm whose handle it was given. (One connect
 * per listen comm, as NCCL does; some plugins refuse a second.) */
static conf_result t_concurrent_connects(void* arg) {
  (void)arg;
  enum { N = 4 };
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  unsigned char handle[N][NCCL_NET_HANDLE_MAXSIZE];
  void *l[N], *s[N] = {0}, *r[N] = {0};
  for (int i = 0; i < N; i++) CONF_TRY(nt_listen(&p, handle[i], &l[i]));
  ncclNetDeviceHandle_v12_t* dev = NULL;
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  for (;;) {
    int pending = 0;
    for (int i = 0; i < N; i++)
      if (!s[i]) {
        NT_CALL("connect", p.api->connect(p.nctx, p.dev, handle[i], &s[i], &dev));
        pending += !s[i];
      }
    for (int i = N - 1; i >= 0; i--)
      if (!r[i]) {
        NT_CALL("accept", p.api->accept(l[i], &r[i], &dev));
        pending += !r[i];
      }
    if (!pending) break;
    if (nt_now() > deadline)
      return conf_fail("%d of %d connect/accept calls not complete after %.0f s", pending, 2 * N,
                       nt_ctx->wait_s);
    nt_backoff_wait(&b);
  }
  for (int i = 0; i < N; i++) CONF_TRY(local_message(&p, s[i], r[i], 3000 + (size_t)i, 100 + i));
  for (int i = 0; i < N; i++) CONF_TRY(close_all(&p, s[i], r[i], l[i]));
  return nt_close(&p);
}

static conf_result one_cycle(nt_plugin* p, int i) {
  void *s, *r, *l;
  CONF_TRY(nt_connect_local(p, &s, &r, &l));
  CONF_TRY(local_message(p, s, r, 64, (uint64_t)i));
  return close_all(p, s, r, l);
}

static conf_result t_fd_cycles(void* arg) {
  (void)arg;
  enum { CYCLES = 200 };
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  /* Warm up: whatever the plugin opens once (an epoll fd, a helper) is not a leak. */
  for (int i = 0; i < 3; i++) CONF_TRY(one_cycle(&p, i));
  int before = nt_count_fds();
  if (before < 0) return conf_skip("/proc/self/fd cannot be read");
  for (int i = 0; i < CYCLES; i++) CONF_TRY(one_cycle(&p, i));
  int after = nt_count_fds();
  if (after > before)
    return conf_fail("%d fds open before %d connect/close cycles, %d after (%.1f per cycle leaked)",
                     before, CYCLES, after, (double)(after - before) / CYCLES);
  CONF_TRY(nt_close(&p));
  return CONF_PASS;
}

static conf_result t_close_after_complete(void* arg) {
  (void)arg;
  nt_plugin p;
  CONF_TRY(nt_open(&p));
  void *s, *r, *l;
  CONF_TRY(nt_connect_local(&p, &s, &r, &l));
  /* The listen comm may go first: NCCL closes it once accept is done. */
  NT_CALL_SETUP("closeListen", p.api->closeListen(l));
  for (int i = 0; i < 8; i++) CONF_TRY(local_message(&p, s, r, 512 * (size_t)(i + 1), 300 + i));
  /* Receiver first, then sender: both orders happen in NCCL. */
  CONF_TRY(close_all(&p, NULL, r, NULL));
  CONF_TRY(close_all(&p, s, NULL, NULL));
  return nt_close(&p);
}

const conf_test net_tests_conn[] = {
    {"net_listen_returns_comm_and_handle_within_128_bytes", t_listen, 0},
    {"net_connect_and_accept_complete_in_bounded_polls", t_connect_local, 0},
    {"net_connect_and_accept_complete_across_processes", t_connect_pair, 0},
    {"net_accept_before_connect_returns_null_promptly", t_accept_first, 0},
    {"net_concurrent_connections_pair_up_by_handle", t_concurrent_connects, 0},
    {"net_close_after_completed_requests_succeeds", t_close_after_complete, 0},
    {"net_connect_close_cycles_do_not_leak_fds", t_fd_cycles, 2},
};
const int net_tests_conn_count = sizeof net_tests_conn / sizeof net_tests_conn[0];
