/* Zero copy (weft_algo.zero_copy, algo_direct.h) under a simulator: the direct step generators
 * run on 2..8 simulated ranks and one or several channels in one thread, by the rules the
 * kernels follow (device_kernel.cuh run_work / simple_step / wait_step / post_step, conn.h):
 *  - a step may run when every receive connection has tail > step and every send connection
 *    head + WEFT_NSTEPS > step; it runs atomically (every read, then the writes); then its sends
 *    do tail++ (publish: this rank's data for the step is ready) and its receives head++
 *    (done reading the peer's buffer for the step);
 *  - a receive reads the peer's own sendbuff or recvbuff (zc_from) at zc_off, through the
 *    symmetric windows of weft_algo.zc exactly as run_work finds them; a send stores nothing;
 *  - a rank's channel runs its streams pc-major (stream 0 step i, then stream 1 step i) and
 *    ends its work item by waiting until every send connection's head equals its tail.
 * A deterministic pseudo-random scheduler picks, at each tick, one (rank, channel) whose next
 * step (or end-of-work drain) may run; weights and stickiness vary per seed so that some ranks
 * race ahead while others lag. (Atomic steps lose nothing: a peer's write that could land in
 * the middle of a real step's reads could as well be scheduled just before the step.) Each
 * run does two operations back to back on the same buffers: a rank writes the second
 * operation's input only once every channel of its first one has drained, so a peer still
 * reading the first operation's data reads the wrong values.
 *
 * Checks, against references computed directly from the inputs: the first operation with
 * integer-valued floats (any reduction order gives the exact sum), the second with non-integer
 * floats, bit-equal to the sum in rank order (algo.h: peers listed in rank order, src at the
 * rank's own place), so every rank's AllReduce result is bit-identical; src untouched out of
 * place; guard bytes around every buffer; deadlock (no runnable step while work remains) named
 * by case. Negative checks prove the checker can fail: in-place OneShot AllReduce (documented
 * unsafe under zero copy, never chosen by the planner) gives a wrong result in some seed, and
 * so does skipping the end-of-work drain in every variant whose data a peer may read after the
 * owner's last step (all but out-of-place TwoShot).
 *
 * Arguments: none for the CI suite. --redops instead probes PreMulSum (ncclAvg on floats)
 * under zero copy, which is not part of the suite because it fails: a zero-copy receive reads
 * the peers' raw inputs, and the pre-multiply a FIFO send used to apply is never applied to
 * them. This is why the planner never runs PreMulSum zero copy (plan/plan_zc.c); the probe
 * shows the reason. WEFT_TEST_SEED changes the seeds. The scheduler, the rules, the checks of
 * results and the seed loops, shared with algo_zc_reg_sim.c, are in algo_zc_simcore.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "testutil.h"
#include "transport/conn.h"

#define NR_MAX WEFT_DIRECT_MAX_RANKS
#define NCH_MAX 8
#define NEXE_MAX (NR_MAX * NCH_MAX)
#define SIM_NAME "algo_zc_sim"

enum { RED_SUM, RED_PREMULSUM, RED_SUMPOSTDIV };
static const float PREMUL_SCALAR = 3.0f;

typedef struct {
  int func, algo, in_place, n, root, nch;
  size_t count;
  size_t chunk; /* 0: the planner's zero-copy chunk (the channel's whole part: one loop) */
  int red;
  int no_drain; /* negative: a work item ends without waiting for its peers to read */
} zc_case;

typedef struct {
  uint64_t head, tail;
} fifo;

typedef struct {
  int rank, ch;
  weft_algo a;
  int phase, op;
  uint64_t pc;
  int st;
  weft_prim p; /* the next step (phase PH_RUN) */
  unsigned weight;
} exe;

