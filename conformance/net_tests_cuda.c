/* Net tests, fifth group: GPU memory (docs/plugins.md §7, "GPU memory"), for plugins that
 * advertise NCCL_PTR_CUDA or NCCL_PTR_DMABUF. Each case does with device buffers what weft's core
 * does: registers them (regMr with NCCL_PTR_CUDA, or regMrDmaBuf with the fd closed right after
 * the call), sends from and receives into them, and after each receive with data (each receive,
 * when the plugin sets forceFlush) calls iflush and waits for it before anything reads the bytes.
 * The bytes are then read back through the CUDA driver and checked; receive buffers are poisoned
 * first (cuMemsetD8), so a short write or a write outside the message is caught.
 *
 * Device memory comes from the driver loaded at run time (cuda_mem.h). Without a driver or a GPU
 * each case skips, saying whether the plugin advertises the capability; that is found in a
 * probe child, since the test process must not initialise CUDA before it forks the peer. Each
 * side makes its GPU current before it opens the plugin (the core calls a plugin only with the
 * rank's GPU current), and the two tell each other how their GPU setup went before any data
 * moves, so one side that cannot (no context for a second process on an exclusive-process GPU,
 * no dma-buf export) stops both with its reason instead of leaving the other waiting. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_mem.h"
#include "net_suite.h"
#include "net_tests.h"

enum { TAG = 5, POISON = 0xEE };

/* ---- can the case run: the probe ---- */

/* What the probe child found; below PIPE_BUF, so it crosses the pipe in one write. */
typedef struct {
  int cuda;        /* conf_result of cm_open */
  int plugin;      /* conf_result of nt_open */
  int ptr_support; /* the plugin's ptrSupport, when it opened */
  char cuda_why[512], plugin_why[512];
} probe_report;

/* The driver first, then the plugin, as in the sides; the report goes to fd. */
static void probe_child(int fd) {
  probe_report m;
  memset(&m, 0, sizeof m);
  m.cuda = cm_open();
  if (m.cuda != CONF_PASS) snprintf(m.cuda_why, sizeof m.cuda_why, "%s", conf_reason());
  conf_clear_reason();
  nt_plugin p;
  m.plugin = nt_open(&p);
  if (m.plugin == CONF_PASS) {
    m.ptr_support = p.props.ptrSupport;
    (void)nt_close(&p);
  } else {
    snprintf(m.plugin_why, sizeof m.plugin_why, "%s", conf_reason());
  }
  ssize_t n = write(fd, &m, sizeof m);
  _exit(n == (ssize_t)sizeof m ? 0 : 1);
}

