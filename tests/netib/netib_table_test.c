/* The verbs table is replaceable (net_ib_verbs_override): a test wraps the loaded table and
 * makes one entry fail, and the plugin must turn that into an error of the request, with the
 * verbs call named. Links the implementation (weft_net_ib_impl) directly; one case per process:
 *   poll_failure_fails_the_request       ibv_poll_cq returning an error
 *   post_send_failure_fails_the_send     ibv_post_send refusing a data write (ENOMEM)
 *   post_recv_failure_fails_the_receive  ibv_post_recv refusing to re-post a receive */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_ib.h"
#include "net_ib_verbs.h"

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, "--- log ---\n%s", logbuf);                           \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static char logbuf[1 << 15];
static size_t loglen;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  va_list ap;
  va_start(ap, fmt);
  int k = snprintf(logbuf + loglen, sizeof logbuf - loglen, "%s ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
  if (k > 0 && (size_t)k < sizeof logbuf - loglen) loglen += (size_t)k;
  k = vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt, ap);
  if (k > 0 && (size_t)k < sizeof logbuf - loglen - 1) {
    loglen += (size_t)k;
    logbuf[loglen++] = '\n';
    logbuf[loglen] = '\0';
  }
  va_end(ap);
}

static const ib_verbs* real;
static ib_verbs wrapped;
static int fail_poll, fail_post_send, fail_post_recv;

static int poll_wrap(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
  return fail_poll ? -EIO : real->poll_cq(cq, n, wc);
}

static int post_send_wrap(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  if (fail_post_send && wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && wr->wr_id >> 56 == 1) {
    *bad = wr;
    return ENOMEM;
  }
  return real->post_send(qp, wr, bad);
}

static int post_recv_wrap(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
  if (fail_post_recv) {
    *bad = wr;
    return ENOMEM;
  }
  return real->post_recv(qp, wr, bad);
}

typedef struct {
  const ncclNet_v11_t* net;
  void* ctx;
  void *s, *r, *ms, *mr;
  char *a, *b;
} loop_t;

enum { LEN = 100000 };

static void setup(loop_t* L) {
  char why[256] = "";
  real = net_ib_verbs_load(why, sizeof why);
  if (real == NULL) {
    fprintf(stderr, "no verbs: %s\n", why);
    exit(1);
  }
  wrapped = *real;
  wrapped.poll_cq = poll_wrap;
  wrapped.post_send = post_send_wrap;
  wrapped.post_recv = post_recv_wrap;
  net_ib_verbs_override(&wrapped);
  L->net = &weft_net_ib_v11;
  CHECK(L->net->init(&L->ctx, 1, NULL, logger, NULL) == ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* l = NULL;
  ncclNetDeviceHandle_v11_t* dh = NULL;
  CHECK(L->net->listen(L->ctx, 0, handle, &l) == ncclSuccess);
  L->s = L->r = NULL;
  for (int i = 0; i < 1000000 && (!L->s || !L->r); i++) {
    if (!L->s) CHECK(L->net->connect(L->ctx, 0, handle, &L->s, &dh) == ncclSuccess);
    if (!L->r) CHECK(L->net->accept(l, &L->r, &dh) == ncclSuccess);
  }
  CHECK(L->s && L->r);
  CHECK(L->net->closeListen(l) == ncclSuccess);
  L->a = calloc(1, LEN);
  L->b = calloc(1, LEN);
  CHECK(L->net->regMr(L->s, L->a, LEN, NCCL_PTR_HOST, &L->ms) == ncclSuccess);
  CHECK(L->net->regMr(L->r, L->b, LEN, NCCL_PTR_HOST, &L->mr) == ncclSuccess);
}

/* Post one message each way; returns the first non-success result of either test (or success
 * when both complete). */
static ncclResult_t exchange(loop_t* L) {
  void* d[1] = {L->b};
  size_t sz[1] = {LEN};
  int tag[1] = {1};
  void* mh[1] = {L->mr};
  void *rr = NULL, *rs = NULL;
  ncclResult_t r = L->net->irecv(L->r, 1, d, sz, tag, mh, NULL, &rr);
  if (r != ncclSuccess) return r;
  r = L->net->isend(L->s, L->a, LEN, 1, L->ms, NULL, &rs);
  if (r != ncclSuccess) return r;
  int sdone = 0, rdone = 0;
  for (int i = 0; i < 2000000 && (!sdone || !rdone); i++) {
    int sizes[1];
    if (!sdone && (r = L->net->test(rs, &sdone, sizes)) != ncclSuccess) return r;
    if (!rdone && (r = L->net->test(rr, &rdone, sizes)) != ncclSuccess) return r;
  }
  return sdone && rdone ? ncclSuccess : ncclInProgress;
}

static void teardown(loop_t* L) {
  CHECK(L->net->deregMr(L->s, L->ms) == ncclSuccess && L->net->deregMr(L->r, L->mr) == ncclSuccess);
  CHECK(L->net->closeSend(L->s) == ncclSuccess && L->net->closeRecv(L->r) == ncclSuccess);
  CHECK(L->net->finalize(L->ctx) == ncclSuccess);
  free(L->a);
  free(L->b);
}

static int poll_failure_fails_the_request(void) {
  loop_t L;
  setup(&L);
  CHECK(exchange(&L) == ncclSuccess);
  fail_poll = 1;
  CHECK(exchange(&L) == ncclSystemError);
  CHECK(strstr(logbuf, "ibv_poll_cq failed") != NULL);
  fail_poll = 0;
  teardown(&L);
  return 0;
}

static int post_send_failure_fails_the_send(void) {
  loop_t L;
  setup(&L);
  fail_post_send = 1;
  CHECK(exchange(&L) == ncclSystemError);
  CHECK(strstr(logbuf, "ibv_post_send (RDMA write of 100000 bytes)") != NULL);
  fail_post_send = 0;
  teardown(&L);
  return 0;
}

static int post_recv_failure_fails_the_receive(void) {
  loop_t L;
  setup(&L);
  fail_post_recv = 1; /* the data receive is consumed, re-posting it fails */
  CHECK(exchange(&L) == ncclSystemError);
  CHECK(strstr(logbuf, "ibv_post_recv") != NULL);
  fail_post_recv = 0;
  teardown(&L);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "poll_failure_fails_the_request") == 0)
    return poll_failure_fails_the_request();
  if (argc == 2 && strcmp(argv[1], "post_send_failure_fails_the_send") == 0)
    return post_send_failure_fails_the_send();
  if (argc == 2 && strcmp(argv[1], "post_recv_failure_fails_the_receive") == 0)
    return post_recv_failure_fails_the_receive();
  fprintf(stderr, "usage: %s CASE\n", argv[0]);
  return 2;
}
