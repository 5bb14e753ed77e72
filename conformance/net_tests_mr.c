/* Net tests, fourth group: registration of host memory (twice on one buffer, sub-ranges,
 * deregistering one of two registrations) and iflush on host memory. GPU memory and dma-bufs are
 * the next group (net_tests_cuda.c). */
#include <stdio.h>
#include <string.h>

#include "net_suite.h"
#include "net_tests.h"

enum { MR_BUF = 4 << 20, MR_SUB_OFF = 1 << 20, MR_SUB_LEN = 1 << 20, MR_ODD_OFF = 4096 + 13,
       MR_ODD_LEN = 1000 };

/* The messages of the test: (offset, length, which registration). Registration 0 and 1 cover
 * the whole buffer; 2 the aligned sub-range; 3 the odd one. After message 3, registration 1 is
 * deregistered and message 4 uses registration 0 again. */
static const struct {
  size_t off, len;
  int mh;
} mr_msgs[] = {
    {0, 65536, 1}, {MR_SUB_OFF, MR_SUB_LEN, 2}, {MR_ODD_OFF, MR_ODD_LEN, 3}, {0, MR_BUF, 0},
    {3 * MR_SUB_OFF, 12345, 0},
};
enum { MR_NMSG = sizeof mr_msgs / sizeof mr_msgs[0] };

static conf_result mr_register(nt_plugin* p, void* comm, char* buf, void* mh[4]) {
  CONF_TRY(nt_reg(p, comm, buf, MR_BUF, &mh[0]));
  CONF_TRY(nt_reg(p, comm, buf, MR_BUF, &mh[1]));
  CONF_TRY(nt_reg(p, comm, buf + MR_SUB_OFF, MR_SUB_LEN, &mh[2]));
  CONF_TRY(nt_reg(p, comm, buf + MR_ODD_OFF, MR_ODD_LEN, &mh[3]));
  return CONF_PASS;
}

static conf_result mr_deregister(nt_plugin* p, void* comm, void* mh[4]) {
  /* mh[1] went earlier. */
  CONF_TRY(nt_dereg(p, comm, mh[3]));
  CONF_TRY(nt_dereg(p, comm, mh[2]));
  CONF_TRY(nt_dereg(p, comm, mh[0]));
  return CONF_PASS;
}

static conf_result mr_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  char* buf;
  void* mh[4];
  CONF_TRY(nt_alloc(MR_BUF, (void**)&buf));
  CONF_TRY(mr_register(p, s->recv[0], buf, mh));
  for (int i = 0; i < MR_NMSG; i++) {
    if (i == 4) CONF_TRY(nt_dereg(p, s->recv[0], mh[1]));
    memset(buf, 0xEE, MR_BUF);
    int got = -1;
    CONF_TRY(nt_recv_msg(p, s->recv[0], buf + mr_msgs[i].off, mr_msgs[i].len, 6,
                         mh[mr_msgs[i].mh], &got));
    char what[96];
    snprintf(what, sizeof what, "message %d (%zu bytes at offset %zu, registration %d)", i + 1,
             mr_msgs[i].len, mr_msgs[i].off, mr_msgs[i].mh);
    if (got != (int)mr_msgs[i].len)
      return conf_fail("%s: test reported %d bytes", what, got);
    CONF_TRY(nt_check(buf + mr_msgs[i].off, mr_msgs[i].len, 800 + (uint64_t)i, what));
  }
  return mr_deregister(p, s->recv[0], mh);
}

static conf_result mr_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  char* buf;
  void* mh[4];
  CONF_TRY(nt_alloc(MR_BUF, (void**)&buf));
  CONF_TRY(mr_register(p, s->send[0], buf, mh));
  for (int i = 0; i < MR_NMSG; i++) {
    if (i == 4) CONF_TRY(nt_dereg(p, s->send[0], mh[1]));
    nt_fill(buf + mr_msgs[i].off, mr_msgs[i].len, 800 + (uint64_t)i);
    CONF_TRY(nt_send_msg(p, s->send[0], buf + mr_msgs[i].off, mr_msgs[i].len, 6,
                         mh[mr_msgs[i].mh]));
  }
  return mr_deregister(p, s->send[0], mh);
}

static conf_result t_regmr(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, mr_recv, mr_send);
}

static conf_result flush_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  ncclResult_t flush_refused = ncclSuccess;
  void *buf, *mh;
  int got = -1;
  CONF_TRY(nt_alloc(8192, &buf));
  CONF_TRY(nt_reg(p, s->recv[0], buf, 8192, &mh));
  for (int i = 0; i < 2; i++) {
    CONF_TRY(nt_recv_msg(p, s->recv[0], buf, 8192, 1, mh, &got));
    if (got != 8192 - i * 100) return conf_fail("test reported %d bytes, %d sent", got, 8192 - i * 100);
    CONF_TRY(nt_check(buf, (size_t)got, 900 + (uint64_t)i, "message before iflush"));
    /* Host memory: iflush may do nothing (a NULL request) or return a request that completes;
     * it must not crash or block. It must succeed when the plugin sets forceFlush (the core
     * then flushes every receive); otherwise NCCL never flushes host memory, so an error only
     * means the plugin has no host flush (NCCL's own socket plugin answers InternalError). */
    void* data[1] = {buf};
    int sizes[1] = {got};
    void* mhs[1] = {mh};
    void* req = NULL;
    ncclResult_t r;
    NT_CALL_RES("iflush", p->api->iflush(s->recv[0], 1, data, sizes, mhs, &req), r);
    if (r != ncclSuccess) {
      if (p->props.forceFlush)
        return conf_fail("iflush of a host receive returned %s although forceFlush is set",
                         nt_result_str(r));
      flush_refused = r;
      break;
    }
    if (req) CONF_TRY(nt_wait(p, req, NULL, 0, "iflush"));
    CONF_TRY(nt_check(buf, (size_t)got, 900 + (uint64_t)i, "message after iflush"));
  }
  CONF_TRY(nt_dereg(p, s->recv[0], mh));
  if (flush_refused != ncclSuccess)
    return conf_skip("iflush of host memory returned %s; allowed, as the plugin does not set "
                     "forceFlush and NCCL flushes only CUDA receives",
                     nt_result_str(flush_refused));
  return CONF_PASS;
}

static conf_result flush_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  void *buf, *mh;
  CONF_TRY(nt_alloc(8192, &buf));
  CONF_TRY(nt_reg(p, s->send[0], buf, 8192, &mh));
  for (int i = 0; i < 2; i++) {
    nt_fill(buf, 8192 - (size_t)i * 100, 900 + (uint64_t)i);
    CONF_TRY(nt_send_msg(p, s->send[0], buf, 8192 - (size_t)i * 100, 1, mh));
  }
  return nt_dereg(p, s->send[0], mh);
}

static conf_result t_iflush_host(void* x) {
  (void)x;
  nt_pair_opts o = {0};
  return nt_run_pair(&o, flush_recv, flush_send);
}

const conf_test net_tests_mr[] = {
    {"net_regmr_twice_and_on_subranges_works", t_regmr, 0},
    {"net_iflush_on_host_memory_is_harmless", t_iflush_host, 0},
};
const int net_tests_mr_count = sizeof net_tests_mr / sizeof net_tests_mr[0];
