/* Misuse of device communicators (issue 18): the crash and overflow findings, fixed and tested
 * in host mode (tests/mp/comm_destroy_in_group.c, tests/mp/api_bad_args.c,
 * tests/host/host_mismatch.c), checked in device mode on one GPU that the ranks share (weft
 * allows it; stock NCCL does not). Buffers are cudaMalloc'd device memory. Each case is a
 * subcommand; every wait is bounded (the watchdog, WEFT_GPU_WATCHDOG_S = 60 s by default).
 *
 *   abort_in_group, destroy_in_group  an AllReduce and a Send/Recv queued on communicator a and
 *       an AllReduce on b in one group, then ncclCommAbort / ncclCommDestroy of a inside it:
 *       both calls and ncclGroupEnd return ncclSuccess (a's operations are dropped), b's
 *       AllReduce gives the right sums, no stream hangs, and a's stale handle (and b's after
 *       its destroy, and a forged one) are refused with ncclInvalidArgument.
 *   destroyed_handle  every kind of call on a destroyed communicator: ncclInvalidArgument with
 *       a WARN saying it is not a live communicator, no crash (ASan runs see any read).
 *   register_overflow  ncclCommRegister / ncclCommWindowRegister of a device buffer with
 *       SIZE_MAX, SIZE_MAX/2+1, size 0, NULL buffer, NULL handle, bad window flags:
 *       ncclInvalidArgument with a WARN naming the argument; then a correct registration is
 *       used by an AllReduce and deregistered, and deregistering it again is refused.
 *   register_past_end  (device memory only) a registration that runs past the end of its
 *       cudaMalloc allocation: ncclInvalidArgument with a WARN naming the size.
 *   p2p_small, p2p_large, coll_count, coll_dtype, coll_op, bcast_root  mismatched arguments
 *       between ranks (gpu_misuse_mismatch.c; --procs only); the WARN the host test requires
 *       must be in some rank's stderr, which this program captures and then prints.
 *
 *   gpu_misuse CASE (--procs N | --gpus N) [--default-seed S]   (WEFT_TEST_SEED overrides S)
 * --gpus N: N ranks in this process on one thread (grouped ncclCommInitRank: ncclCommInitAll
 * takes each device once); --procs N: N forked processes. Built against gpu_fake_cuda.c
 * (GPU_FAKE_CUDA, WEFT_DEVICE=host) the same logic runs on host memory without a GPU.
 * Exit: 0 passed, 1 failed, 77 skipped (no usable GPU, or a case that needs real device
 * memory in the fake-CUDA build). */
#include "gpu_misuse.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define COUNT 4099 /* floats of the in-group AllReduces: an odd size, as in the host test */
#define REG_BYTES ((size_t)1 << 20)

/* ---- shared helpers ------------------------------------------------------------------------ */

int misuse_expect(const gpu_rank* r, const char* call, ncclResult_t got, ncclResult_t want,
                  const char* has) {
  const char* last = ncclGetLastError(NULL);
  if (got == want && (!has || (last && strstr(last, has)))) return 0;
  if (got != want)
    fprintf(stderr, "FAIL rank %d: %s returned %d (%s), expected %s\n", r->rank, call, (int)got,
            ncclGetErrorString(got), ncclGetErrorString(want));
  else
    fprintf(stderr, "FAIL rank %d: %s: the last WARN (\"%s\") does not contain \"%s\"\n",
            r->rank, call, last ? last : "", has);
  return 1;
}

static int copy_on(const gpu_rank* r, void* dst, const void* src, size_t n,
                   enum cudaMemcpyKind kind, const char* where) {
  cudaError_t e = cudaSetDevice(r->dev);
  if (e == cudaSuccess) e = cudaMemcpy(dst, src, n, kind);
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "FAIL rank %d: cudaMemcpy %s the GPU: %s\n", r->rank, where,
          cudaGetErrorString(e));
  return 1;
}

int misuse_upload(const gpu_rank* r, void* dev, const void* host, size_t n) {
  return copy_on(r, dev, host, n, cudaMemcpyHostToDevice, "to");
}

