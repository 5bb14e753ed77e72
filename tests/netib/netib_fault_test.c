/* net-ib between two processes over fakeverbs, one case per process (argv[1]). Injected faults
 * must surface as errors from the plugin — promptly, with the verbs status or event in the WARN
 * — never as a hang or a crash: completion errors on either side, a port going down, QP creation
 * failing on either side, RoCE peers using different RoCE versions, InfiniBand meeting RoCE, a
 * send larger than its receive. Also the paths the conformance suite cannot reach without a GPU:
 * flush reads (WEFT_IB_GDR=1) and dma-buf registration (a memfd stands in for the dma-buf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "netib_harness.h"

#define MSG 300000
#define BOUND 20.0

static void fill(char* b, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) b[i] = (char)(i * 31 + (size_t)seed);
}

/* ---- plain sides: one message of MSG bytes ---- */

typedef struct {
  ncclResult_t want_conn;   /* connect/accept result expected */
  ncclResult_t want_test;   /* test result expected (ncclSuccess: data must arrive intact) */
  const char* want_log;     /* text the WARN must carry (NULL: none checked) */
  size_t send_len, recv_len;
  int recv_type;            /* NCCL_PTR_* of the receive registration */
  int flush;                /* receiver flushes after the receive */
  int dmabuf;               /* receiver registers a memfd through regMrDmaBuf */
  int recv_side_checks;     /* want_* apply to the receiver (else to the sender) */
  int any_error;            /* want_test: any error will do (which one comes first is a race) */
  double accept_bound;      /* receiver's wait for a connection (default BOUND) */
} case_arg;

/* The checked side's result and log: the log line may come from another thread a bit later. */
static void expect(const case_arg* a, ncclResult_t r, ncclResult_t want) {
  if (a->any_error && want != ncclSuccess)
    NB_CHECK(r != ncclSuccess && r != ncclInProgress);
  else
    NB_CHECK(r == want);
  if (a->want_log) {
    double end = nb_now() + 2;
    while (!nb_log_has(a->want_log) && nb_now() < end) usleep(1000);
    NB_CHECK(nb_log_has(a->want_log));
  }
}

