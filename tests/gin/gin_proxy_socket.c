/* The GIN proxy (core/gin) between two processes through the socket plugin's RMA table
 * (libnccl-net-weft-socket.so, ncclRmaPlugin_v15), with CPU threads playing the kernel: they
 * read the per-context structs gin_proxy_fill_gpu_ctx wrote, claim queue slots and write
 * descriptors in NCCL 2.30.7's proxy format (abi/gin/gin_proxy_v2_30.h, itself checked against
 * NVIDIA's header by gin_gfd_matches_nvidia_2.30.7) in 16-byte pieces in random order, as
 * kernels do. Host memory stands in for the GPU-visible queues, counters and signals.
 *
 * Per rank and context, to the other rank: ROUNDS blocks of random size and random bytes (from
 * the seed) with, in turn, a put + signal inc + counter, a put then a signal alone (add), a
 * putValue of 1, 2, 4 or 8 bytes + signal add, a put + signal add + counter; then a VA signal
 * into a window word, a flush, and a get of the peer's whole send area. The receiving side
 * checks, each time it sees the signal change, that the value is one the sender's sequence
 * reaches and that every block that value covers has landed whole (a put before its signal),
 * then the final values, the counters, the VA word and the get's bytes, each against values
 * computed independently from the seed. Last, a descriptor naming a signal past the
 * communicator's is refused: the proxy reports ncclInvalidUsage through on_error.
 * Case "staged": the proxy's staged mode (a backend that moves host memory only, windows it
 * cannot register: GPU memory): the window and the signals are never registered with the
 * backend; the bytes go through the copy callbacks and the proxies' rings (a get as a request
 * answered by reply messages); everything is checked as above.
 * Case "gin13": the same through the socket library's ncclGinPlugin_v13 as core/plugin adapts
 * a loaded GIN v13 plugin (its host puts as an RMA v15 view), the path of NCCL_GIN_PLUGIN.
 * Case "config": bad configurations are refused. The seed is printed (WEFT_TEST_SEED). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gin/gin_proxy.h"
#include "plugin/kind_shim.h"
#include "testutil.h"

#define NCTX 2
#define NSIG 3
#define NCTR 2
#define QSIZE 16 /* small: the kernel side waits for credits */
#define ROUNDS 96
#define BLOCK 2048
#define AREA ((size_t)ROUNDS * BLOCK)          /* per context */
#define SEND_AT(x) ((size_t)(x) * AREA)         /* send areas: [0, NCTX * AREA) */
#define RECV_AT(x) ((size_t)(NCTX + (x)) * AREA) /* receive areas */
#define GET_AT(x) ((size_t)(2 * NCTX + (x)) * AREA)
#define VA_AT ((size_t)3 * NCTX * AREA)         /* the VA signal word */
#define WIN_BYTES (VA_AT + 64)

static uint64_t seed;
static const ncclRma_v15_t* rma;
static int staged; /* case "staged": windows the backend never sees, bytes through the proxy */
static uint64_t copied_in, copied_out;

/* What the library would pass in device mode: cudaMemcpy into and out of GPU memory. */
/* An aligned 64-bit word (a VA signal's read-modify-write) moves as one atomic access, as a
 * kernel polling it sees a DMA of it. */