int misuse_download(const gpu_rank* r, void* host, const void* dev, size_t n) {
  return copy_on(r, host, dev, n, cudaMemcpyDeviceToHost, "from");
}

void* misuse_dev_alloc(const gpu_rank* r, size_t n, int fill) {
  void* p = NULL;
  CUDA_OK(cudaSetDevice(r->dev));
  CUDA_OK(cudaMalloc(&p, n));
  unsigned char* h = malloc(n);
  if (!h) exit(GPU_FAIL);
  memset(h, fill, n);
  if (misuse_upload(r, p, h, n)) exit(GPU_FAIL);
  free(h);
  return p;
}

/* ---- stale handles ------------------------------------------------------------------------- */

#define STALE_WARN "is not a live communicator"

/* Every kind of call on a handle that is no longer (or never was) a communicator. */
static int refused(const gpu_rank* r, ncclComm_t stale, void* buf) {
  int n = -1, failed = 0;
  ncclResult_t async;
  void* h = NULL;
  failed += MISUSE_EXPECT(r, ncclCommCount(stale, &n), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommUserRank(stale, &n), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommCuDevice(stale, &n), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommGetAsyncError(stale, &async), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, stale, r->stream),
                          ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclSend(buf, 4, ncclFloat, 0, stale, r->stream),
                          ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommRegister(stale, buf, 16, &h), ncclInvalidArgument,
                          STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommFinalize(stale), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommDestroy(stale), ncclInvalidArgument, STALE_WARN);
  failed += MISUSE_EXPECT(r, ncclCommAbort(stale), ncclInvalidArgument, STALE_WARN);
  if (h != NULL) {
    fprintf(stderr, "FAIL rank %d: a refused ncclCommRegister wrote the handle\n", r->rank);
    failed++;
  }
  return failed;
}

/* A block every word of which is a communicator's start or end magic ("weftcomm"): refused
 * without being taken for one. */
static int forged_refused(const gpu_rank* r) {
  uint64_t* forged = malloc(64 * 1024);
  if (!forged) return 1;
  forged[0] = 0x77656674636f6d6dull;
  for (size_t i = 1; i < 64 * 1024 / 8; i++) forged[i] = 0x6d6d6f6374666577ull;
  int n = -1;
  int failed = MISUSE_EXPECT(r, ncclCommCount((ncclComm_t)forged, &n), ncclInvalidArgument, NULL);
  failed += MISUSE_EXPECT(r, ncclCommDestroy((ncclComm_t)forged), ncclInvalidArgument, NULL);
  free(forged);
  return failed;
}

/* ---- communicators ------------------------------------------------------------------------- */

/* A second communicator over the same ranks: a split in --procs mode; in one process a second
 * grouped init (ncclCommSplit is not available inside a group, and one thread drives every
 * rank). 0, or 1 (printed). */
static int second_comm(gpu_world* w, ncclComm_t* b) {
  ncclResult_t res;
  if (w->procs) {
    res = ncclCommSplit(w->loc[0].comm, 0, w->loc[0].rank, &b[0], NULL);
  } else {
    ncclUniqueId id;
    res = ncclGetUniqueId(&id);
    ncclResult_t g = res == ncclSuccess ? ncclGroupStart() : res;
    for (int i = 0; i < w->nlocal && g == ncclSuccess && res == ncclSuccess; i++) {
      CUDA_OK(cudaSetDevice(w->loc[i].dev));
      res = ncclCommInitRank(&b[i], w->nranks, id, w->loc[i].rank);
    }
    ncclResult_t e = g == ncclSuccess ? ncclGroupEnd() : g;
    if (res == ncclSuccess) res = e;
  }
  if (res == ncclSuccess) return 0;
  fprintf(stderr, "FAIL: creating the second communicator returned %d (%s): %s\n", (int)res,
          ncclGetErrorString(res), ncclGetLastError(NULL));
  return 1;
}

/* Finalize (grouped) and destroy comms[0..n), as the harness's teardown does. 0, or 1. */
static int finalize_destroy(gpu_world* w, ncclComm_t* comms) {
  int failed = 0;
  ncclResult_t g = gpu_group_start(w);
  for (int i = 0; i < w->nlocal && g == ncclSuccess; i++)
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommFinalize(comms[i]), ncclSuccess, NULL);
  ncclResult_t e = gpu_group_end(w);
  failed += g != ncclSuccess || e != ncclSuccess;
  for (int i = 0; i < w->nlocal; i++)
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommDestroy(comms[i]), ncclSuccess, NULL);
  return failed != 0;
}