static int receiver(nb_plugin* p, int ctl, void* x) {
  const case_arg* a = x;
  void* rc = NULL;
  ncclResult_t r = nb_accept(p, ctl, &rc, a->accept_bound > 0 ? a->accept_bound : BOUND);
  if (a->recv_side_checks && a->want_conn != ncclSuccess) {
    expect(a, r, a->want_conn);
    return 0;
  }
  if (r != ncclSuccess) return a->recv_side_checks ? 1 : 0; /* the sender's case failed setup */
  size_t len = a->recv_len;
  char* buf;
  void* mh = NULL;
  int fd = -1;
  if (a->dmabuf) {
    fd = memfd_create("netib-dmabuf", 0);
    NB_CHECK(fd >= 0 && ftruncate(fd, (off_t)len + 8192) == 0);
    buf = mmap(NULL, len + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    NB_CHECK(buf != MAP_FAILED);
    /* The MR addresses the buffer by its virtual address (iova), backed by fd from 4096. */
    NB_CHECK(p->net->regMrDmaBuf(rc, buf + 4096, len, NCCL_PTR_CUDA, 4096, fd, &mh) == ncclSuccess);
  } else {
    buf = calloc(1, len + 1);
    NB_CHECK(p->net->regMr(rc, buf, len, a->recv_type, &mh) == ncclSuccess);
  }
  char* data = a->dmabuf ? buf + 4096 : buf;
  void* d[1] = {data};
  size_t sz[1] = {len};
  int tags[1] = {5};
  void* mhs[1] = {mh};
  void* req = NULL;
  NB_CHECK(p->net->irecv(rc, 1, d, sz, tags, mhs, NULL, &req) == ncclSuccess && req);
  int got[1] = {-1};
  r = nb_wait(p, req, got, BOUND);
  if (a->recv_side_checks) {
    expect(a, r, a->want_test);
  } else if (a->want_test == ncclSuccess) {
    NB_CHECK(r == ncclSuccess);
  } else {
    /* The sender failed: this side must not hang either (peer gone, or data never sent). */
    NB_CHECK(r != ncclInProgress);
  }
  if (r == ncclSuccess) {
    NB_CHECK((size_t)got[0] == a->send_len);
    char* want = malloc(a->send_len + 1);
    fill(want, a->send_len, 3);
    NB_CHECK(memcmp(data, want, a->send_len) == 0);
    free(want);
    if (a->flush) {
      int fsz[1] = {got[0]};
      void* freq = NULL;
      NB_CHECK(p->net->iflush(rc, 1, d, fsz, mhs, &freq) == ncclSuccess);
      NB_CHECK(freq != NULL); /* GPU-typed memory: a real flush read */
      NB_CHECK(nb_wait(p, freq, NULL, BOUND) == ncclSuccess);
    }
    nb_ctl_send(ctl, 'd');
    char c;
    nb_ctl_recv(ctl, &c, BOUND); /* the sender is done too */
  }
  NB_CHECK(p->net->deregMr(rc, mh) == ncclSuccess);
  NB_CHECK(p->net->closeRecv(rc) == ncclSuccess);
  nb_close(p);
  return 0;
}

static int sender(nb_plugin* p, int ctl, void* x) {
  const case_arg* a = x;
  void* sc = NULL;
  ncclResult_t r = nb_connect(p, ctl, &sc, BOUND);
  if (a->want_conn != ncclSuccess) {
    if (!a->recv_side_checks) {
      expect(a, r, a->want_conn);
    } else {
      NB_CHECK(r != ncclSuccess); /* the receiver failed: so must this connect */
    }
    return 0;
  }
  NB_CHECK(r == ncclSuccess);
  char* buf = malloc(a->send_len + 1);
  fill(buf, a->send_len, 3);
  void* mh = NULL;
  NB_CHECK(p->net->regMr(sc, buf, a->send_len, NCCL_PTR_HOST, &mh) == ncclSuccess);
  void* req = NULL;
  double end = nb_now() + BOUND;
  while (!req && nb_now() < end) {
    r = p->net->isend(sc, buf, a->send_len, 5, mh, NULL, &req);
    if (r != ncclSuccess) break;
  }
  if (r == ncclSuccess) r = nb_wait(p, req, NULL, BOUND);
  if (!a->recv_side_checks) {
    expect(a, r, a->want_test);
  } else if (a->want_test == ncclSuccess) {
    NB_CHECK(r == ncclSuccess);
  } else {
    NB_CHECK(r != ncclInProgress);
  }
  if (r == ncclSuccess && a->want_test == ncclSuccess) {
    char c;
    NB_CHECK(nb_ctl_recv(ctl, &c, BOUND) == 0);
    nb_ctl_send(ctl, 'd');
  }
  NB_CHECK(p->net->deregMr(sc, mh) == ncclSuccess);
  NB_CHECK(p->net->closeSend(sc) == ncclSuccess);
  nb_close(p);
  return 0;
}

static int run(const char* const* renv, const char* const* senv, case_arg a) {
  if (a.send_len == 0 && a.recv_len == 0) a.send_len = a.recv_len = MSG;
  if (a.recv_type == 0) a.recv_type = NCCL_PTR_HOST;
  return nb_run_pair(renv, receiver, senv, sender, &a, 60);
}

/* ---- cases ---- */

static int completion_error_fails_the_sender(void) {
  const char* s[] = {"FAKEVERBS_WC_ERROR=REM_ACCESS_ERR@1", NULL};
  return run(NULL, s, (case_arg){.want_test = ncclRemoteError, .want_log = "remote access error"});
}

static int completion_error_fails_the_receiver(void) {
  /* The receiver's first work request is its clear-to-send write. */
  const char* r[] = {"FAKEVERBS_WC_ERROR=RETRY_EXC_ERR@1", NULL};
  return run(r, NULL, (case_arg){.want_test = ncclRemoteError, .want_log = "retry count exceeded",
                                 .recv_side_checks = 1});
}

static int local_completion_error_is_a_system_error(void) {
  const char* s[] = {"FAKEVERBS_WC_ERROR=LOC_PROT_ERR@1", NULL};
  return run(NULL, s, (case_arg){.want_test = ncclSystemError, .want_log = "local protection error"});
}

static int port_down_fails_the_sender(void) {
  const char* s[] = {"FAKEVERBS_PORT_DOWN=1", NULL};
  /* The retry-exhausted completion and the port-down event race: either error will do, and
   * the WARN must name the port. */
  return run(NULL, s, (case_arg){.want_test = ncclSystemError, .any_error = 1,
                                 .want_log = "port down"});
}

static int qp_creation_failure_fails_accept_and_connect(void) {
  const char* r[] = {"FAKEVERBS_FAIL_CREATE_QP=1", NULL};
  return run(r, NULL, (case_arg){.want_conn = ncclSystemError, .want_log = "ibv_create_qp failed",
                                 .recv_side_checks = 1});
}

static int qp_creation_failure_fails_connect(void) {
  const char* s[] = {"FAKEVERBS_FAIL_CREATE_QP=2", "WEFT_IB_QPS_PER_CONN=2", NULL};
  const char* r[] = {"WEFT_IB_QPS_PER_CONN=2", NULL};
  return run(r, s, (case_arg){.want_conn = ncclSystemError, .want_log = "ibv_create_qp failed",
                              .accept_bound = 3});
}

static int roce_version_mismatch_fails_with_retries_exceeded(void) {
  const char* r[] = {"NCCL_IB_HCA=fake_roce0", "NCCL_IB_TIMEOUT=8", "NCCL_IB_RETRY_CNT=1", NULL};
  const char* s[] = {"NCCL_IB_HCA=fake_roce0", "NCCL_IB_ROCE_VERSION_NUM=1", NULL};
  return run(r, s, (case_arg){.want_test = ncclRemoteError, .want_log = "retry count exceeded",
                              .recv_side_checks = 1});
}

static int infiniband_and_roce_ports_do_not_connect(void) {
  const char* r[] = {"NCCL_IB_HCA=fake_roce0", NULL};
  const char* s[] = {"NCCL_IB_HCA=fake_ib0", NULL};
  return run(r, s, (case_arg){.want_conn = ncclInvalidUsage, .want_log = "cannot talk",
                              .recv_side_checks = 1});
}

static int send_larger_than_receive_is_an_error_on_both_sides(void) {
  case_arg a = {.want_test = ncclInternalError, .want_log = "message truncated",
                .send_len = 5000, .recv_len = 3000, .recv_side_checks = 1};
  return run(NULL, NULL, a);
}

static int flush_reads_back_gpu_receives(void) {
  const char* e[] = {"WEFT_IB_GDR=1", "WEFT_IB_QPS_PER_CONN=3", NULL};
  return run(e, e, (case_arg){.want_test = ncclSuccess, .recv_type = NCCL_PTR_CUDA, .flush = 1});
}

static int dmabuf_receive_lands_in_the_buffer(void) {
  return run(NULL, NULL, (case_arg){.want_test = ncclSuccess, .dmabuf = 1});
}

static int striped_message_over_roce_arrives_intact(void) {
  const char* e[] = {"NCCL_IB_HCA=fake_roce0", "WEFT_IB_QPS_PER_CONN=4", "NCCL_IB_TC=106", NULL};
  return run(e, e, (case_arg){.want_test = ncclSuccess, .send_len = 3 << 20, .recv_len = 4 << 20});
}

static const struct {
  const char* name;
  int (*fn)(void);
} cases[] = {
    {"completion_error_fails_the_sender", completion_error_fails_the_sender},
    {"completion_error_fails_the_receiver", completion_error_fails_the_receiver},
    {"local_completion_error_is_a_system_error", local_completion_error_is_a_system_error},
    {"port_down_fails_the_sender", port_down_fails_the_sender},
    {"qp_creation_failure_fails_accept_and_connect", qp_creation_failure_fails_accept_and_connect},
    {"qp_creation_failure_fails_connect", qp_creation_failure_fails_connect},
    {"roce_version_mismatch_fails_with_retries_exceeded", roce_version_mismatch_fails_with_retries_exceeded},
    {"infiniband_and_roce_ports_do_not_connect", infiniband_and_roce_ports_do_not_connect},
    {"send_larger_than_receive_is_an_error_on_both_sides", send_larger_than_receive_is_an_error_on_both_sides},
    {"flush_reads_back_gpu_receives", flush_reads_back_gpu_receives},
    {"dmabuf_receive_lands_in_the_buffer", dmabuf_receive_lands_in_the_buffer},
    {"striped_message_over_roce_arrives_intact", striped_message_over_roce_arrives_intact},
};

int main(int argc, char** argv) {
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; argc == 2 && i < n; i++)
    if (strcmp(argv[1], cases[i].name) == 0) return cases[i].fn();
  fprintf(stderr, "usage: %s CASE\n", argv[0]);
  return 2;
}