typedef struct {
  const zc_case* c;
  char name[200];
  uint64_t seed, rng;
  fifo f[NCH_MAX][NR_MAX][NR_MAX]; /* [channel][from][to] */
  exe e[NEXE_MAX];
  int ne;
  char* win[NR_MAX]; /* each rank's window: its sendbuff and recvbuff, symmetric layout */
  size_t win_bytes, sbytes, rbytes;
  size_t send_off[NR_MAX], recv_off[NR_MAX];
  weft_zc_bufs zb[NR_MAX];
  char* bases[NR_MAX];
  float* in[2][NR_MAX]; /* the two operations' inputs (sbytes each) */
  float* ref[2];        /* reductions: every element of the inputs reduced in rank order */
  int pending[NR_MAX];  /* channels of the rank not yet drained for its current operation */
  int rank_op[NR_MAX];
  float* tmp;
  int rc;
  char msg[1024];
} sim;

static sim S;

#include "algo_zc_simcore.h" /* what both simulators share, on S */

static const char* red_name(int r) {
  return r == RED_SUM ? "sum" : r == RED_PREMULSUM ? "premulsum" : "sumpostdiv";
}

static void case_name(const zc_case* c, char* out, size_t n) {
  char chunk[32];
  if (c->chunk)
    snprintf(chunk, sizeof chunk, "%zu", c->chunk);
  else
    snprintf(chunk, sizeof chunk, "part");
  char root[16];
  root_tag(c, root, sizeof root);
  snprintf(out, n, "%s/%s %s %s n=%d count=%zu channels=%d chunk=%s%s%s", func_name(c->func),
           algo_name(c->algo), c->in_place ? "in-place" : "out-of-place", red_name(c->red), c->n,
           c->count, c->nch, chunk, root, c->no_drain ? " (no drain)" : "");
}

static void fail_context(char* out, size_t len) { /* a run draws nothing but its schedule */
  (void)len;
  out[0] = '\0';
}

/* ---- buffers ---- */

static char* sendbuf(int q) { return S.win[q] + S.send_off[q]; }
static char* recvbuf(int q) { return S.win[q] + S.recv_off[q]; }
/* Both operations run on the same windows, out of place or in place as the case says. */
static char* op_sendbuf(int k, int r) {
  (void)k;
  return sendbuf(r);
}
static char* op_recvbuf(int k, int r) {
  (void)k;
  return recvbuf(r);
}
static int op_in_place(int k, int r) {
  (void)k, (void)r;
  return S.c->in_place;
}

static void layout(void) {
  const zc_case* c = S.c;
  int n = c->n;
  size_t bytes = buffer_sizes();
  for (int r = 0; r < n; r++) {
    if (!c->in_place) {
      S.send_off[r] = GUARD;
      S.recv_off[r] = GUARD + S.sbytes + GUARD;
      S.win_bytes = S.recv_off[r] + S.rbytes + GUARD;
    } else {
      size_t big = S.sbytes > S.rbytes ? S.sbytes : S.rbytes;
      S.send_off[r] = S.recv_off[r] = GUARD;
      if (c->func == WEFT_FN_ALLGATHER) S.send_off[r] += (size_t)r * bytes;
      if (c->func == WEFT_FN_REDUCESCATTER) S.recv_off[r] += (size_t)r * bytes;
      S.win_bytes = GUARD + big + GUARD;
    }
  }
  for (int r = 0; r < n; r++) {
    S.win[r] = realloc(S.win[r], S.win_bytes);
    EXPECT(S.win[r] != NULL);
    S.bases[r] = S.win[r];
  }
  for (int r = 0; r < n; r++) { /* plan_zc_find */
    weft_zc_bufs* z = &S.zb[r];
    memset(z, 0, sizeof *z);
    z->peers[0] = S.bases;
    z->off[0] = S.send_off[r];
    if (c->func == WEFT_FN_ALLGATHER && c->in_place) {
      z->off[0] -= (uint64_t)r * bytes;
      z->src_stride = bytes;
    }
    if (c->func == WEFT_FN_ALLREDUCE) {
      z->peers[1] = S.bases;
      z->off[1] = S.recv_off[r];
    }
  }
}

/* The case's reduction: its pre-op on each input, its post-op on the sum. */
static float pre_of(float x) { return S.c->red == RED_PREMULSUM ? x * PREMUL_SCALAR : x; }
static float post_of(float x) { return S.c->red == RED_SUMPOSTDIV ? x / (float)S.c->n : x; }

/* ---- executors ---- */