/* ---- abort_in_group, destroy_in_group ------------------------------------------------------ */

typedef struct {
  float *s, *ra, *rb, *rp; /* input; a's AllReduce, b's AllReduce, the receive on a */
} grp_bufs;

/* Every local rank's input (integers below 1000: the sums are exact) into want's sum. */
static void group_inputs(gpu_world* w, grp_bufs* bufs, float* want) {
  memset(want, 0, COUNT * sizeof *want);
  float* h = malloc(COUNT * sizeof *h);
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    bufs[i].s = misuse_dev_alloc(r, COUNT * sizeof(float), 0);
    bufs[i].ra = misuse_dev_alloc(r, COUNT * sizeof(float), 0);
    bufs[i].rb = misuse_dev_alloc(r, COUNT * sizeof(float), 0);
    bufs[i].rp = misuse_dev_alloc(r, COUNT * sizeof(float), 0);
  }
  for (int k = 0; k < w->nranks; k++) { /* every rank's data, to sum what b must give */
    uint64_t seed = w->seed + (uint64_t)k;
    for (int j = 0; j < COUNT; j++) want[j] += h[j] = (float)(test_rand(&seed) % 1000);
    for (int i = 0; i < w->nlocal; i++)
      if (w->loc[i].rank == k && misuse_upload(&w->loc[i], bufs[i].s, h, COUNT * sizeof *h))
        exit(GPU_FAIL);
  }
  free(h);
}

/* The queued operations, then the abort or destroy of every local a, inside one group. */
static int group_with_abort(gpu_world* w, grp_bufs* bufs, ncclComm_t* a, ncclComm_t* b,
                            int do_abort) {
  int failed = MISUSE_EXPECT(&w->loc[0], ncclGroupStart(), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++) {
    gpu_rank* r = &w->loc[i];
    const int n = w->nranks, next = (r->rank + 1) % n, prev = (r->rank + n - 1) % n;
    failed += MISUSE_EXPECT(r, ncclAllReduce(bufs[i].s, bufs[i].ra, COUNT, ncclFloat, ncclSum,
                                             a[i], r->stream), ncclSuccess, NULL);
    failed += MISUSE_EXPECT(r, ncclSend(bufs[i].s, COUNT, ncclFloat, next, a[i], r->stream),
                            ncclSuccess, NULL);
    failed += MISUSE_EXPECT(r, ncclRecv(bufs[i].rp, COUNT, ncclFloat, prev, a[i], r->stream),
                            ncclSuccess, NULL);
    failed += MISUSE_EXPECT(r, ncclAllReduce(bufs[i].s, bufs[i].rb, COUNT, ncclFloat, ncclSum,
                                             b[i], r->stream), ncclSuccess, NULL);
  }
  for (int i = 0; i < w->nlocal; i++)
    failed += do_abort ? MISUSE_EXPECT(&w->loc[i], ncclCommAbort(a[i]), ncclSuccess, NULL)
                       : MISUSE_EXPECT(&w->loc[i], ncclCommDestroy(a[i]), ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], ncclGroupEnd(), ncclSuccess, NULL);
  return failed;
}

static int sums_right(gpu_world* w, grp_bufs* bufs, const float* want) {
  float* got = malloc(COUNT * sizeof *got);
  int failed = 0;
  for (int i = 0; i < w->nlocal && !failed; i++) {
    failed = misuse_download(&w->loc[i], got, bufs[i].rb, COUNT * sizeof *got);
    for (int j = 0; j < COUNT && !failed; j++)
      if (got[j] != want[j]) {
        fprintf(stderr, "FAIL rank %d: b's AllReduce in the group: element %d is %g, expected "
                "%g\n", w->loc[i].rank, j, got[j], want[j]);
        failed = 1;
      }
  }
  free(got);
  return failed;
}