/* Runs probe_child and reads its report (bounded: a driver or a plugin init may hang). */
static conf_result probe(probe_report* r) {
  int fds[2];
  if (pipe(fds) != 0) return conf_fail("harness: pipe failed: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) return conf_fail("harness: fork failed: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(fds[0]);
    if (conf_result_fd >= 0) close(conf_result_fd);
    probe_child(fds[1]);
  }
  close(fds[1]);
  size_t got = 0;
  double bound = nt_wait_bound(0) * 2, deadline = nt_now() + bound;
  int late = 0;
  while (got < sizeof *r) {
    struct pollfd pf = {fds[0], POLLIN, 0};
    int n = poll(&pf, 1, 100);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (nt_now() > deadline) {
        late = 1;
        break;
      }
      continue;
    }
    ssize_t k = read(fds[0], (char*)r + got, sizeof *r - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fds[0]);
  if (got < sizeof *r) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got == sizeof *r) {
    r->cuda_why[sizeof r->cuda_why - 1] = r->plugin_why[sizeof r->plugin_why - 1] = '\0';
    return CONF_PASS;
  }
  char stage[160], sig[96];
  conf_stage_describe(stage, sizeof stage);
  if (late)
    return conf_fail("the probe (CUDA driver and plugin init, in a child process) did not "
                     "answer within %.0f s%s", bound, stage);
  if (WIFSIGNALED(status))
    return conf_fail("the probe (CUDA driver and plugin init, in a child process) was killed "
                     "by %s%s", conf_signal_name(WTERMSIG(status), sig, sizeof sig), stage);
  return conf_fail("the probe (CUDA driver and plugin init, in a child process) exited with "
                   "status %d without answering", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* PASS when the case can run: the plugin advertises bit and a GPU is usable; else the skip
 * (or, when the plugin's init fails on a machine with a GPU, the failure). */
static conf_result cuda_gate(int bit, const char* what) {
  probe_report r;
  CONF_TRY(probe(&r));
  const char* name = bit == NCCL_PTR_CUDA ? "NCCL_PTR_CUDA" : "NCCL_PTR_DMABUF";
  if (r.plugin == CONF_PASS && !(r.ptr_support & bit))
    return conf_skip("the plugin does not advertise %s", name);
  if (r.cuda == CONF_FAIL) return conf_fail("%s", r.cuda_why);
  if (r.cuda != CONF_PASS && r.plugin == CONF_PASS)
    return conf_skip("%s; the plugin advertises %s (%s not tested)", r.cuda_why, name, what);
  if (r.cuda != CONF_PASS)
    return conf_skip("%s; whether the plugin advertises %s is unknown, as its init failed too "
                     "(%s not tested)", r.cuda_why, name, what);
  if (r.plugin != CONF_PASS) return conf_fail("%s", r.plugin_why);
  return CONF_PASS;
}

/* ---- each side's GPU ---- */

/* A device buffer and a host buffer of the same size: the pattern's source on the sender, the
 * copy read back on the receiver. */
typedef struct {
  cm_ptr base; /* the allocation */
  cm_ptr dev;  /* the buffer: base, or base rounded up to a page (dma-buf export needs it) */
  size_t len;
  unsigned char* host;
} gbuf;

static conf_result gbuf_alloc(gbuf* b, size_t len, int page_aligned) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  b->len = len;
  CONF_TRY(cm_alloc(page_aligned ? len + page : len, &b->base));
  b->dev = page_aligned ? (b->base + page - 1) / page * page : b->base;
  return nt_alloc(len, (void**)&b->host);
}

static void gbuf_free(gbuf* b) {
  cm_free(b->base);
  nt_free(b->host, b->len);
}

/* Tells the other side this side's setup result r and learns its own; PASS when both are ready.
 * This side's failure keeps its own reason; the other's is quoted. */
static conf_result sides_agree(nt_side* s, conf_result r) {
  struct {
    int result;
    char why[600];
  } mine = {r, ""}, theirs;
  if (r != CONF_PASS) snprintf(mine.why, sizeof mine.why, "%s", conf_reason());
  CONF_TRY(nt_ctl_send(s, &mine, sizeof mine));
  CONF_TRY(nt_ctl_recv(s, &theirs, sizeof theirs));
  if (r != CONF_PASS) return r;
  theirs.why[sizeof theirs.why - 1] = '\0';
  const char* other = s->is_peer ? "the test process" : "the peer";
  if (theirs.result == CONF_FAIL) return conf_fail("%s: %s", other, theirs.why);
  if (theirs.result != CONF_PASS) return conf_skip("%s: %s", other, theirs.why);
  return CONF_PASS;
}

/* nt_pair_opts.before_open: this side's GPU, current before the plugin is opened, as the core
 * has the rank's GPU current whenever it calls the plugin. */
static conf_result gpu_before_open(nt_side* s) {
  (void)s;
  return cm_open();
}

/* After the connection: a buffer of len bytes (page-aligned, with a dma-buf fd in *fd, when fd
 * is not NULL) if gpu_before_open went well, then the agreement with the other side. */
static conf_result side_setup(nt_side* s, gbuf* b, size_t len, int* fd) {
  conf_result r = s->before_result;
  if (r != CONF_PASS) conf_set_reason(s->before_why);
  if (r == CONF_PASS) r = gbuf_alloc(b, len, fd != NULL);
  if (r == CONF_PASS && fd) r = cm_dmabuf_export(b->dev, len, fd);
  return sides_agree(s, r);
}

static conf_result reg_cuda(nt_plugin* p, void* comm, cm_ptr ptr, size_t len, void** mh) {
  *mh = NULL;
  NT_CALL_SETUP("regMr(NCCL_PTR_CUDA)", p->api->regMr(comm, cm_void(ptr), len, NCCL_PTR_CUDA, mh));
  return CONF_PASS;
}

/* ---- moving data as the core does ---- */

/* The pattern for seed to the GPU at b->dev + off, then one send of it. */
static conf_result send_from_gpu(nt_plugin* p, void* scomm, gbuf* b, size_t off, size_t len,
                                 void* mh, uint64_t seed) {
  nt_fill(b->host + off, len, seed);
  CONF_TRY(cm_upload(b->dev + off, b->host + off, len));
  return nt_send_msg(p, scomm, cm_void(b->dev + off), len, TAG, mh);
}

/* After a receive of got bytes into data completed: iflush when bytes arrived, or always when
 * the plugin sets forceFlush, and wait for the flush (a NULL request: nothing to wait for). The
 * core does exactly this before the GPU reads the buffer, and fails the connection when iflush
 * returns an error, so it must succeed. *flushed counts the flushes that returned a request. */
static conf_result flush_like_core(nt_plugin* p, void* rcomm, void* data, int got, void* mh,
                                   int* flushed, const char* what) {
  if (got == 0 && !p->props.forceFlush) return CONF_PASS;
  void* datas[1] = {data};
  int sizes[1] = {got};
  void* mhs[1] = {mh};
  void* req = NULL;
  ncclResult_t r;
  NT_CALL_RES("iflush", p->api->iflush(rcomm, 1, datas, sizes, mhs, &req), r);
  if (r != ncclSuccess)
    return conf_fail("%s: iflush of the %d-byte receive into GPU memory returned %s (the core "
                     "flushes %s; it fails the connection when iflush returns an error)", what,
                     got, nt_result_str(r),
                     p->props.forceFlush ? "every receive, as the plugin sets forceFlush"
                                         : "every receive into GPU memory that got data");
  if (req == NULL) return CONF_PASS;
  (*flushed)++;
  char w[160];
  snprintf(w, sizeof w, "%s: iflush", what);
  return nt_wait(p, req, NULL, (size_t)got, w);
}

/* FAIL when a byte of h outside [off, off+n) lost the poison. */
static conf_result check_poison(const unsigned char* h, size_t len, size_t off, size_t n,
                                const char* what) {
  size_t first = (size_t)-1, bad = 0;
  for (size_t i = 0; i < len; i++) {
    if ((i >= off && i < off + n) || h[i] == POISON) continue;
    if (first == (size_t)-1) first = i;
    bad++;
  }
  if (bad)
    return conf_fail("%s: %zu bytes of the GPU buffer outside the message changed, the first at "
                     "offset %zu (the message is at %zu..%zu)", what, bad, first, off, off + n);
  return CONF_PASS;
}

/* One message of len bytes into b->dev + off, all of b poisoned before: flushed, read back,
 * checked against seed, the rest of b still poisoned. */
static conf_result recv_into_gpu(nt_plugin* p, void* rcomm, gbuf* b, size_t off, size_t len,
                                 void* mh, uint64_t seed, int* flushed, const char* what) {
  CONF_TRY(cm_memset(b->dev, POISON, b->len));
  int got = -1;
  CONF_TRY(nt_recv_msg(p, rcomm, cm_void(b->dev + off), len, TAG, mh, &got));
  if (got != (int)len) return conf_fail("%s: test reported %d bytes", what, got);
  CONF_TRY(flush_like_core(p, rcomm, cm_void(b->dev + off), got, mh, flushed, what));
  CONF_TRY(cm_download(b->host, b->dev, b->len));
  CONF_TRY(nt_check(b->host + off, len, seed, what));
  return check_poison(b->host, b->len, off, len, what);
}

/* ---- net_regmr_of_cuda_memory_works ---- */

enum { CB = 4 << 20, C_SUB = 1 << 20, C_ODD_OFF = 4096 + 13, C_ODD_LEN = 100000, C_DEREG_AT = 4 };

/* Registrations (the same on both sides): 0 and 1 the whole buffer, 2 an aligned sub-range, 3
 * one at an odd address. Messages (offset, length, registration): both ends of the odd one; 1
 * (the duplicate) deregistered before message C_DEREG_AT, after which 0 must still work. */
static const struct {
  size_t off, len;
  int mh;
} cmr_msgs[] = {
    {0, 65536, 1},          {C_SUB, C_SUB, 2},       {C_ODD_OFF, 1000, 3},
    {C_ODD_OFF + C_ODD_LEN - 777, 777, 3},           {0, CB, 0},
    {3 * C_SUB + 7, 12345, 0},                       {2 * C_SUB + 1, 1, 0},
};
enum { CMR_NMSG = sizeof cmr_msgs / sizeof cmr_msgs[0] };

static conf_result cmr_register(nt_plugin* p, void* comm, const gbuf* b, void* mh[4]) {
  CONF_TRY(reg_cuda(p, comm, b->dev, CB, &mh[0]));
  CONF_TRY(reg_cuda(p, comm, b->dev, CB, &mh[1]));
  CONF_TRY(reg_cuda(p, comm, b->dev + C_SUB, C_SUB, &mh[2]));
  return reg_cuda(p, comm, b->dev + C_ODD_OFF, C_ODD_LEN, &mh[3]);
}

static conf_result cmr_deregister(nt_plugin* p, void* comm, void* mh[4]) {
  CONF_TRY(nt_dereg(p, comm, mh[3]));
  CONF_TRY(nt_dereg(p, comm, mh[2]));
  return nt_dereg(p, comm, mh[0]); /* mh[1] went at C_DEREG_AT */
}

static conf_result cmr_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  gbuf b;
  void* mh[4];
  int flushed = 0;
  CONF_TRY(side_setup(s, &b, CB, NULL));
  CONF_TRY(cmr_register(p, s->recv[0], &b, mh));
  for (int i = 0; i < CMR_NMSG; i++) {
    if (i == C_DEREG_AT) CONF_TRY(nt_dereg(p, s->recv[0], mh[1]));
    char what[128];
    snprintf(what, sizeof what, "message %d (%zu bytes at offset %zu, registration %d)", i + 1,
             cmr_msgs[i].len, cmr_msgs[i].off, cmr_msgs[i].mh);
    CONF_TRY(recv_into_gpu(p, s->recv[0], &b, cmr_msgs[i].off, cmr_msgs[i].len,
                           mh[cmr_msgs[i].mh], 0xC0DA0000ull + (uint64_t)i, &flushed, what));
  }
  CONF_TRY(cmr_deregister(p, s->recv[0], mh));
  gbuf_free(&b);
  conf_note("%s: %d messages, %d iflush requests", cm_gpu_name(), CMR_NMSG, flushed);
  return CONF_PASS;
}