static ncclResult_t copy_in(void* arg, void* window_mem, const void* host, size_t n) {
  (void)arg;
  if (n == 8 && (uintptr_t)window_mem % 8 == 0)
    __atomic_store_n((uint64_t*)window_mem, *(const uint64_t*)host, __ATOMIC_RELEASE);
  else
    memcpy(window_mem, host, n);
  __atomic_fetch_add(&copied_in, n, __ATOMIC_RELAXED);
  return ncclSuccess;
}
static ncclResult_t copy_out(void* arg, void* host, const void* window_mem, size_t n) {
  (void)arg;
  if (n == 8 && (uintptr_t)window_mem % 8 == 0)
    *(uint64_t*)host = __atomic_load_n((const uint64_t*)window_mem, __ATOMIC_ACQUIRE);
  else
    memcpy(host, window_mem, n);
  __atomic_fetch_add(&copied_out, n, __ATOMIC_RELAXED);
  return ncclSuccess;
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level > NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* ---- what each round is, computed the same way by sender and receiver ---------------------- */
static uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t s = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b << 17) ^ (c << 33) ^ (d << 49);
  for (int i = 0; i < 3; i++) s = test_rand(&s) + 0x2545f4914f6cdd1dull;
  return s;
}
static uint8_t data_byte(int src, int x, int round, size_t k) {
  return (uint8_t)(mix((uint64_t)src + 1, (uint64_t)x + 1, (uint64_t)round + 1, k) >> 29);
}
typedef struct {
  int kind; /* 0 put+inc+counter, 1 put then signal add, 2 putValue+add, 3 put+add+counter */
  size_t size;
  uint64_t add; /* signal increment */
} round_t;
static round_t round_of(int src, int x, int i) {
  round_t r;
  uint64_t m = mix((uint64_t)src + 7, (uint64_t)x + 7, (uint64_t)i + 7, 99);
  r.kind = i % 4;
  if (r.kind == 2) r.size = (size_t)1 << (m % 4);
  else r.size = 1 + (size_t)(m % BLOCK);
  r.add = r.kind == 0 ? 1 : 1 + (m >> 40) % 1000;
  return r;
}
static int counted(int kind) { return kind == 0 || kind == 3; }

/* ---- the kernel's side ------------------------------------------------------------------------ */
typedef struct {
  int rank, peer, x;
  ncclGinProxyGpuCtx_v2_30_t* gctx;
  void* win_mh;
  uint8_t* win;
  uint64_t* signals; /* every context's */
  uint64_t rng;
  int failed;
  int expect_error;
} kernel_t;

static ncclResult_t seen_error;
/* The proxy failed: what the abort flag tells a kernel. Kernel-side waits give up on it. */
static void on_error(void* arg, ncclResult_t why) {
  (void)arg;
  __atomic_store_n(&seen_error, why, __ATOMIC_RELEASE);
}

static void give_up_if_failed(const kernel_t* k, const char* where) {
  ncclResult_t e = __atomic_load_n(&seen_error, __ATOMIC_ACQUIRE);
  if (e != ncclSuccess && !k->expect_error) {
    fprintf(stderr, "rank %d context %d: %s: the proxy failed (%d)\n", k->rank, k->x, where, (int)e);
    exit(1);
  }
}