static int in_group_body(gpu_world* w, int do_abort) {
  const char* what = do_abort ? "ncclCommAbort" : "ncclCommDestroy";
  ncclComm_t a[GPU_MAX_LOCAL], b[GPU_MAX_LOCAL];
  grp_bufs bufs[GPU_MAX_LOCAL];
  float* want = malloc(COUNT * sizeof *want);
  gpu_watchdog_arm("%s inside a group", what);
  if (second_comm(w, b)) gpu_die(w);
  group_inputs(w, bufs, want);
  /* a warm-up on a: its connections and device resources exist when the group drops it */
  int failed = MISUSE_EXPECT(&w->loc[0], gpu_group_start(w), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++)
    failed += MISUSE_EXPECT(&w->loc[i], ncclAllReduce(bufs[i].s, bufs[i].ra, COUNT, ncclFloat,
                            ncclSum, w->loc[i].comm, w->loc[i].stream), ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_end(w), ncclSuccess, NULL);
  if (failed || gpu_wait(w, "the warm-up AllReduce on a")) gpu_die(w);
  for (int i = 0; i < w->nlocal; i++) a[i] = w->loc[i].comm;
  failed = group_with_abort(w, bufs, a, b, do_abort);
  /* a is gone whatever the results: the harness waits on and tears down b instead */
  for (int i = 0; i < w->nlocal; i++) w->loc[i].comm = b[i];
  if (gpu_wait(w, "the group after the abort/destroy of a")) gpu_die(w);
  failed += sums_right(w, bufs, want);
  for (int i = 0; i < w->nlocal; i++) failed += refused(&w->loc[i], a[i], bufs[i].s);
  failed += finalize_destroy(w, b);
  for (int i = 0; i < w->nlocal; i++) {
    w->loc[i].comm = NULL;
    failed += refused(&w->loc[i], b[i], bufs[i].s);
  }
  failed += forged_refused(&w->loc[0]);
  gpu_watchdog_disarm();
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaFree(bufs[i].s));
    CUDA_OK(cudaFree(bufs[i].ra));
    CUDA_OK(cudaFree(bufs[i].rb));
    CUDA_OK(cudaFree(bufs[i].rp));
  }
  free(want);
  if (!failed && w->loc[0].rank == 0)
    printf("%s inside a group: the other communicator's AllReduce is right, stale handles "
           "refused\n", what);
  return failed ? GPU_FAIL : GPU_PASS;
}

static int abort_in_group_body(gpu_world* w, void* arg) {
  (void)arg;
  return in_group_body(w, 1);
}

static int destroy_in_group_body(gpu_world* w, void* arg) {
  (void)arg;
  return in_group_body(w, 0);
}

/* ---- destroyed_handle ---------------------------------------------------------------------- */

static int destroyed_handle_body(gpu_world* w, void* arg) {
  (void)arg;
  ncclComm_t c[GPU_MAX_LOCAL];
  void* buf[GPU_MAX_LOCAL];
  gpu_watchdog_arm("destroyed_handle");
  int failed = MISUSE_EXPECT(&w->loc[0], gpu_group_start(w), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++) {
    c[i] = w->loc[i].comm;
    buf[i] = misuse_dev_alloc(&w->loc[i], 64 * sizeof(float), 0);
    failed += MISUSE_EXPECT(&w->loc[i], ncclAllReduce(buf[i], buf[i], 64, ncclFloat, ncclSum,
                            c[i], w->loc[i].stream), ncclSuccess, NULL);
  }
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_end(w), ncclSuccess, NULL);
  if (failed || gpu_wait(w, "an AllReduce before the destroy")) gpu_die(w);
  failed += finalize_destroy(w, c);
  for (int i = 0; i < w->nlocal; i++) {
    w->loc[i].comm = NULL;
    failed += refused(&w->loc[i], c[i], buf[i]);
  }
  failed += forged_refused(&w->loc[0]);
  gpu_watchdog_disarm();
  for (int i = 0; i < w->nlocal; i++) CUDA_OK(cudaFree(buf[i]));
  if (!failed && w->loc[0].rank == 0)
    printf("destroyed_handle: every call on a destroyed communicator refused\n");
  return failed ? GPU_FAIL : GPU_PASS;
}