/* The next step's connections (each once, as the planner makes them) and its zero-copy receives:
 * from a window that holds the peers' sendbuff or recvbuff. */
static int check_step(const exe* e) {
  const zc_case* c = S.c;
  const weft_prim* p = &e->p;
  int n = c->n, r = e->rank;
  unsigned seen = 0;
  for (int i = 0; i < p->nrecv; i++) {
    int k = p->recv[i];
    if (k > n - 2 || (seen >> k & 1u))
      return step_fail(e, "receive role %d invalid or repeated", k);
    seen |= 1u << k;
    if (!key_recv(c, r, recv_peer(r, n, k)))
      return step_fail(e, "receives from rank %d, which the planner does not connect",
                       recv_peer(r, n, k));
  }
  seen = 0;
  for (int i = 0; i < p->nsend; i++) {
    int k = p->send[i];
    if (k < WEFT_DIRECT_SEND_ROLE0 || k > WEFT_DIRECT_SEND_ROLE0 + n - 2 ||
        (seen >> (k - WEFT_DIRECT_SEND_ROLE0) & 1u))
      return step_fail(e, "send role %d invalid or repeated", k);
    seen |= 1u << (k - WEFT_DIRECT_SEND_ROLE0);
    if (!key_send(c, r, send_peer(r, n, k)))
      return step_fail(e, "sends to rank %d, which the planner does not connect",
                       send_peer(r, n, k));
  }
  if (p->nrecv > 0) {
    if (p->zc_from != WEFT_ZC_FROM_SRC && p->zc_from != WEFT_ZC_FROM_DST)
      return step_fail(e,
                       "a zero-copy receive with zc_from %d (would read a FIFO slot "
                       "no zero-copy send fills)",
                       p->zc_from);
    if (!e->a.zc.peers[p->zc_from - 1])
      return step_fail(e, "reads the peers' %s, which is not in a window for %s",
                       p->zc_from == WEFT_ZC_FROM_SRC ? "sendbuff" : "recvbuff",
                       func_name(c->func));
  }
  if (p->src && p->nrecv && p->reduce && (p->src_at < 0 || p->src_at > p->nrecv))
    return step_fail(e, "src_at %d of %d receives", p->src_at, p->nrecv);
  return OK;
}

/* ---- checks ---- */

static int check_end(void) {
  const zc_case* c = S.c;
  for (int r = 0; r < c->n; r++) {
    size_t lo[3], hi[3], ng = 0;
    if (!c->in_place) {
      lo[0] = 0, hi[0] = GUARD;
      lo[1] = GUARD + S.sbytes, hi[1] = S.recv_off[r];
      lo[2] = S.recv_off[r] + S.rbytes, hi[2] = S.win_bytes;
      ng = 3;
    } else {
      lo[0] = 0, hi[0] = GUARD;
      lo[1] = S.win_bytes - GUARD, hi[1] = S.win_bytes;
      ng = 2;
    }
    for (size_t g = 0; g < ng; g++)
      for (size_t b = lo[g]; b < hi[g]; b++)
        if ((unsigned char)S.win[r][b] != FILL)
          return failf(FAIL_WRONG, "rank %d: guard byte %zu of its window written", r, b);
  }
  return check_same_bits();
}

/* ---- running ---- */

/* A work item's description never changes: run_case sets it up once for both operations. */
static void begin_work(exe* e, int k) { (void)e, (void)k; }