static void post(kernel_t* k, const ncclGinProxyV2_30Fields* f) {
  ncclGinProxyGpuCtx_v2_30_t* c = k->gctx;
  uint32_t* pis = (uint32_t*)c->pis;
  uint32_t* cis = (uint32_t*)c->cis;
  ncclGinProxyGfd_v2_30_t* q = (ncclGinProxyGfd_v2_30_t*)c->queues + (size_t)k->peer * c->queueSize;
  uint32_t idx = __atomic_fetch_add(&pis[k->peer], 1, __ATOMIC_RELAXED);
  while (c->queueSize <= idx - __atomic_load_n(&cis[k->peer], __ATOMIC_ACQUIRE)) {
    give_up_if_failed(k, "waiting for a queue slot");
    sched_yield();
  }
  ncclGinProxyGfd_v2_30_t g;
  ncclGinProxyV2_30Build(&g, f);
  ncclGinProxyGfd_v2_30_t* slot = &q[idx & (c->queueSize - 1)];
  int order[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int i = 7; i > 0; i--) {
    int j = (int)(test_rand(&k->rng) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < 8; i++) {
    __atomic_store_n(&slot->qword[2 * order[i] + 1], g.qword[2 * order[i] + 1], __ATOMIC_RELEASE);
    __atomic_store_n(&slot->qword[2 * order[i]], g.qword[2 * order[i]], __ATOMIC_RELEASE);
  }
}

/* flush as the kernel's ncclGin::flush: wait until the proxy consumed every GFD to peer. */
static void wait_consumed(kernel_t* k) {
  ncclGinProxyGpuCtx_v2_30_t* c = k->gctx;
  uint32_t pi = __atomic_load_n(&((uint32_t*)c->pis)[k->peer], __ATOMIC_RELAXED);
  while ((int32_t)(pi - __atomic_load_n(&((uint32_t*)c->cis)[k->peer], __ATOMIC_ACQUIRE)) > 0) {
    give_up_if_failed(k, "flush");
    sched_yield();
  }
}

static void* sender(void* arg) {
  kernel_t* k = arg;
  uintptr_t mh = (uintptr_t)k->win_mh;
  for (int i = 0; i < ROUNDS; i++) {
    round_t r = round_of(k->rank, k->x, i);
    size_t src = SEND_AT(k->x) + (size_t)i * BLOCK, dst = RECV_AT(k->x) + (size_t)i * BLOCK;
    for (size_t b = 0; b < r.size; b++) k->win[src + b] = data_byte(k->rank, k->x, i, b);
    ncclGinProxyV2_30Fields f = {.size = r.size, .src_off = src, .src_handle = mh,
                                 .dst_off = dst, .dst_handle = mh, .strong = 1};
    switch (r.kind) {
      case 0:
        f.op = NCCL_GIN_PROXY_V2_30_OP_PUT | NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_INC |
               NCCL_GIN_PROXY_V2_30_OP_WITH_COUNTER;
        f.signal_id = 1, f.signal_value = 1, f.counter_id = 1;
        post(k, &f);
        break;
      case 1: {
        f.op = NCCL_GIN_PROXY_V2_30_OP_PUT;
        post(k, &f);
        ncclGinProxyV2_30Fields s = {.op = NCCL_GIN_PROXY_V2_30_OP_PUT |
                                           NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD,
                                     .signal_id = 1, .signal_value = r.add, .strong = 1};
        post(k, &s);
        break;
      }
      case 2: {
        uint64_t v = 0;
        for (size_t b = 0; b < r.size; b++) v |= (uint64_t)data_byte(k->rank, k->x, i, b) << (8 * b);
        /* the bits past the value's size are garbage, as in a reused kernel descriptor */
        if (r.size < 8) v |= test_rand(&k->rng) << (8 * r.size);
        f.op = NCCL_GIN_PROXY_V2_30_OP_PUT | NCCL_GIN_PROXY_V2_30_OP_WITH_INLINE |
               NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD;
        f.value = v, f.src_off = 0, f.src_handle = 0;
        f.signal_id = 1, f.signal_value = r.add;
        post(k, &f);
        break;
      }
      default:
        f.op = NCCL_GIN_PROXY_V2_30_OP_PUT | NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD |
               NCCL_GIN_PROXY_V2_30_OP_WITH_COUNTER;
        f.signal_id = 1, f.signal_value = r.add, f.counter_id = 1;
        post(k, &f);
    }
  }
  ncclGinProxyV2_30Fields va = {.op = NCCL_GIN_PROXY_V2_30_OP_VA_SIGNAL |
                                      NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD,
                                .src_off = VA_AT, .src_handle = mh,
                                .signal_value = 7 * (uint64_t)(k->x + 1), .strong = 1};
  post(k, &va);
  ncclGinProxyV2_30Fields fl = {.op = NCCL_GIN_PROXY_V2_30_OP_FLUSH};
  post(k, &fl);
  wait_consumed(k);
  /* counters: one per counted round, counted once the proxy's put completed */
  uint64_t want = 0;
  for (int i = 0; i < ROUNDS; i++) want += counted(round_of(k->rank, k->x, i).kind);
  uint64_t got = __atomic_load_n(&((uint64_t*)k->gctx->counters)[1], __ATOMIC_ACQUIRE);
  uint64_t other = __atomic_load_n(&((uint64_t*)k->gctx->counters)[0], __ATOMIC_ACQUIRE);
  if (got != want || other != 0) {
    fprintf(stderr, "rank %d context %d: counter 1 = %llu (want %llu), counter 0 = %llu\n",
            k->rank, k->x, (unsigned long long)got, (unsigned long long)want,
            (unsigned long long)other);
    k->failed = 1;
  }
  return NULL;
}

/* The receiving side: the peer's signal 1 of context x, block by block. */
static void* receiver(void* arg) {
  kernel_t* k = arg;
  uint64_t cum[ROUNDS];
  uint64_t s = 0;
  for (int i = 0; i < ROUNDS; i++) cum[i] = s += round_of(k->peer, k->x, i).add;
  uint64_t* sig = &((uint64_t*)k->gctx->signals)[1];
  int checked = -1; /* blocks verified so far */
  while (checked < ROUNDS - 1) {
    give_up_if_failed(k, "waiting for a signal");
    uint64_t v = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    if (v == 0) {
      sched_yield();
      continue;
    }
    /* each message adds its whole increment at once: only prefix sums can be seen */
    int upto = -1;
    for (int i = 0; i < ROUNDS && upto < 0; i++)
      if (cum[i] == v) upto = i;
    if (upto < checked) {
      fprintf(stderr, "rank %d context %d: signal %llu is no prefix sum of the peer's rounds "
              "at or after round %d\n", k->rank, k->x, (unsigned long long)v, checked);
      k->failed = 1;
      return NULL;
    }
    for (int i = checked + 1; i <= upto; i++) {
      round_t r = round_of(k->peer, k->x, i);
      const uint8_t* at = k->win + RECV_AT(k->x) + (size_t)i * BLOCK;
      for (size_t b = 0; b < r.size; b++)
        if (at[b] != data_byte(k->peer, k->x, i, b)) {
          fprintf(stderr, "rank %d context %d: signal %llu covers round %d, but its byte %zu "
                  "is %u, expected %u (the signal overtook its put)\n", k->rank, k->x,
                  (unsigned long long)v, i, b, at[b], data_byte(k->peer, k->x, i, b));
          k->failed = 1;
          return NULL;
        }
      for (size_t b = r.size; b < BLOCK; b++)
        if (at[b] != 0) {
          fprintf(stderr, "rank %d context %d: round %d wrote past its %zu bytes (byte %zu)\n",
                  k->rank, k->x, i, r.size, b);
          k->failed = 1;
          return NULL;
        }
    }
    checked = upto;
  }
  return NULL;
}

/* ---- the pipes between the two processes ------------------------------------------------------ */
typedef struct {
  int to[2][2]; /* to[r]: a pipe whose reader is rank r */
} pipes_t;
static void send_to(pipes_t* p, int r, const void* b, size_t n) {
  EXPECT(write(p->to[r][1], b, n) == (ssize_t)n);
}
static void recv_from(pipes_t* p, int me, void* b, size_t n) {
  EXPECT(test_read_full(p->to[me][0], b, n) == n);
}
static void barrier(pipes_t* p, int me) {
  char c = 'b';
  send_to(p, 1 - me, &c, 1);
  recv_from(p, me, &c, 1);
}

static int run_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)id;
  pipes_t* pp = arg;
  int peer = 1 - rank;
  void* pctx = NULL;
  EXPECT_OK(rma->init(&pctx, 0x6769, logger));
  char handles[2][NCCL_GIN_HANDLE_MAXSIZE];
  void* lc = NULL;
  EXPECT_OK(rma->listen(pctx, 0, handles[rank], &lc));
  send_to(pp, peer, handles[rank], sizeof handles[rank]);
  recv_from(pp, rank, handles[peer], sizeof handles[peer]);
  void* hp[2] = {handles[0], handles[1]};
  void* coll = NULL;
  EXPECT_OK(rma->connect(pctx, hp, nranks, rank, lc, &coll));
  ncclRmaConfig_v15_t rc = {.nContexts = NCTX, .trafficClass = -1, .rankStride = 1};
  void* rctx = NULL;
  EXPECT_OK(rma->createContext(coll, &rc, &rctx));

  uint8_t* win = calloc(1, WIN_BYTES);
  uint64_t* signals = calloc(NCTX * NSIG, sizeof *signals);
  EXPECT(win && signals);
  void *win_mh = NULL, *sig_mh = NULL;
  if (!staged) {
    EXPECT_OK(rma->regMrSym(coll, win, WIN_BYTES, NCCL_PTR_HOST, 0, &win_mh));
    EXPECT_OK(rma->regMrSym(coll, signals, NCTX * NSIG * sizeof *signals, NCCL_PTR_HOST,
                            NCCL_NET_MR_FLAG_FORCE_SO, &sig_mh));
  }

  /* what the library allocates at ncclDevCommCreate: here plain host memory */
  ncclGinProxyGfd_v2_30_t* queues = aligned_alloc(128, gin_proxy_queues_bytes(NCTX, 2, QSIZE));
  uint32_t* cis = calloc(NCTX * 2, sizeof *cis);
  uint32_t* pis = calloc(NCTX * 2, sizeof *pis);
  uint32_t* gets = calloc(NCTX * 4, sizeof *gets);
  uint64_t* counters = calloc(NCTX * NCTR, sizeof *counters);
  uint64_t* offsets = calloc(NCTX * NSIG, sizeof *offsets);
  EXPECT(queues && cis && pis && gets && counters && offsets);
  memset(queues, 0, gin_proxy_queues_bytes(NCTX, 2, QSIZE));
  ncclGinProxyGpuCtx_v2_30_t gctx[NCTX];
  gin_proxy_kernel_addrs a = {(uintptr_t)queues, (uintptr_t)pis, (uintptr_t)cis,
                              (uintptr_t)counters, (uintptr_t)signals, (uintptr_t)offsets,
                              (uintptr_t)gets, (uintptr_t)(gets + NCTX * 2)};
  gin_proxy_fill_gpu_ctx(gctx, NCTX, 2, QSIZE, NSIG, NCTR, &a);
  EXPECT(gctx[1].queues == (uintptr_t)(queues + 2 * QSIZE));
  EXPECT(gctx[1].signals == (uintptr_t)(signals + NSIG) && gctx[1].cis == (uintptr_t)(cis + 2));

  gin_proxy_config cfg = {.rank = rank, .nranks = 2, .ncontexts = NCTX, .nsignals = NSIG,
                          .ncounters = NCTR, .queue_size = QSIZE, .rma = rma, .coll = coll,
                          .ctx = rctx, .signals_mh = sig_mh, .queues = queues, .cis = cis,
                          .counters = counters, .on_error = on_error, .staged = staged,
                          .copy_in = copy_in, .copy_out = copy_out, .signals_host = signals};
  gin_proxy* proxy = NULL;
  EXPECT_OK(gin_proxy_create(&cfg, &proxy));
  if (staged) { /* the window's handle is the proxy's own */
    uint64_t h = 0;
    EXPECT_OK(gin_proxy_window_add(proxy, win, WIN_BYTES, &h));
    EXPECT_EQ_INT(h, 1);
    win_mh = (void*)(uintptr_t)h;
  } else {
    uint64_t h;
    EXPECT_RES(gin_proxy_window_add(proxy, win, WIN_BYTES, &h), ncclInvalidUsage);
  }
  EXPECT_OK(gin_proxy_start(proxy));
  barrier(pp, rank);

  kernel_t snd[NCTX], rcv[NCTX];
  pthread_t ts[NCTX], tr[NCTX];
  for (int x = 0; x < NCTX; x++) {
    snd[x] = (kernel_t){rank, peer, x, &gctx[x], win_mh, win, signals, mix(rank, x, 5, 5), 0, 0};
    rcv[x] = snd[x];
    EXPECT(pthread_create(&tr[x], NULL, receiver, &rcv[x]) == 0);
    EXPECT(pthread_create(&ts[x], NULL, sender, &snd[x]) == 0);
  }
  int failed = 0;
  for (int x = 0; x < NCTX; x++) {
    pthread_join(ts[x], NULL);
    pthread_join(tr[x], NULL);
    failed |= snd[x].failed | rcv[x].failed;
  }
  EXPECT(!failed);
  /* the signals: only id 1 of each context moved; the VA word got 7 + 14 */
  for (int x = 0; x < NCTX; x++) {
    uint64_t want = 0;
    for (int i = 0; i < ROUNDS; i++) want += round_of(peer, x, i).add;
    EXPECT_EQ_INT(__atomic_load_n(&signals[x * NSIG + 1], __ATOMIC_ACQUIRE), want);
    EXPECT_EQ_INT(signals[x * NSIG + 0], 0);
    EXPECT_EQ_INT(signals[x * NSIG + 2], 0);
  }
  for (int spin = 0; __atomic_load_n((uint64_t*)(void*)(win + VA_AT), __ATOMIC_ACQUIRE) != 21;
       spin++) {
    EXPECT(spin < 200000);
    sched_yield();
  }
  barrier(pp, rank); /* every put to either rank has landed */

  if (staged) { /* every received byte came in through copy_in, every sent one out of copy_out */
    uint64_t in = 0, out = 0;
    for (int x = 0; x < NCTX; x++)
      for (int i = 0; i < ROUNDS; i++) {
        in += round_of(peer, x, i).size;
        out += round_of(rank, x, i).kind == 2 ? 0 : round_of(rank, x, i).size;
      }
    EXPECT(__atomic_load_n(&copied_in, __ATOMIC_ACQUIRE) >= in);
    EXPECT(__atomic_load_n(&copied_out, __ATOMIC_ACQUIRE) >= out);
  }
  /* get: the peer's whole send area of each context, then a flush, as ncclGin get + wait */
  for (int x = 0; x < NCTX; x++) {
    kernel_t* k = &snd[x];
    ncclGinProxyV2_30Fields g = {.op = NCCL_GIN_PROXY_V2_30_OP_GET, .size = AREA,
                                 .src_off = SEND_AT(x), .src_handle = (uintptr_t)win_mh,
                                 .dst_off = GET_AT(x), .dst_handle = (uintptr_t)win_mh};
    post(k, &g);
    ncclGinProxyV2_30Fields fl = {.op = NCCL_GIN_PROXY_V2_30_OP_FLUSH};
    post(k, &fl);
    wait_consumed(k);
    for (int i = 0; i < ROUNDS; i++) {
      round_t r = round_of(peer, x, i);
      const uint8_t* at = win + GET_AT(x) + (size_t)i * BLOCK;
      size_t n = r.size; /* the sender wrote every round's bytes into its send area */
      for (size_t b = 0; b < BLOCK; b++) {
        uint8_t want = b < n ? data_byte(peer, x, i, b) : 0;
        if (at[b] != want) {
          fprintf(stderr, "rank %d context %d: get: round %d byte %zu is %u, expected %u\n", rank,
                  x, i, b, at[b], want);
          exit(1);
        }
      }
    }
  }
  EXPECT_OK(gin_proxy_error(proxy));
  barrier(pp, rank);

  /* a descriptor naming signal NSIG (one past the last): refused, reported once */
  if (rank == 0) {
    ncclGinProxyV2_30Fields bad = {.op = NCCL_GIN_PROXY_V2_30_OP_PUT |
                                         NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_INC,
                                   .signal_id = NSIG, .signal_value = 1};
    snd[0].expect_error = 1;
    post(&snd[0], &bad);
    for (int spin = 0; gin_proxy_error(proxy) == ncclSuccess; spin++) {
      EXPECT(spin < 2000000);
      sched_yield();
    }
    EXPECT_RES(gin_proxy_error(proxy), ncclInvalidUsage);
    EXPECT_EQ_INT(__atomic_load_n(&seen_error, __ATOMIC_ACQUIRE), ncclInvalidUsage);
  } else {
    EXPECT_EQ_INT(seen_error, ncclSuccess);
  }
  barrier(pp, rank);

  EXPECT_OK(gin_proxy_destroy(proxy));
  if (!staged) {
    EXPECT_OK(rma->deregMrSym(coll, sig_mh));
    EXPECT_OK(rma->deregMrSym(coll, win_mh));
  }
  EXPECT_OK(rma->destroyContext(rctx));
  barrier(pp, rank);
  EXPECT_OK(rma->closeColl(coll));
  EXPECT_OK(rma->closeListen(lc));
  EXPECT_OK(rma->finalize(pctx));
  free(queues), free(cis), free(pis), free(gets), free(counters), free(offsets);
  free(win), free(signals);
  printf("rank %d: %d rounds x %d contexts each way, signals, counters, VA signal%s: ok\n",
         rank, ROUNDS, NCTX, staged ? ", get (staged)" : ", get");
  return 0;
}