static conf_result cmr_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  gbuf b;
  void* mh[4];
  CONF_TRY(side_setup(s, &b, CB, NULL));
  CONF_TRY(cmr_register(p, s->send[0], &b, mh));
  for (int i = 0; i < CMR_NMSG; i++) {
    if (i == C_DEREG_AT) CONF_TRY(nt_dereg(p, s->send[0], mh[1]));
    CONF_TRY(send_from_gpu(p, s->send[0], &b, cmr_msgs[i].off, cmr_msgs[i].len,
                           mh[cmr_msgs[i].mh], 0xC0DA0000ull + (uint64_t)i));
  }
  CONF_TRY(cmr_deregister(p, s->send[0], mh));
  gbuf_free(&b);
  return CONF_PASS;
}

static conf_result t_regmr_cuda(void* x) {
  (void)x;
  CONF_TRY(cuda_gate(NCCL_PTR_CUDA, "regMr of device memory"));
  nt_pair_opts o = {.before_open = gpu_before_open};
  return nt_run_pair(&o, cmr_recv, cmr_send);
}

/* ---- net_iflush_of_cuda_receive_completes ---- */

/* As the core's proxy: FL_WINDOW receives of FL_SLOT bytes posted ahead into slots of one
 * registration, completed in order; each flushed (when the core would) and waited for while
 * the later ones stay posted, then read back and the slot posted again. Zero-byte messages are
 * not flushed unless forceFlush is set. */
