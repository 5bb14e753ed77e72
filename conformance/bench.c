/* --bench: latency (half a ping-pong round trip) and streaming bandwidth per message size through
 * the plugin, and beside them the same two patterns over a plain TCP loopback connection between
 * the same two processes, measured in the same run, with the bandwidth ratio plugin / TCP. The
 * numbers describe this machine at this moment; nothing here is a pass/fail test. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_suite.h"
#include "net_tests.h"

#define MiB (1024ull * 1024ull)

static const size_t bench_sizes[] = {8,        32,       128,      512,      2048,
                                     8192,     32768,    131072,   524288,   2 * MiB,
                                     8 * MiB,  32 * MiB, 128 * MiB, 256 * MiB};
enum { NSIZES = sizeof bench_sizes / sizeof bench_sizes[0], WINDOW = 8 };

static size_t clampz(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }
static int lat_iters(size_t len) { return (int)clampz((16 * MiB) / len, 3, 1000); }
static int bw_iters(size_t len) { return (int)clampz((256 * MiB) / len, 4, 4000); }

typedef struct {
  size_t max_len; /* largest size both sides can afford */
  char *sbuf, *rbuf;
  void *smh, *rmh;
  int tcp;        /* connected TCP socket */
  double lat_us[NSIZES], bw[NSIZES], tcp_lat_us[NSIZES], tcp_bw[NSIZES];
} bench_state;

static bench_state bs;

static conf_result p_send(nt_side* s, size_t len) {
  return nt_send_msg(&s->plugin, s->send[0], bs.sbuf, len, 0, bs.smh);
}
static conf_result p_recv(nt_side* s, size_t len) {
  int got;
  return nt_recv_msg(&s->plugin, s->recv[0], bs.rbuf, len, 0, bs.rmh, &got);
}

/* W requests in flight, iters messages; send or receive. */
static conf_result p_stream(nt_side* s, size_t len, int iters, int send) {
  nt_plugin* p = &s->plugin;
  void* req[WINDOW] = {0};
  int posted = 0, done_count = 0;
  double deadline = nt_now() + nt_wait_bound(len * (size_t)iters);
  while (done_count < iters) {
    if (nt_now() > deadline)
      return conf_fail("%d of %d messages of %zu bytes moved after %.0f s", done_count, iters,
                       len, nt_wait_bound(len * (size_t)iters));
    for (int k = 0; k < WINDOW && posted < iters; k++) {
      if (req[k]) continue;
      if (send)
        CONF_TRY(nt_isend(p, s->send[0], bs.sbuf, len, 0, bs.smh, &req[k]));
      else
        CONF_TRY(nt_irecv(p, s->recv[0], bs.rbuf, len, 0, bs.rmh, &req[k]));
      posted++;
    }
    for (int k = 0; k < WINDOW; k++) {
      if (!req[k]) continue;
      int done = 0;
      int size[1];
      NT_CALL("test", p->api->test(req[k], &done, size));
      if (done) {
        req[k] = NULL;
        done_count++;
      }
    }
  }
  return CONF_PASS;
}