/* Bad configurations: each refused with ncclInvalidArgument, nothing created. */
static int config_case(void) {
  static ncclGinProxyGfd_v2_30_t q[4];
  uint32_t cis[2] = {0, 0};
  int dummy;
  gin_proxy_config good = {.rank = 0, .nranks = 2, .ncontexts = 1, .queue_size = 2,
                           .rma = rma, .coll = &dummy, .ctx = &dummy, .queues = q, .cis = cis};
  gin_proxy* p = NULL;
  gin_proxy_config c = good;
  c.queue_size = 3;
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  c = good, c.rank = 2;
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  c = good, c.ncontexts = 0;
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  c = good, c.nsignals = 4; /* signals without their registration */
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  c = good, c.ncounters = 1; /* counters without memory */
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  c = good, c.rma = NULL;
  EXPECT_RES(gin_proxy_create(&c, &p), ncclInvalidArgument);
  EXPECT(p == NULL);
  EXPECT_OK(gin_proxy_destroy(NULL));
  printf("bad configurations refused\n");
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  seed = test_seed((uint64_t)time(NULL) * 2654435761u);
  printf("seed %llu (WEFT_TEST_SEED=%llu reruns it)\n", (unsigned long long)seed,
         (unsigned long long)seed);
  const char* path = WEFT_TEST_LIBDIR "/libnccl-net-weft-socket.so";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return 1;
  }
  static weft_gin_view gin_view;
  if (argc > 1 && !strcmp(argv[1], "gin13")) {
    char why[128] = "";
    const void* t = dlsym(lib, "ncclGinPlugin_v13");
    EXPECT(t != NULL);
    EXPECT_OK(gin_shim_adapt(t, 13, &gin_view, why, sizeof why));
    EXPECT(gin_view.has_host_rma);
    rma = &gin_view.rma;
    printf("backend: ncclGinPlugin_v13 through core/plugin's adapter\n");
  } else {
    rma = dlsym(lib, "ncclRmaPlugin_v15");
    EXPECT(rma != NULL);
  }
  if (argc > 1 && !strcmp(argv[1], "config")) return config_case();
  staged = argc > 1 && !strcmp(argv[1], "staged");
  pipes_t p;
  for (int r = 0; r < 2; r++) EXPECT(pipe(p.to[r]) == 0);
  return test_fork_plain(2, run_rank, &p, 60);
}
