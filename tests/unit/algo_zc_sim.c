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
 * shows the reason. WEFT_TEST_SEED changes the seeds. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/algo.h"
#include "testutil.h"
#include "transport/conn.h"

#define NR_MAX WEFT_DIRECT_MAX_RANKS
#define NCH_MAX 8
#define NEXE_MAX (NR_MAX * NCH_MAX)
#define GUARD 64 /* bytes of FILL around every buffer */
#define FILL 0xA5
#define ELEM 4 /* float */

enum { RED_SUM, RED_PREMULSUM, RED_SUMPOSTDIV };
static const float PREMUL_SCALAR = 3.0f;
enum { OK = 0, FAIL_WRONG, FAIL_DEADLOCK, FAIL_RULE };
enum { PH_RUN, PH_DRAIN, PH_WAIT, PH_DONE };

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
static uint64_t g_steps, g_elems; /* steps run, elements moved: the cost of the runs */

static const char* func_name(int f) {
  switch (f) {
    case WEFT_FN_ALLREDUCE: return "AllReduce";
    case WEFT_FN_REDUCESCATTER: return "ReduceScatter";
    case WEFT_FN_ALLGATHER: return "AllGather";
    case WEFT_FN_BROADCAST: return "Broadcast";
    case WEFT_FN_REDUCE: return "Reduce";
    default: return "?";
  }
}
static const char* red_name(int r) {
  return r == RED_SUM ? "sum" : r == RED_PREMULSUM ? "premulsum" : "sumpostdiv";
}
static int rooted(int f) { return f == WEFT_FN_BROADCAST || f == WEFT_FN_REDUCE; }
static int reduces(int f) {
  return f == WEFT_FN_ALLREDUCE || f == WEFT_FN_REDUCESCATTER || f == WEFT_FN_REDUCE;
}

static void case_name(const zc_case* c, char* out, size_t n) {
  char chunk[32];
  if (c->chunk)
    snprintf(chunk, sizeof chunk, "%zu", c->chunk);
  else
    snprintf(chunk, sizeof chunk, "part");
  char root[16] = "";
  if (rooted(c->func)) snprintf(root, sizeof root, " root=%d", c->root);
  snprintf(out, n, "%s/%s %s %s n=%d count=%zu channels=%d chunk=%s%s%s", func_name(c->func),
           c->algo == WEFT_ALGO_TWOSHOT_ID ? "TwoShot" : "OneShot",
           c->in_place ? "in-place" : "out-of-place", red_name(c->red), c->n, c->count, c->nch,
           chunk, root, c->no_drain ? " (no drain)" : "");
}