/* Runs e's next step: all its reads, then its writes. */
static void run_step(exe* e) {
  const zc_case* c = S.c;
  int n = c->n, r = e->rank;
  const weft_prim* p = &e->p;
  const weft_algo* a = &e->a;
  size_t ne = p->nelem, bytes = ne * ELEM;
  const char* ins[1 + WEFT_PRIM_MAX_PEERS];
  int nin = 0, srci = -1;
  for (int i = 0; i < p->nrecv; i++) {
    if (p->src && i == p->src_at) ins[srci = nin++] = p->src;
    int k = p->recv[i], q = recv_peer(r, n, k), which = p->zc_from - 1;
    /* run_work's s.zc_in, then simple_step's zc_off */
    const char* at = a->zc.peers[which][q] + a->zc.off[which] +
                     (which == 0 ? (uint64_t)q * a->zc.src_stride : 0) + p->zc_off;
    const char* lo = which == 0 ? sendbuf(q) : recvbuf(q);
    if (!in_range(at, bytes, lo, which == 0 ? S.sbytes : S.rbytes)) {
      failf(FAIL_RULE,
            "rank %d channel %d stream %d pc %llu: reads %zu bytes at offset %lld "
            "of rank %d's %s (%zu bytes)",
            r, e->ch, e->st, (unsigned long long)e->pc, bytes, (long long)(at - lo), q,
            which == 0 ? "sendbuff" : "recvbuff", which == 0 ? S.sbytes : S.rbytes);
      return;
    }
    ins[nin++] = at;
  }
  if (p->src && srci < 0) ins[srci = nin++] = p->src;
  if (p->dst && nin > 0 && ne > 0) {
    g_elems += ne * (uint64_t)nin;
    for (size_t x = 0; x < ne; x++) { /* reads */
      float acc = 0;
      for (int i = 0; i < nin; i++) {
        float v = fval(ins[i] + x * ELEM);
        if (i == srci && p->pre) v = pre_of(v);
        acc = i ? acc + v : v;
      }
      S.tmp[x] = p->post ? post_of(acc) : acc;
    }
    memcpy(p->dst, S.tmp, bytes); /* then the write */
  }
  for (int i = 0; i < p->nsend; i++) S.f[e->ch][r][send_peer(r, n, p->send[i])].tail++;
  for (int i = 0; i < p->nrecv; i++) S.f[e->ch][recv_peer(r, n, p->recv[i])][r].head++;
  if (++e->st >= (e->a.npc[1] ? 2 : 1)) e->st = 0, e->pc++;
  load_step(e);
}

static void app(char* out, size_t len, size_t* k, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void app(char* out, size_t len, size_t* k, const char* fmt, ...) {
  if (*k + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(out + *k, len - *k, fmt, ap);
  va_end(ap);
  if (w > 0) *k += (size_t)w < len - *k ? (size_t)w : len - *k - 1;
}

/* What every unfinished (rank, channel) waits for. */
static void describe_wait(char* out, size_t len) {
  size_t k = 0;
  out[0] = '\0';
  for (int i = 0; i < S.ne; i++) {
    const exe* e = &S.e[i];
    int r = e->rank, c = e->ch, n = S.c->n;
    if (e->phase == PH_DONE) continue;
    if (e->phase == PH_WAIT) {
      app(out, len, &k, " [rank %d ch %d: op %d drained, waits for its other channels]", r, c,
          e->op);
      continue;
    }
    if (e->phase == PH_DRAIN) {
      app(out, len, &k, " [rank %d ch %d: op %d end-of-work drain waits:", r, c, e->op);
      for (int q = 0; q < n; q++) {
        const fifo* f = &S.f[c][r][q];
        if (q != r && key_send(S.c, r, q) && f->head != f->tail)
          app(out, len, &k, " send to %d (head %llu tail %llu)", q, (unsigned long long)f->head,
              (unsigned long long)f->tail);
      }
      app(out, len, &k, "]");
      continue;
    }
    app(out, len, &k, " [rank %d ch %d: op %d stream %d pc %llu waits:", r, c, e->op, e->st,
        (unsigned long long)e->pc);
    for (int j = 0; j < e->p.nrecv; j++) {
      int q = recv_peer(r, n, e->p.recv[j]);
      const fifo* f = &S.f[c][q][r];
      if (f->tail <= f->head)
        app(out, len, &k, " recv from %d (head %llu tail %llu)", q, (unsigned long long)f->head,
            (unsigned long long)f->tail);
    }
    for (int j = 0; j < e->p.nsend; j++) {
      int q = send_peer(r, n, e->p.send[j]);
      const fifo* f = &S.f[c][r][q];
      if (f->head + WEFT_NSTEPS <= f->tail)
        app(out, len, &k, " send to %d (head %llu tail %llu)", q, (unsigned long long)f->head,
            (unsigned long long)f->tail);
    }
    app(out, len, &k, "]");
  }
}

#define BIG_BUDGET 30000 /* cost (cost_now) of a large case over its seeds */

/* One run of case c under seed: OK or FAIL_* (S.msg says what). */
static int run_case(const zc_case* c, uint64_t seed) {
  int n = c->n;
  begin_run(c, seed);
  layout();
  gen_inputs(pre_of, post_of);
  g_elems += 4 * (uint64_t)n * (S.sbytes + S.rbytes) / ELEM; /* inputs, references, checks */
  memset(S.f, 0, sizeof S.f);
  for (int r = 0; r < n; r++) {
    memset(S.win[r], FILL, S.win_bytes);
    memcpy(sendbuf(r), S.in[0][r], S.sbytes);
  }
  unsigned mode = (unsigned)(seed % 3);
  add_executors(mode);
  for (int i = 0; i < S.ne; i++) { /* one work item each, for both operations */
    exe* e = &S.e[i];
    int r = e->rank;
    work_setup(e, c->chunk, sendbuf(r), recvbuf(r), WEFT_ZC_WINDOWS, S.zb[r]);
    if (e->a.npc[0] == 0 && e->a.npc[1] == 0)
      return failf(FAIL_RULE, "rank %d channel %d: no steps for a part of %zu", r, e->ch,
                   e->a.part_count);
  }
  return run_ops(mode == 2, c->no_drain, 0);
}

/* ---- the suite ---- */

static const struct {
  int func, algo, in_place;
} variants[] = {
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_TWOSHOT_ID, 0},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_TWOSHOT_ID, 1},
    {WEFT_FN_REDUCESCATTER, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_REDUCESCATTER, WEFT_ALGO_ONESHOT_ID, 1},
    {WEFT_FN_ALLGATHER, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_ALLGATHER, WEFT_ALGO_ONESHOT_ID, 1},
    {WEFT_FN_BROADCAST, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_BROADCAST, WEFT_ALGO_ONESHOT_ID, 1},
    {WEFT_FN_REDUCE, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_REDUCE, WEFT_ALGO_ONESHOT_ID, 1},
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])
static const size_t counts[] = {1, 3, 17, 1000, 4097};
#define NCOUNTS (int)(sizeof counts / sizeof counts[0])