enum { FL_SLOT = 2 << 20, FL_WINDOW = 4 };
static const size_t fl_sizes[] = {1, 0, 4096, (1 << 20) + 1, 0, 13, 65536, FL_SLOT, 0, 8, 300001};
enum { FL_N = sizeof fl_sizes / sizeof fl_sizes[0] };

static conf_result fl_post(nt_plugin* p, void* rcomm, const gbuf* b, int m, void* mh, void** req) {
  cm_ptr slot = b->dev + (size_t)(m % FL_WINDOW) * FL_SLOT;
  CONF_TRY(cm_memset(slot, POISON, FL_SLOT));
  return nt_irecv(p, rcomm, cm_void(slot), FL_SLOT, TAG, mh, req);
}

static conf_result fl_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  void* rc = s->recv[0];
  gbuf b;
  void *mh, *req[FL_WINDOW];
  int flushed = 0;
  CONF_TRY(side_setup(s, &b, (size_t)FL_SLOT * FL_WINDOW, NULL));
  CONF_TRY(reg_cuda(p, rc, b.dev, b.len, &mh));
  for (int m = 0; m < FL_WINDOW && m < FL_N; m++) CONF_TRY(fl_post(p, rc, &b, m, mh, &req[m]));
  for (int m = 0; m < FL_N; m++) {
    int slot = m % FL_WINDOW, got = -1;
    cm_ptr at = b.dev + (size_t)slot * FL_SLOT;
    char what[128];
    snprintf(what, sizeof what, "message %d (%zu bytes, receive slot %d of %d)", m + 1,
             fl_sizes[m], slot, FL_WINDOW);
    CONF_TRY(nt_wait(p, req[slot], &got, fl_sizes[m], what));
    if (got != (int)fl_sizes[m]) return conf_fail("%s: test reported %d bytes", what, got);
    CONF_TRY(flush_like_core(p, rc, cm_void(at), got, mh, &flushed, what));
    CONF_TRY(cm_download(b.host, at, (size_t)got));
    CONF_TRY(nt_check(b.host, (size_t)got, 0xF1F10000ull + (uint64_t)m, what));
    if (m + FL_WINDOW < FL_N) CONF_TRY(fl_post(p, rc, &b, m + FL_WINDOW, mh, &req[slot]));
  }
  CONF_TRY(nt_dereg(p, rc, mh));
  gbuf_free(&b);
  conf_note("%s: %d receives, %d iflush requests (forceFlush %d)", cm_gpu_name(), FL_N, flushed,
            p->props.forceFlush);
  return CONF_PASS;
}