static int failf(int rc, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(int rc, const char* fmt, ...) {
  if (S.rc) return S.rc; /* the first failure is the one reported */
  S.rc = rc;
  int k = snprintf(S.msg, sizeof S.msg, "%s, seed %llu: ", S.name, (unsigned long long)S.seed);
  va_list ap;
  va_start(ap, fmt);
  if (k > 0 && (size_t)k < sizeof S.msg) vsnprintf(S.msg + k, sizeof S.msg - (size_t)k, fmt, ap);
  va_end(ap);
  return rc;
}

/* ---- the planner's view, repeated (plan_op.c channel_part, plan_direct.c, plan_zc.c) ---- */

static void channel_part(size_t count, int nch, int c, size_t* off, size_t* cnt) {
  size_t a = 64 / ELEM;
  size_t q = algo_divup(algo_divup(count, (size_t)nch), a) * a;
  *off = (size_t)c * q;
  *cnt = *off < count ? (count - *off < q ? count - *off : q) : 0;
}
/* plan_direct_setup's connections: r receives from q / sends to q. */
static int key_recv(const zc_case* c, int r, int q) {
  if (c->func == WEFT_FN_BROADCAST) return q == c->root;
  if (c->func == WEFT_FN_REDUCE) return r == c->root;
  return 1;
}
static int key_send(const zc_case* c, int r, int q) {
  if (c->func == WEFT_FN_BROADCAST) return r == c->root;
  if (c->func == WEFT_FN_REDUCE) return q == c->root;
  return 1;
}
static int recv_peer(int r, int n, int role) { return (r + role + 1) % n; }
static int send_peer(int r, int n, int role) { return (r + role - WEFT_DIRECT_SEND_ROLE0 + 1) % n; }

/* ---- buffers ---- */

static float fval(const char* p) {
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}
static char* sendbuf(int q) { return S.win[q] + S.send_off[q]; }
static char* recvbuf(int q) { return S.win[q] + S.recv_off[q]; }

static void layout(void) {
  const zc_case* c = S.c;
  int n = c->n;
  size_t bytes = c->count * ELEM;
  S.sbytes = S.rbytes = bytes;
  if (c->func == WEFT_FN_ALLGATHER) S.rbytes = bytes * (size_t)n;
  if (c->func == WEFT_FN_REDUCESCATTER) S.sbytes = bytes * (size_t)n;
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

static float gen(int integer) {
  uint64_t x = test_rand(&S.rng);
  if (integer) return (float)((int)(x % 15) - 7);
  float m = (float)(x >> 40) / 16777216.0f * 2.0f - 1.0f; /* 24 random bits */
  return m * (float)(1 + (int)((x >> 3) & 7));
}

static float pre_of(float x) { return S.c->red == RED_PREMULSUM ? x * PREMUL_SCALAR : x; }
static float post_of(float x) { return S.c->red == RED_SUMPOSTDIV ? x / (float)S.c->n : x; }
/* The reduction of element i of every rank's input k, in rank order. */
static float fold(int k, size_t i) {
  float acc = pre_of(S.in[k][0][i]);
  for (int q = 1; q < S.c->n; q++) acc += pre_of(S.in[k][q][i]);
  return post_of(acc);
}

static void gen_inputs(void) {
  size_t ne = S.sbytes / ELEM;
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < S.c->n; r++) {
      S.in[k][r] = realloc(S.in[k][r], S.sbytes ? S.sbytes : 1);
      EXPECT(S.in[k][r] != NULL);
      /* The first operation's reductions are on integers, the second's (and every copy) not. */
      int integer = k == 0 && reduces(S.c->func);
      for (size_t i = 0; i < ne; i++) S.in[k][r][i] = gen(integer);
    }
  if (!reduces(S.c->func)) return;
  for (int k = 0; k < 2; k++) {
    S.ref[k] = realloc(S.ref[k], S.sbytes ? S.sbytes : 1);
    EXPECT(S.ref[k] != NULL);
    for (size_t i = 0; i < ne; i++) S.ref[k][i] = fold(k, i);
  }
}

static int in_range(const char* p, size_t bytes, const char* lo, size_t lo_bytes) {
  return p >= lo && (size_t)(p - lo) <= lo_bytes && bytes <= lo_bytes - (size_t)(p - lo);
}

/* ---- executors ---- */

static void cursor_fix(exe* e) {
  uint64_t nmax = e->a.npc[0] > e->a.npc[1] ? e->a.npc[0] : e->a.npc[1];
  int ns = e->a.npc[1] ? 2 : 1;
  while (e->pc < nmax && e->pc >= e->a.npc[e->st]) {
    if (++e->st >= ns) e->st = 0, e->pc++;
  }
  if (e->pc >= nmax) e->phase = PH_DRAIN;
}

/* A step that breaks a rule: the message names the step. */
static int step_fail(const exe* e, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int step_fail(const exe* e, const char* fmt, ...) {
  char what[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return failf(FAIL_RULE, "rank %d channel %d stream %d pc %llu: %s", e->rank, e->ch, e->st,
               (unsigned long long)e->pc, what);
}

/* Works out the executor's next step and checks it against the rules. */
static int load_step(exe* e) {
  const zc_case* c = S.c;
  int n = c->n, r = e->rank;
  cursor_fix(e);
  if (e->phase != PH_RUN) return OK;
  weft_prim* p = &e->p;
  memset(p, 0x5a, sizeof *p); /* algo_prim must set every field */
  if (algo_prim(&e->a, e->st, e->pc, p) != 1)
    return failf(FAIL_RULE, "rank %d channel %d: no step for stream %d pc %llu (npc %llu/%llu)", r,
                 e->ch, e->st, (unsigned long long)e->pc, (unsigned long long)e->a.npc[0],
                 (unsigned long long)e->a.npc[1]);
  if (p->nrecv < 0 || p->nrecv > n - 1 || p->nsend < 0 || p->nsend > n - 1)
    return step_fail(e, "%d receives, %d sends", p->nrecv, p->nsend);
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
  size_t bytes = p->nelem * ELEM;
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
  if (p->src && !in_range(p->src, bytes, sendbuf(r), S.sbytes))
    return step_fail(e, "src outside the sendbuff");
  if (p->dst && !in_range(p->dst, bytes, recvbuf(r), S.rbytes))
    return step_fail(e, "dst outside the recvbuff");
  if (p->src && p->nrecv && p->reduce && (p->src_at < 0 || p->src_at > p->nrecv))
    return step_fail(e, "src_at %d of %d receives", p->src_at, p->nrecv);
  int nin = p->nrecv + (p->src ? 1 : 0);
  if (!p->reduce && nin > 1) return step_fail(e, "a copy step with %d inputs", nin);
  return OK;
}

static int runnable(const exe* e) {
  int n = S.c->n, r = e->rank, c = e->ch;
  if (e->phase == PH_DRAIN) {
    if (S.c->no_drain) return 1;
    for (int q = 0; q < n; q++)
      if (q != r && key_send(S.c, r, q) && S.f[c][r][q].head != S.f[c][r][q].tail) return 0;
    return 1;
  }
  if (e->phase != PH_RUN) return 0;
  for (int i = 0; i < e->p.nrecv; i++) {
    const fifo* f = &S.f[c][recv_peer(r, n, e->p.recv[i])][r];
    if (!(f->tail > f->head)) return 0;
  }
  for (int i = 0; i < e->p.nsend; i++) {
    const fifo* f = &S.f[c][r][send_peer(r, n, e->p.send[i])];
    if (!(f->head + WEFT_NSTEPS > f->tail)) return 0;
  }
  return 1;
}

/* ---- references ---- */

static int expect_at(int r, int k, const char* what, size_t i, const char* p, float want) {
  float got = fval(p);
  if (memcmp(&got, &want, sizeof got) == 0) return OK;
  const char* why = "wrong value";
  if (k == 1 && reduces(S.c->func)) {
    float d = got - want, m = want < 0 ? -want : want;
    if ((d < 0 ? -d : d) <= 1e-5f * (m > 1 ? m : 1))
      why = "rounding differs from the sum in rank order (reduction order)";
  }
  return failf(FAIL_WRONG, "rank %d operation %d: %s[%zu] = %.9g, expected %.9g (%s)", r, k, what,
               i, (double)got, (double)want, why);
}

/* ne elements at got (what[first..]) bit-equal to want[]. */
static int expect_block(int r, int k, const char* what, size_t first, const char* got,
                        const float* want, size_t ne) {
  if (memcmp(got, want, ne * ELEM) == 0) return OK;
  for (size_t i = 0; i < ne; i++)
    if (expect_at(r, k, what, first + i, got + i * ELEM, want[i])) return S.rc;
  return OK;
}

/* Rank r's buffers once every channel of its operation k drained. */
static int check_rank(int r, int k) {
  const zc_case* c = S.c;
  size_t cnt = c->count;
  const char* rb = recvbuf(r);
  switch (c->func) {
    case WEFT_FN_ALLREDUCE:
      if (expect_block(r, k, "recvbuff", 0, rb, S.ref[k], cnt)) return S.rc;
      break;
    case WEFT_FN_REDUCESCATTER:
      if (expect_block(r, k, "recvbuff", 0, rb, S.ref[k] + (size_t)r * cnt, cnt)) return S.rc;
      break;
    case WEFT_FN_ALLGATHER:
      for (int q = 0; q < c->n; q++)
        if (expect_block(r, k, "recvbuff", (size_t)q * cnt, rb + (size_t)q * cnt * ELEM, S.in[k][q],
                         cnt))
          return S.rc;
      break;
    case WEFT_FN_BROADCAST:
      if (expect_block(r, k, "recvbuff", 0, rb, S.in[k][c->root], cnt)) return S.rc;
      break;
    case WEFT_FN_REDUCE:
      if (r == c->root) {
        if (expect_block(r, k, "recvbuff", 0, rb, S.ref[k], cnt)) return S.rc;
      } else if (c->in_place) {
        if (expect_block(r, k, "buffer (a non-root's input)", 0, rb, S.in[k][r], cnt)) return S.rc;
      } else {
        for (size_t b = 0; b < cnt * ELEM; b++)
          if ((unsigned char)rb[b] != FILL)
            return failf(FAIL_WRONG, "rank %d operation %d: a non-root's recvbuff[%zu] written", r,
                         k, b / ELEM);
      }
      break;
  }
  if (!c->in_place && expect_block(r, k, "sendbuff (out of place: untouched)", 0, sendbuf(r),
                                   S.in[k][r], S.sbytes / ELEM))
    return S.rc;
  return OK;
}

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
  if (c->func == WEFT_FN_ALLREDUCE) /* the non-integer operation: bit-identical everywhere */
    for (int r = 1; r < c->n; r++)
      if (memcmp(recvbuf(r), recvbuf(0), S.rbytes) != 0)
        return failf(FAIL_WRONG, "AllReduce results of ranks 0 and %d differ in their bits", r);
  return OK;
}

/* ---- running ---- */

static void start_op(int r, int k) {
  S.rank_op[r] = k;
  S.pending[r] = 0;
  for (int i = 0; i < S.ne; i++) {
    exe* e = &S.e[i];
    if (e->rank != r) continue;
    e->op = k;
    e->phase = PH_RUN;
    e->pc = 0;
    e->st = 0;
    S.pending[r]++;
    load_step(e);
  }
}

/* Runs e's next step (all its reads, then its writes), or its end-of-work drain. */
static void execute(exe* e) {
  const zc_case* c = S.c;
  int n = c->n, r = e->rank;
  if (e->phase == PH_DRAIN) {
    e->phase = PH_WAIT;
    if (--S.pending[r] > 0) return;
    /* Every channel of the rank drained: the operation is over on this rank. */
    int k = S.rank_op[r];
    if (check_rank(r, k)) return;
    if (k == 1) {
      for (int i = 0; i < S.ne; i++)
        if (S.e[i].rank == r) S.e[i].phase = PH_DONE;
      return;
    }
    memcpy(sendbuf(r), S.in[1][r], S.sbytes); /* the next operation's input */
    start_op(r, 1);
    return;
  }
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
  S.c = c;
  S.rc = OK;
  S.msg[0] = '\0';
  S.seed = seed;
  S.rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (!S.rng) S.rng = 1;
  case_name(c, S.name, sizeof S.name);
  layout();
  gen_inputs();
  g_elems += 4 * (uint64_t)n * (S.sbytes + S.rbytes) / ELEM; /* inputs, references, checks */
  memset(S.f, 0, sizeof S.f);
  for (int r = 0; r < n; r++) {
    memset(S.win[r], FILL, S.win_bytes);
    memcpy(sendbuf(r), S.in[0][r], S.sbytes);
  }
  /* One work item per (rank, channel) with a part, filled as plan_work_setup fills it. */
  S.ne = 0;
  size_t tmp_need = 1;
  for (int r = 0; r < n; r++)
    for (int ch = 0; ch < c->nch; ch++) {
      size_t off, cnt;
      channel_part(c->count, c->nch, ch, &off, &cnt);
      if (cnt == 0) continue; /* the planner makes no work item */
      exe* e = &S.e[S.ne++];
      memset(e, 0, sizeof *e);
      e->rank = r;
      e->ch = ch;
      weft_algo* a = &e->a;
      a->func = (int16_t)c->func;
      a->algo = (int16_t)c->algo;
      a->nranks = n;
      a->rank = r;
      a->channel = ch;
      a->root = rooted(c->func) ? c->root : 0;
      a->elem = ELEM;
      a->count = c->count;
      a->part_off = off;
      a->part_count = cnt;
      a->chunk = c->chunk ? c->chunk : cnt;
      a->src = sendbuf(r);
      a->dst = recvbuf(r);
      a->zero_copy = 1;
      a->zc = S.zb[r];
      algo_count_steps(a);
      if (a->npc[0] == 0 && a->npc[1] == 0) {
        failf(FAIL_RULE, "rank %d channel %d: no steps for a part of %zu", r, ch, cnt);
        return S.rc;
      }
      /* Scheduling weights: some ranks/channels fast, some slow. */
      unsigned mode = (unsigned)(seed % 3);
      e->weight = mode == 0 ? 1u : 1u << (test_rand(&S.rng) % 11);
      tmp_need = S.rbytes > S.sbytes ? S.rbytes : S.sbytes;
    }
  S.tmp = realloc(S.tmp, tmp_need);
  EXPECT(S.tmp != NULL);
  for (int r = 0; r < n; r++) start_op(r, 0);
  if (S.rc) return S.rc;
  int sticky = (int)(seed % 3) == 2, last = -1;
  int list[NEXE_MAX];
  for (;;) {
    int nr = 0, last_ok = 0, all_done = 1;
    uint64_t wsum = 0;
    for (int i = 0; i < S.ne; i++) {
      if (S.e[i].phase != PH_DONE) all_done = 0;
      if (!runnable(&S.e[i])) continue;
      list[nr++] = i;
      wsum += S.e[i].weight;
      if (i == last) last_ok = 1;
    }
    if (nr == 0) {
      if (all_done) break;
      char why[700];
      why[0] = '\0';
      describe_wait(why, sizeof why);
      return failf(FAIL_DEADLOCK, "deadlock: no step can run while work remains:%s", why);
    }
    int pick;
    if (sticky && last_ok && test_rand(&S.rng) % 8 != 0) {
      pick = last;
    } else {
      uint64_t x = test_rand(&S.rng) % wsum;
      int j = 0;
      while (x >= S.e[list[j]].weight) x -= S.e[list[j++]].weight;
      pick = list[j];
    }
    last = pick;
    execute(&S.e[pick]);
    g_steps++;
    if (S.rc) return S.rc;
  }
  return check_end();
}

/* ---- the suite ---- */

static uint64_t g_seed_base;
static int g_cases, g_runs;

/* Cost of the runs so far: steps plus elements moved (a step costs about as much as moving
 * a few dozen elements). */
static uint64_t cost_now(void) { return g_steps + g_elems / 32; }

/* Runs seeds 0, 1, … of c until max_seeds, or earlier once at least min_seeds ran and they
 * cost budget: many seeds where runs are small (the interleavings are what is tested), fewer
 * where one run moves a lot of data (there the offsets are what is tested). */
static void run_seeds(const zc_case* c, int min_seeds, int max_seeds, uint64_t budget) {
  g_cases++;
  uint64_t start = cost_now();
  for (int s = 0; s < max_seeds; s++) {
    g_runs++;
    if (run_case(c, g_seed_base + (uint64_t)s) != OK) {
      fprintf(stderr, "algo_zc_sim: %s\n", S.msg);
      exit(1);
    }
    if (s + 1 >= min_seeds && cost_now() - start >= budget) break;
  }
}

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

/* Count of failing seeds of c out of nseeds (deadlocks are never acceptable). */
static int failing_seeds(const zc_case* c, int nseeds, char* first, size_t len) {
  int bad = 0;
  first[0] = '\0';
  for (int s = 0; s < nseeds; s++) {
    g_runs++;
    int rc = run_case(c, g_seed_base + (uint64_t)s);
    if (rc == FAIL_DEADLOCK || rc == FAIL_RULE) {
      fprintf(stderr, "algo_zc_sim: negative case failed otherwise than by a wrong result: %s\n",
              S.msg);
      exit(1);
    }
    if (rc == FAIL_WRONG) {
      if (!bad) snprintf(first, len, "%s", S.msg);
      bad++;
    }
  }
  return bad;
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
      int bad = failing_seeds(&c, 200, first, sizeof first);
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
      int bad = failing_seeds(&c, 200, first, sizeof first);
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
    int bad = failing_seeds(&c, 20, first, sizeof first);
    case_name(&c, name, sizeof name);
    printf("%s %s: %d/20 seeds wrong%s%s\n", bad ? "FAIL" : "ok  ", name, bad, bad ? ", e.g. " : "",
           bad ? first : "");
    failed |= bad != 0;
  }
  return failed;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  g_seed_base = test_seed(1);
  if (argc > 1 && strcmp(argv[1], "--redops") == 0) return probe_redops();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  suite();
  int pos_cases = g_cases, pos_runs = g_runs;
  negatives();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf(
      "algo_zc_sim: %d cases (%d runs) correct; %d negative cases (%d runs) each wrong in some "
      "seed; %llu steps, %.2f s\n",
      pos_cases, pos_runs, g_cases - pos_cases, g_runs - pos_runs, (unsigned long long)g_steps, s);
  for (int r = 0; r < NR_MAX; r++) {
    free(S.win[r]);
    free(S.in[0][r]);
    free(S.in[1][r]);
  }
  free(S.ref[0]);
  free(S.ref[1]);
  free(S.tmp);
  return 0;
}