static conf_result tcp_io(int send, void* buf, size_t len) {
  char* p = buf;
  while (len > 0) {
    ssize_t n = send ? write(bs.tcp, p, len) : read(bs.tcp, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return conf_fail("raw TCP %s failed: %s", send ? "write" : "read",
                                 n == 0 ? "connection closed" : strerror(errno));
    p += n;
    len -= (size_t)n;
  }
  return CONF_PASS;
}

/* Each measurement: both sides run the matching half; initiator measures. */
static conf_result run_sizes(nt_side* s, int initiator) {
  for (int i = 0; i < NSIZES; i++) {
    size_t len = bench_sizes[i];
    if (len > bs.max_len) break;
    int li = lat_iters(len), bi = bw_iters(len);
    /* plugin latency */
    double t0 = 0;
    for (int it = -2; it < li; it++) {
      if (it == 0) t0 = nt_now();
      if (initiator) {
        CONF_TRY(p_send(s, len));
        CONF_TRY(p_recv(s, len));
      } else {
        CONF_TRY(p_recv(s, len));
        CONF_TRY(p_send(s, len));
      }
    }
    bs.lat_us[i] = (nt_now() - t0) / li / 2 * 1e6;
    /* plugin bandwidth: a stream, then a 1-byte ack */
    CONF_TRY(p_stream(s, len, 2, initiator));
    if (initiator) CONF_TRY(p_recv(s, 1)); else CONF_TRY(p_send(s, 1));
    t0 = nt_now();
    CONF_TRY(p_stream(s, len, bi, initiator));
    if (initiator) CONF_TRY(p_recv(s, 1)); else CONF_TRY(p_send(s, 1));
    bs.bw[i] = (double)len * bi / (nt_now() - t0) / 1e9;
    /* raw TCP latency */
    for (int it = -2; it < li; it++) {
      if (it == 0) t0 = nt_now();
      CONF_TRY(tcp_io(initiator, initiator ? bs.sbuf : bs.rbuf, len));
      CONF_TRY(tcp_io(!initiator, initiator ? bs.rbuf : bs.sbuf, len));
    }
    bs.tcp_lat_us[i] = (nt_now() - t0) / li / 2 * 1e6;
    /* raw TCP bandwidth */
    char ack = 1;
    t0 = nt_now();
    for (int it = 0; it < bi; it++) CONF_TRY(tcp_io(initiator, initiator ? bs.sbuf : bs.rbuf, len));
    CONF_TRY(tcp_io(!initiator, &ack, 1));
    bs.tcp_bw[i] = (double)len * bi / (nt_now() - t0) / 1e9;
    if (initiator) {
      printf("%12zu %14.2f %14.3f %14.2f %14.3f %10.2f\n", len, bs.lat_us[i], bs.bw[i],
             bs.tcp_lat_us[i], bs.tcp_bw[i], bs.tcp_bw[i] > 0 ? bs.bw[i] / bs.tcp_bw[i] : 0);
      fflush(stdout);
    }
  }
  return CONF_PASS;
}

static conf_result setup(nt_side* s) {
  nt_plugin* p = &s->plugin;
  CONF_TRY(nt_alloc(bs.max_len, (void**)&bs.sbuf));
  CONF_TRY(nt_alloc(bs.max_len, (void**)&bs.rbuf));
  memset(bs.sbuf, 0x3C, bs.max_len);
  memset(bs.rbuf, 0, bs.max_len);
  CONF_TRY(nt_reg(p, s->send[0], bs.sbuf, bs.max_len, &bs.smh));
  CONF_TRY(nt_reg(p, s->recv[0], bs.rbuf, bs.max_len, &bs.rmh));
  return CONF_PASS;
}

static conf_result bench_child(nt_side* s) {
  CONF_TRY(setup(s));
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr*)&a, sizeof a) != 0 || listen(lfd, 1) != 0 ||
      getsockname(lfd, (struct sockaddr*)&a, &alen) != 0)
    return conf_fail("raw TCP listen failed: %s", strerror(errno));
  CONF_TRY(nt_ctl_send(s, &a, sizeof a));
  bs.tcp = accept(lfd, NULL, NULL);
  close(lfd);
  if (bs.tcp < 0) return conf_fail("raw TCP accept failed: %s", strerror(errno));
  int one = 1;
  setsockopt(bs.tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const char* name = s->plugin.view.api.name;
  printf("# plugin \"%s\" (ABI v%d) against raw TCP over loopback, two processes, %d in flight\n",
         name ? name : "?", s->plugin.view.version, WINDOW);
  printf("# %10s %14s %14s %14s %14s %10s\n", "bytes", "plugin us", "plugin GB/s", "tcp us",
         "tcp GB/s", "BW ratio");
  CONF_TRY(run_sizes(s, 1));
  close(bs.tcp);
  CONF_TRY(nt_dereg(&s->plugin, s->send[0], bs.smh));
  return nt_dereg(&s->plugin, s->recv[0], bs.rmh);
}

static conf_result bench_peer(nt_side* s) {
  CONF_TRY(setup(s));
  struct sockaddr_in a;
  CONF_TRY(nt_ctl_recv(s, &a, sizeof a));
  bs.tcp = socket(AF_INET, SOCK_STREAM, 0);
  if (bs.tcp < 0 || connect(bs.tcp, (struct sockaddr*)&a, sizeof a) != 0)
    return conf_fail("raw TCP connect failed: %s", strerror(errno));
  int one = 1;
  setsockopt(bs.tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  CONF_TRY(run_sizes(s, 0));
  close(bs.tcp);
  CONF_TRY(nt_dereg(&s->plugin, s->send[0], bs.smh));
  return nt_dereg(&s->plugin, s->recv[0], bs.rmh);
}

int net_bench_run(void) {
  /* Two buffers per process; leave room for the rest of the machine. */
  size_t avail = nt_mem_available();
  bs.max_len = bench_sizes[NSIZES - 1];
  while (avail && bs.max_len > 8 * MiB && 5 * bs.max_len > avail) bs.max_len /= 2;
  /* Large transfers take a while on slow machines: widen the bounds. */
  nt_ctx->wait_s = 60;
  conf_stage_init();
  nt_pair_opts o = {.bidir = 1};
  conf_result r = nt_run_pair(&o, bench_child, bench_peer);
  if (r != CONF_PASS) {
    fprintf(stderr, "weft-conformance: bench failed: %s\n", conf_reason());
    return 1;
  }
  return 0;
}