/* ---- register_overflow, register_past_end -------------------------------------------------- */

/* The refused registrations of one rank's device buffer (issue 18, finding 8). */
static int bad_registrations(const gpu_rank* r, void* dev) {
  void* h = NULL;
  ncclWindow_t win = NULL;
  int failed = 0;
  failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev, SIZE_MAX, &h), ncclInvalidArgument,
                          "size = 18446744073709551615");
  failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev, SIZE_MAX / 2 + 1, &h),
                          ncclInvalidArgument, "size = 9223372036854775808");
  failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev, REG_BYTES, NULL), ncclInvalidArgument,
                          "argument handle is NULL");
  failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, NULL, REG_BYTES, &h), ncclInvalidArgument,
                          "argument buff is NULL");
  failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev, 0, &h), ncclInvalidArgument,
                          "size is 0");
  failed += MISUSE_EXPECT(r, ncclCommWindowRegister(r->comm, dev, SIZE_MAX, &win, 0),
                          ncclInvalidArgument, "size = 18446744073709551615");
  failed += MISUSE_EXPECT(r, ncclCommWindowRegister(r->comm, dev, REG_BYTES, NULL, 0),
                          ncclInvalidArgument, "argument win is NULL");
  failed += MISUSE_EXPECT(r, ncclCommWindowRegister(r->comm, dev, REG_BYTES, &win, 7),
                          ncclInvalidArgument, "winFlags = 7");
  failed += MISUSE_EXPECT(r, ncclCommDeregister(r->comm, NULL), ncclInvalidArgument,
                          "argument handle is NULL");
  failed += MISUSE_EXPECT(r, ncclCommWindowDeregister(r->comm, NULL), ncclInvalidArgument,
                          "argument win is NULL");
  if (h != NULL || win != NULL) {
    fprintf(stderr, "FAIL rank %d: a refused registration wrote its output\n", r->rank);
    failed++;
  }
  return failed;
}

/* A correct registration still works after the refused ones: an AllReduce in place on the
 * registered buffer (every rank's ones sum to nranks), deregistration, a second one refused. */
static int good_registration(gpu_world* w, void** dev) {
  void* h[GPU_MAX_LOCAL] = {0};
  const size_t n = REG_BYTES / sizeof(float);
  int failed = 0;
  float* one = malloc(REG_BYTES);
  for (size_t j = 0; j < n; j++) one[j] = 1.0f;
  for (int i = 0; i < w->nlocal; i++) {
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommRegister(w->loc[i].comm, dev[i], REG_BYTES, &h[i]),
                            ncclSuccess, NULL);
    failed += misuse_upload(&w->loc[i], dev[i], one, REG_BYTES);
  }
  if (failed) gpu_die(w);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_start(w), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++)
    failed += MISUSE_EXPECT(&w->loc[i], ncclAllReduce(dev[i], dev[i], n, ncclFloat, ncclSum,
                            w->loc[i].comm, w->loc[i].stream), ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_end(w), ncclSuccess, NULL);
  if (failed || gpu_wait(w, "an AllReduce on a registered buffer")) gpu_die(w);
  for (int i = 0; i < w->nlocal && !failed; i++) {
    failed += misuse_download(&w->loc[i], one, dev[i], REG_BYTES);
    for (size_t j = 0; j < n && !failed; j++)
      if (one[j] != (float)w->nranks) {
        fprintf(stderr, "FAIL rank %d: AllReduce on a registered buffer: element %zu is %g, "
                "expected %d\n", w->loc[i].rank, j, one[j], w->nranks);
        failed = 1;
      }
  }
  for (int i = 0; i < w->nlocal; i++) {
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommDeregister(w->loc[i].comm, h[i]), ncclSuccess,
                            NULL);
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommDeregister(w->loc[i].comm, h[i]),
                            ncclInvalidArgument, "is not registered");
  }
  free(one);
  return failed;
}