static conf_result fl_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  gbuf b;
  void* mh;
  CONF_TRY(side_setup(s, &b, FL_SLOT, NULL));
  CONF_TRY(reg_cuda(p, s->send[0], b.dev, b.len, &mh));
  for (int m = 0; m < FL_N; m++)
    CONF_TRY(send_from_gpu(p, s->send[0], &b, 0, fl_sizes[m], mh, 0xF1F10000ull + (uint64_t)m));
  CONF_TRY(nt_dereg(p, s->send[0], mh));
  gbuf_free(&b);
  return CONF_PASS;
}

static conf_result t_iflush_cuda(void* x) {
  (void)x;
  CONF_TRY(cuda_gate(NCCL_PTR_CUDA, "iflush of device memory"));
  nt_pair_opts o = {.before_open = gpu_before_open};
  return nt_run_pair(&o, fl_recv, fl_send);
}

/* ---- net_regmr_dmabuf_works ---- */

/* One dma-buf registration per side (page-aligned, offset 0, type NCCL_PTR_CUDA, as the core
 * makes them), its fd closed right after the call; messages across it, one of zero bytes. */
enum { DB = 4 << 20 };
static const struct {
  size_t off, len;
} db_msgs[] = {{0, DB}, {4096 + 13, 1000}, {(1 << 20) + 1, 65536}, {0, 0}, {DB - 4096, 4096}};
enum { DB_NMSG = sizeof db_msgs / sizeof db_msgs[0] };