/* Channels and chunk of each configuration of a count: the planner's one loop per channel on
 * one and three channels, then smaller chunks (several loops, past the WEFT_NSTEPS window). */
static int configs(size_t count, int* nch, size_t* chunk) {
  int k = 0;
  nch[k] = 1, chunk[k++] = 0;
  nch[k] = 3, chunk[k++] = 0;
  nch[k] = 2, chunk[k++] = count <= 17 ? 2 : count <= 1000 ? 16 : 160;
  if (count >= 1000) nch[k] = 8, chunk[k++] = 0;
  if (count == 1000) nch[k] = 1, chunk[k++] = 7; /* chunks that do not divide the blocks */
  return k;
}

/* A case of variant v (its collective, algorithm and placement), with the planner's chunk. */
static zc_case variant_case(int v, int n, int root, int nch, size_t count, int red) {
  return (zc_case){.func = variants[v].func,
                   .algo = variants[v].algo,
                   .in_place = variants[v].in_place,
                   .n = n,
                   .root = root,
                   .nch = nch,
                   .count = count,
                   .chunk = 0,
                   .red = red};
}

static void suite(void) {
  for (int v = 0; v < NVARIANTS; v++)
    for (int n = 2; n <= NR_MAX; n++)
      for (int ci = 0; ci < NCOUNTS; ci++) {
        int nch[8];
        size_t chunk[8];
        int ncfg = configs(counts[ci], nch, chunk);
        for (int k = 0; k < ncfg; k++) {
          int nroots = rooted(variants[v].func) ? n : 1;
          for (int root = 0; root < nroots; root++) {
            zc_case c = variant_case(v, n, root, nch[k], counts[ci], RED_SUM);
            c.chunk = chunk[k];
            if (counts[ci] <= 17)
              run_seeds(&c, 200, 200, 0);
            else
              run_seeds(&c, 4, 200, BIG_BUDGET / (uint64_t)nroots);
          }
        }
      }
  /* The post-op (SumPostDiv) lands on the final result once, wherever it is computed. */
  for (int n = 2; n <= NR_MAX; n++)
    for (int v = 0; v < NVARIANTS; v++) {
      if (!reduces(variants[v].func)) continue;
      zc_case c = variant_case(v, n, n - 1, 2, 17, RED_SUMPOSTDIV);
      run_seeds(&c, 50, 50, 0);
    }
}