/* A correct window registration (collective: grouped) and its deregistration. */
static int good_window(gpu_world* w, void** dev) {
  ncclWindow_t win[GPU_MAX_LOCAL] = {0};
  int failed = MISUSE_EXPECT(&w->loc[0], gpu_group_start(w), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++)
    failed += MISUSE_EXPECT(&w->loc[i], ncclCommWindowRegister(w->loc[i].comm, dev[i], REG_BYTES,
                            &win[i], NCCL_WIN_COLL_SYMMETRIC), ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_end(w), ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_start(w), ncclSuccess, NULL);
  for (int i = 0; i < w->nlocal; i++)
    if (win[i])
      failed += MISUSE_EXPECT(&w->loc[i], ncclCommWindowDeregister(w->loc[i].comm, win[i]),
                              ncclSuccess, NULL);
  failed += MISUSE_EXPECT(&w->loc[0], gpu_group_end(w), ncclSuccess, NULL);
  return failed;
}

static int register_overflow_body(gpu_world* w, void* arg) {
  (void)arg;
  void* dev[GPU_MAX_LOCAL];
  int failed = 0;
  gpu_watchdog_arm("register_overflow");
  for (int i = 0; i < w->nlocal; i++) {
    dev[i] = misuse_dev_alloc(&w->loc[i], REG_BYTES, 0);
    failed += bad_registrations(&w->loc[i], dev[i]);
  }
  failed += good_registration(w, dev);
  failed += good_window(w, dev);
  gpu_watchdog_disarm();
  for (int i = 0; i < w->nlocal; i++) CUDA_OK(cudaFree(dev[i]));
  if (!failed && w->loc[0].rank == 0)
    printf("register_overflow: bad sizes and NULLs refused; a correct registration and window "
           "work\n");
  return failed ? GPU_FAIL : GPU_PASS;
}

/* Sizes inside the address space that run past the cudaMalloc allocation: weft can see the
 * allocation's bounds (cuMemGetAddressRange) and must refuse them, naming the size. */
static int register_past_end_body(gpu_world* w, void* arg) {
  (void)arg;
#ifdef GPU_FAKE_CUDA
  (void)w;
  printf("SKIP: register_past_end needs device memory (fake CUDA buffers have no bounds)\n");
  return GPU_SKIP;
#else
  int failed = 0;
  for (int i = 0; i < w->nlocal; i++) {
    const gpu_rank* r = &w->loc[i];
    char* dev = misuse_dev_alloc(r, REG_BYTES, 0);
    void* h = NULL;
    ncclWindow_t win = NULL;
    failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev, REG_BYTES + 65536, &h),
                            ncclInvalidArgument, "size");
    failed += MISUSE_EXPECT(r, ncclCommRegister(r->comm, dev + REG_BYTES / 2, REG_BYTES, &h),
                            ncclInvalidArgument, "size");
    failed += MISUSE_EXPECT(r, ncclCommWindowRegister(r->comm, dev, 2 * REG_BYTES, &win, 0),
                            ncclInvalidArgument, "size");
    /* accepted by mistake: release them, so the communicator's teardown is not the test */
    if (h) ncclCommDeregister(r->comm, h);
    if (win) ncclCommWindowDeregister(r->comm, win);
    CUDA_OK(cudaFree(dev));
  }
  if (!failed && w->loc[0].rank == 0)
    printf("register_past_end: registrations past the allocation's end refused\n");
  return failed ? GPU_FAIL : GPU_PASS;
#endif
}

/* ---- the program --------------------------------------------------------------------------- */

typedef struct {
  const char* name;
  gpu_body_fn body;
  int procs_only; /* the mismatch cases: one rank per process, as the host test */
} misuse_case;

static const misuse_case cases[] = {
    {"abort_in_group", abort_in_group_body, 0},
    {"destroy_in_group", destroy_in_group_body, 0},
    {"destroyed_handle", destroyed_handle_body, 0},
    {"register_overflow", register_overflow_body, 0},
    {"register_past_end", register_past_end_body, 0},
    {"p2p_small", misuse_mismatch_body, 1},
    {"p2p_large", misuse_mismatch_body, 1},
    {"coll_count", misuse_mismatch_body, 1},
    {"coll_dtype", misuse_mismatch_body, 1},
    {"coll_op", misuse_mismatch_body, 1},
    {"bcast_root", misuse_mismatch_body, 1},
};