/* A failure after the fd was closed is most likely the plugin relying on it (said once: the
 * peer's reason may carry it already). */
static const char fd_rule[] = "note: the dma-buf fd had been closed right after regMrDmaBuf, as "
                              "the core does; the registration must hold its own reference";

static conf_result fd_hint(conf_result r) {
  if (r != CONF_FAIL || strstr(conf_reason(), fd_rule)) return r;
  char text[1400];
  snprintf(text, sizeof text, "%s (%s)", conf_reason(), fd_rule);
  conf_set_reason(text);
  return r;
}

static conf_result db_register(nt_side* s, void* comm, gbuf* b, void** mh) {
  nt_plugin* p = &s->plugin;
  int fd = -1;
  CONF_TRY(side_setup(s, b, DB, &fd));
  *mh = NULL;
  NT_CALL_SETUP("regMrDmaBuf", p->api->regMrDmaBuf(comm, cm_void(b->dev), DB, NCCL_PTR_CUDA, 0,
                                                   fd, mh));
  if (close(fd) != 0)
    return conf_fail("closing the dma-buf fd after regMrDmaBuf failed (%s): the plugin closed "
                     "an fd the caller owns", strerror(errno));
  return CONF_PASS;
}

static conf_result db_recv(nt_side* s) {
  nt_plugin* p = &s->plugin;
  gbuf b;
  void* mh;
  int flushed = 0;
  CONF_TRY(db_register(s, s->recv[0], &b, &mh));
  for (int i = 0; i < DB_NMSG; i++) {
    char what[128];
    snprintf(what, sizeof what, "message %d (%zu bytes at offset %zu of the dma-buf)", i + 1,
             db_msgs[i].len, db_msgs[i].off);
    CONF_TRY(fd_hint(recv_into_gpu(p, s->recv[0], &b, db_msgs[i].off, db_msgs[i].len, mh,
                                   0xDB0F0000ull + (uint64_t)i, &flushed, what)));
  }
  CONF_TRY(nt_dereg(p, s->recv[0], mh));
  gbuf_free(&b);
  return CONF_PASS;
}

static conf_result db_send(nt_side* s) {
  nt_plugin* p = &s->plugin;
  gbuf b;
  void* mh;
  CONF_TRY(db_register(s, s->send[0], &b, &mh));
  for (int i = 0; i < DB_NMSG; i++)
    CONF_TRY(fd_hint(send_from_gpu(p, s->send[0], &b, db_msgs[i].off, db_msgs[i].len, mh,
                                   0xDB0F0000ull + (uint64_t)i)));
  CONF_TRY(nt_dereg(p, s->send[0], mh));
  gbuf_free(&b);
  return CONF_PASS;
}

static conf_result t_dmabuf(void* x) {
  (void)x;
  CONF_TRY(cuda_gate(NCCL_PTR_DMABUF, "regMrDmaBuf"));
  nt_pair_opts o = {.before_open = gpu_before_open};
  return nt_run_pair(&o, db_recv, db_send);
}

/* CUDA and two processes each start a context (seconds on a large machine): twice the time. */
const conf_test net_tests_cuda[] = {
    {"net_regmr_of_cuda_memory_works", t_regmr_cuda, 2},
    {"net_iflush_of_cuda_receive_completes", t_iflush_cuda, 2},
    {"net_regmr_dmabuf_works", t_dmabuf, 2},
};
const int net_tests_cuda_count = sizeof net_tests_cuda / sizeof net_tests_cuda[0];