static void negatives(void) {
  char first[1024], name[200];
  /* In-place OneShot AllReduce: the reduce of chunk i overwrites src while peers read it. */
  for (int n = 2; n <= NR_MAX; n++)
    for (int ci = 0; ci < NCOUNTS; ci++) {
      zc_case c = {.func = WEFT_FN_ALLREDUCE,
                   .algo = WEFT_ALGO_ONESHOT_ID,
                   .in_place = 1,
                   .n = n,
                   .nch = 1 + ci % 2,
                   .count = counts[ci],
                   .chunk = ci == 3 ? 64 : 0,
                   .red = RED_SUM};
      g_cases++;
      int bad = failing_seeds(&c, 200, FAIL_WRONG, first, sizeof first);
      case_name(&c, name, sizeof name);
      if (bad == 0) {
        fprintf(stderr,
                "algo_zc_sim: %s: no seed of 200 gives a wrong result: the checker "
                "cannot see a rank overwriting data its peers still read\n",
                name);
        exit(1);
      }
      if (n == 4 && ci == 2) printf("negative %s: %d/200 seeds wrong, e.g. %s\n", name, bad, first);
    }
  /* No end-of-work drain: the next operation's input overwrites data a peer has yet to read.
   * (Only where a rank's data can be read after that rank's last step: out-of-place TwoShot
   * needs no drain, since every peer reads a rank's src block before announcing its own.) */
  for (int v = 0; v < NVARIANTS; v++)
    for (int n = 2; n <= 4; n++) {
      if (variants[v].algo == WEFT_ALGO_TWOSHOT_ID && !variants[v].in_place) continue;
      zc_case c = variant_case(v, n, n - 1, 2, 17, RED_SUM);
      c.no_drain = 1;
      g_cases++;
      int bad = failing_seeds(&c, 200, FAIL_WRONG, first, sizeof first);
      case_name(&c, name, sizeof name);
      if (bad == 0) {
        fprintf(stderr,
                "algo_zc_sim: %s: no seed of 200 gives a wrong result without the "
                "drain: the back-to-back check cannot see a peer still reading\n",
                name);
        exit(1);
      }
      if (n == 3 && v == 0) printf("negative %s: %d/200 seeds wrong, e.g. %s\n", name, bad, first);
    }
}

/* --redops: PreMulSum (ncclAvg on floats) under zero copy; reported, not part of the suite. */
static int probe_redops(void) {
  int failed = 0;
  char first[1024], name[200];
  for (int v = 0; v < NVARIANTS; v++) {
    if (!reduces(variants[v].func)) continue;
    zc_case c = variant_case(v, 4, 1, 1, 17, RED_PREMULSUM);
    int bad = failing_seeds(&c, 20, FAIL_WRONG, first, sizeof first);
    case_name(&c, name, sizeof name);
    printf("%s %s: %d/20 seeds wrong%s%s\n", bad ? "FAIL" : "ok  ", name, bad, bad ? ", e.g. " : "",
           bad ? first : "");
    failed |= bad != 0;
  }
  return failed;
}

int main(int argc, char** argv) {
  sim_start();
  if (argc > 1 && strcmp(argv[1], "--redops") == 0) return probe_redops();
  zc_totals t = run_all(suite, negatives);
  printf(
      "algo_zc_sim: %d cases (%d runs) correct; %d negative cases (%d runs) each wrong in some "
      "seed; %llu steps, %.2f s\n",
      t.cases, t.runs, t.neg_cases, t.neg_runs, (unsigned long long)g_steps, t.s);
  for (int r = 0; r < NR_MAX; r++) free(S.win[r]);
  free_runs();
  return 0;
}