static void usage(void) {
  fprintf(stderr, "usage: gpu_misuse CASE (--procs N | --gpus N) [--default-seed S]; CASE:");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    fprintf(stderr, " %s", cases[i].name);
  fprintf(stderr, "\n");
  exit(2);
}

/* The ranks' stderr goes to a file while a mismatch case runs (forked ranks inherit it), so
 * the WARNs can be searched; it is printed afterwards either way. */
typedef struct {
  char path[64];
  int saved;
} log_capture;

static int capture_start(log_capture* lc) {
  snprintf(lc->path, sizeof lc->path, "/tmp/weft-gpu-misuse-%d.log", (int)getpid());
  int fd = open(lc->path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
  if (fd < 0) return -1;
  fflush(stderr);
  lc->saved = dup(2);
  dup2(fd, 2);
  close(fd);
  return 0;
}

/* Restores stderr, prints what was captured; 1 when want and want2 are in it (NULL: not
 * searched; want NULL: nothing is). */
static int capture_end(log_capture* lc, const char* want, const char* want2) {
  fflush(stderr);
  dup2(lc->saved, 2);
  close(lc->saved);
  FILE* f = fopen(lc->path, "r");
  int found = want == NULL, found2 = want == NULL || want2 == NULL;
  char line[4096];
  while (f && fgets(line, sizeof line, f)) {
    fputs(line, stderr);
    found |= want && strstr(line, want) != NULL;
    found2 |= want2 && strstr(line, want2) != NULL;
  }
  if (f) fclose(f);
  unlink(lc->path);
  if (!found) fprintf(stderr, "FAIL: no WARN contains \"%s\"\n", want);
  if (!found2) fprintf(stderr, "FAIL: no WARN contains \"%s\"\n", want2);
  return found && found2;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  gpu_set_cmdline(argc, argv);
  gpu_set_rerun_by_case(0);
  setvbuf(stdout, NULL, _IOLBF, 0);
  uint64_t default_seed = 18;
  if (argc == 6 && !strcmp(argv[4], "--default-seed"))
    default_seed = strtoull(argv[5], NULL, 0);
  else if (argc != 4)
    usage();
  const misuse_case* c = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!strcmp(argv[1], cases[i].name)) c = &cases[i];
  const int procs = !strcmp(argv[2], "--procs"), n = atoi(argv[3]);
  if (!c || (!procs && strcmp(argv[2], "--gpus")) || n < 2 || n > GPU_MAX_LOCAL ||
      (c->procs_only && !procs))
    usage();
  /* Bounds well inside ctest's: the host test's timeout for the mismatch cases, and shorter
   * waits than gpu_coll's (nothing here moves much data). */
  setenv("WEFT_TIMEOUT_MS", "30000", 0);
  setenv("WEFT_GPU_WATCHDOG_S", "60", 0);
  setenv("WEFT_GPU_WAIT_S", "30", 0);
  gpu_set_share(1); /* one GPU for every rank */
  const uint64_t seed = test_seed(default_seed);
  char env[400], banner[1024];
  gpu_format_env(env, sizeof env);
  snprintf(banner, sizeof banner, "gpu_misuse: %s, %d ranks %s, seed 0x%llx;%s\n", c->name, n,
           procs ? "in as many processes" : "in one process", (unsigned long long)seed, env);
  gpu_set_banner(banner);
  const char* want = c->procs_only ? misuse_mismatch_want(c->name) : NULL;
  log_capture lc;
  if (want && capture_start(&lc) != 0) {
    perror("gpu_misuse: the log file");
    return GPU_FAIL;
  }
  int rc = procs ? gpu_run_procs(n, c->body, (void*)c->name, seed, 100)
                 : gpu_run_gpus(n, 1, c->body, (void*)c->name, seed);
  const char* coll_warn =
      !strncmp(c->name, "p2p_", 4) ? NULL : "every rank must call the same collectives";
  /* a skip or a failure prints the log, but only a passing run is searched */
  if (want && !capture_end(&lc, rc == GPU_PASS ? want : NULL, coll_warn)) rc = GPU_FAIL;
  if (rc == GPU_FAIL) gpu_print_rerun(stderr, seed, NULL);
  return rc;
}
