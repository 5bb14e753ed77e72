/* What both zero-copy simulators, algo_zc_sim.c (symmetric windows) and algo_zc_reg_sim.c
 * (registered buffers), share: the planner's view (channel_part, plan_direct.c's connections,
 * plan_work_setup), when an executor may run, the seeded scheduler that runs one runnable
 * executor a tick, the two back-to-back operations with the end-of-work drain between them,
 * inputs and references, the checks of a rank's result, failure messages, and the seed loops
 * (run_seeds with its budgets, failing_seeds for the negative checks; seeds from WEFT_TEST_SEED).
 *
 * Each simulator includes this once, after defining NR_MAX, NEXE_MAX, SIM_NAME (its name in
 * messages) and its model's types: zc_case (with func, algo, n, root, nch, count), fifo (a
 * connection, with head and tail), exe (an executor: one (rank, channel) work item, with rank,
 * ch, phase, op, st, pc, a, p, weight) and sim, whose one instance S has c, name, seed, rng,
 * f[channel][from][to], e, ne, sbytes, rbytes, in, ref, tmp, pending, rank_op, rc and msg. It
 * then defines the model's functions declared below. */
#ifndef WEFT_ALGO_ZC_SIMCORE_H
#define WEFT_ALGO_ZC_SIMCORE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/algo.h"
#include "testutil.h"
#include "transport/conn.h"

#define GUARD 64 /* bytes of FILL around the buffers */
#define FILL 0xA5
#define ELEM 4 /* float */

enum { OK = 0, FAIL_WRONG, FAIL_DEADLOCK, FAIL_RULE };
enum { PH_RUN, PH_DRAIN, PH_WAIT, PH_DONE };

/* ---- the model's part, which each simulator defines ---- */

static void case_name(const zc_case* c, char* out, size_t len);
static void fail_context(char* out, size_t len); /* after "<case>, seed N" in a failure */
static char* op_sendbuf(int k, int r);           /* rank r's sendbuff in operation k (0 or 1) */
static char* op_recvbuf(int k, int r);
static int op_in_place(int k, int r);
static void begin_work(exe* e, int k);            /* before e's steps of operation k */
static int check_step(const exe* e);              /* e's next step against the model's rules */
static void run_step(exe* e);                     /* runs it: every read, then the writes */
static void describe_wait(char* out, size_t len); /* what each unfinished executor waits for */
static int check_end(void);                       /* once both operations are over */
static int run_case(const zc_case* c, uint64_t seed);

static uint64_t g_steps, g_elems; /* steps run, elements moved: the cost of the runs */
static uint64_t g_seed_base;
static int g_cases, g_runs;

/* ---- names, failures ---- */

static inline const char* func_name(int f) {
  switch (f) {
    case WEFT_FN_ALLREDUCE: return "AllReduce";
    case WEFT_FN_REDUCESCATTER: return "ReduceScatter";
    case WEFT_FN_ALLGATHER: return "AllGather";
    case WEFT_FN_BROADCAST: return "Broadcast";
    case WEFT_FN_REDUCE: return "Reduce";
    default: return "?";
  }
}
static inline const char* algo_name(int a) {
  return a == WEFT_ALGO_TWOSHOT_ID ? "TwoShot" : "OneShot";
}
static inline int rooted(int f) { return f == WEFT_FN_BROADCAST || f == WEFT_FN_REDUCE; }
static inline int reduces(int f) {
  return f == WEFT_FN_ALLREDUCE || f == WEFT_FN_REDUCESCATTER || f == WEFT_FN_REDUCE;
}
/* " root=R" for a rooted collective, else "". */
static inline void root_tag(const zc_case* c, char* out, size_t len) {
  out[0] = '\0';
  if (rooted(c->func)) snprintf(out, len, " root=%d", c->root);
}

static inline int failf(int rc, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int failf(int rc, const char* fmt, ...) {
  if (S.rc) return S.rc; /* the first failure is the one reported */
  S.rc = rc;
  char ctx[256];
  fail_context(ctx, sizeof ctx);
  int k =
      snprintf(S.msg, sizeof S.msg, "%s, seed %llu%s: ", S.name, (unsigned long long)S.seed, ctx);
  va_list ap;
  va_start(ap, fmt);
  if (k > 0 && (size_t)k < sizeof S.msg) vsnprintf(S.msg + k, sizeof S.msg - (size_t)k, fmt, ap);
  va_end(ap);
  return rc;
}

/* A step that breaks a rule: the message names the step. */
static inline int step_fail(const exe* e, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int step_fail(const exe* e, const char* fmt, ...) {
  char what[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return failf(FAIL_RULE, "rank %d channel %d op %d stream %d pc %llu: %s", e->rank, e->ch, e->op,
               e->st, (unsigned long long)e->pc, what);
}

/* ---- the planner's view, repeated (plan_op.c channel_part, plan_direct.c, plan_work.c) ---- */

static inline void channel_part(size_t count, int nch, int c, size_t* off, size_t* cnt) {
  size_t a = 64 / ELEM;
  size_t q = algo_divup(algo_divup(count, (size_t)nch), a) * a;
  *off = (size_t)c * q;
  *cnt = *off < count ? (count - *off < q ? count - *off : q) : 0;
}
/* plan_direct_setup's connections: r receives from q / sends to q. */
static inline int key_recv(const zc_case* c, int r, int q) {
  if (c->func == WEFT_FN_BROADCAST) return q == c->root;
  if (c->func == WEFT_FN_REDUCE) return r == c->root;
  return 1;
}
static inline int key_send(const zc_case* c, int r, int q) {
  if (c->func == WEFT_FN_BROADCAST) return r == c->root;
  if (c->func == WEFT_FN_REDUCE) return q == c->root;
  return 1;
}
static inline int recv_peer(int r, int n, int role) { return (r + role + 1) % n; }
static inline int send_peer(int r, int n, int role) {
  return (r + role - WEFT_DIRECT_SEND_ROLE0 + 1) % n;
}

/* One executor per (rank, channel) with a part (the planner makes no work item for an empty
 * one), rank by rank; scheduling weights by mode: 0 all alike, else random powers of two, so
 * that some ranks and channels are fast and some slow. */
static inline void add_executors(unsigned mode) {
  S.ne = 0;
  for (int r = 0; r < S.c->n; r++)
    for (int ch = 0; ch < S.c->nch; ch++) {
      size_t off, cnt;
      channel_part(S.c->count, S.c->nch, ch, &off, &cnt);
      if (cnt == 0) continue;
      exe* e = &S.e[S.ne++];
      memset(e, 0, sizeof *e);
      e->rank = r;
      e->ch = ch;
      e->weight = mode == 0 ? 1u : 1u << (test_rand(&S.rng) % 11);
    }
}

/* e's work item, as plan_work_setup fills it (chunk 0: the channel's whole part), and its steps. */
static inline void work_setup(exe* e, size_t chunk, const char* src, char* dst, int zero_copy,
                              weft_zc_bufs zc) {
  const zc_case* c = S.c;
  weft_algo* a = &e->a;
  size_t off, cnt;
  channel_part(c->count, c->nch, e->ch, &off, &cnt);
  memset(a, 0, sizeof *a);
  a->func = (int16_t)c->func;
  a->algo = (int16_t)c->algo;
  a->nranks = c->n;
  a->rank = e->rank;
  a->channel = e->ch;
  a->root = rooted(c->func) ? c->root : 0;
  a->elem = ELEM;
  a->count = c->count;
  a->part_off = off;
  a->part_count = cnt;
  a->chunk = chunk ? chunk : cnt;
  a->src = src;
  a->dst = dst;
  a->zero_copy = zero_copy;
  a->zc = zc;
  algo_count_steps(a);
}

/* ---- buffers, inputs, references ---- */

/* The case's sendbuff and recvbuff bytes (S.sbytes, S.rbytes): count elements, n times as many
 * in AllGather's recvbuff and ReduceScatter's sendbuff. Returns count's bytes. */
static inline size_t buffer_sizes(void) {
  const zc_case* c = S.c;
  size_t bytes = c->count * ELEM;
  S.sbytes = S.rbytes = bytes;
  if (c->func == WEFT_FN_ALLGATHER) S.rbytes = bytes * (size_t)c->n;
  if (c->func == WEFT_FN_REDUCESCATTER) S.sbytes = bytes * (size_t)c->n;
  return bytes;
}

static inline float fval(const char* p) {
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline int in_range(const char* p, size_t bytes, const char* lo, size_t lo_bytes) {
  return p >= lo && (size_t)(p - lo) <= lo_bytes && bytes <= lo_bytes - (size_t)(p - lo);
}

static inline float gen(int integer) {
  uint64_t x = test_rand(&S.rng);
  if (integer) return (float)((int)(x % 15) - 7);
  float m = (float)(x >> 40) / 16777216.0f * 2.0f - 1.0f; /* 24 random bits */
  return m * (float)(1 + (int)((x >> 3) & 7));
}

/* Both operations' inputs, the first operation's reductions on integers (any reduction order
 * gives the exact sum), the second's (and every copy) not; for reductions the references: every
 * element reduced in rank order, pre on each input and post on the sum (NULL: none). */
static inline void gen_inputs(float (*pre)(float), float (*post)(float)) {
  size_t ne = S.sbytes / ELEM;
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < S.c->n; r++) {
      S.in[k][r] = realloc(S.in[k][r], S.sbytes ? S.sbytes : 1);
      EXPECT(S.in[k][r] != NULL);
      int integer = k == 0 && reduces(S.c->func);
      for (size_t i = 0; i < ne; i++) S.in[k][r][i] = gen(integer);
    }
  if (!reduces(S.c->func)) return;
  for (int k = 0; k < 2; k++) {
    S.ref[k] = realloc(S.ref[k], S.sbytes ? S.sbytes : 1);
    EXPECT(S.ref[k] != NULL);
    for (size_t i = 0; i < ne; i++) {
      float acc = pre ? pre(S.in[k][0][i]) : S.in[k][0][i];
      for (int q = 1; q < S.c->n; q++) acc += pre ? pre(S.in[k][q][i]) : S.in[k][q][i];
      S.ref[k][i] = post ? post(acc) : acc;
    }
  }
}

/* ---- checks ---- */

static inline int expect_at(int r, int k, const char* what, size_t i, const char* p, float want) {
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
static inline int expect_block(int r, int k, const char* what, size_t first, const char* got,
                               const float* want, size_t ne) {
  if (memcmp(got, want, ne * ELEM) == 0) return OK;
  for (size_t i = 0; i < ne; i++)
    if (expect_at(r, k, what, first + i, got + i * ELEM, want[i])) return S.rc;
  return OK;
}

/* Rank r's buffers once every channel of its operation k drained. */
static inline int check_rank(int r, int k) {
  const zc_case* c = S.c;
  size_t cnt = c->count;
  const char* rb = op_recvbuf(k, r);
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
      } else if (op_in_place(k, r)) {
        if (expect_block(r, k, "buffer (a non-root's input)", 0, rb, S.in[k][r], cnt)) return S.rc;
      } else {
        for (size_t b = 0; b < cnt * ELEM; b++)
          if ((unsigned char)rb[b] != FILL)
            return failf(FAIL_WRONG, "rank %d operation %d: a non-root's recvbuff[%zu] written", r,
                         k, b / ELEM);
      }
      break;
  }
  if (!op_in_place(k, r) && expect_block(r, k, "sendbuff (out of place: untouched)", 0,
                                         op_sendbuf(k, r), S.in[k][r], S.sbytes / ELEM))
    return S.rc;
  return OK;
}

/* AllReduce's second operation (non-integer floats): the same bits on every rank. */
static inline int check_same_bits(void) {
  if (S.c->func == WEFT_FN_ALLREDUCE)
    for (int r = 1; r < S.c->n; r++)
      if (memcmp(op_recvbuf(1, r), op_recvbuf(1, 0), S.rbytes) != 0)
        return failf(FAIL_WRONG, "AllReduce results of ranks 0 and %d differ in their bits", r);
  return OK;
}

/* ---- executors ---- */

static inline void cursor_fix(exe* e) {
  uint64_t nmax = e->a.npc[0] > e->a.npc[1] ? e->a.npc[0] : e->a.npc[1];
  int ns = e->a.npc[1] ? 2 : 1;
  while (e->pc < nmax && e->pc >= e->a.npc[e->st])
    if (++e->st >= ns) e->st = 0, e->pc++;
  if (e->pc >= nmax) e->phase = PH_DRAIN;
}

/* Works out e's next step and checks it: the rules of every step, with the model's (check_step)
 * between the counts of its peers and its own buffers. */
static inline int load_step(exe* e) {
  int n = S.c->n, r = e->rank;
  cursor_fix(e);
  if (e->phase != PH_RUN) return OK;
  weft_prim* p = &e->p;
  memset(p, 0x5a, sizeof *p); /* algo_prim must set every field */
  if (algo_prim(&e->a, e->st, e->pc, p) != 1)
    return step_fail(e, "no step (npc %llu/%llu)", (unsigned long long)e->a.npc[0],
                     (unsigned long long)e->a.npc[1]);
  if (p->nrecv < 0 || p->nrecv > n - 1 || p->nsend < 0 || p->nsend > n - 1)
    return step_fail(e, "%d receives, %d sends", p->nrecv, p->nsend);
  if (check_step(e)) return S.rc;
  size_t bytes = p->nelem * ELEM;
  if (p->src && !in_range(p->src, bytes, op_sendbuf(e->op, r), S.sbytes))
    return step_fail(e, "src outside the sendbuff");
  if (p->dst && !in_range(p->dst, bytes, op_recvbuf(e->op, r), S.rbytes))
    return step_fail(e, "dst outside the recvbuff");
  int nin = p->nrecv + (p->src ? 1 : 0);
  if (!p->reduce && nin > 1) return step_fail(e, "a copy step with %d inputs", nin);
  return OK;
}

/* Whether e may run now, by the kernel's waits: a step once every receive connection has
 * tail > head and every send connection head + WEFT_NSTEPS > tail; the end-of-work drain once
 * every send connection's head equals its tail. no_drain, no_flow: negative checks that leave
 * out the drain's wait, or the send's (flow control). */
static inline int runnable(const exe* e, int no_drain, int no_flow) {
  int n = S.c->n, r = e->rank, c = e->ch;
  if (e->phase == PH_DRAIN) {
    if (no_drain) return 1;
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
    if (!no_flow && !(f->head + WEFT_NSTEPS > f->tail)) return 0;
  }
  return 1;
}

static inline void start_op(int r, int k) {
  S.rank_op[r] = k;
  S.pending[r] = 0;
  for (int i = 0; i < S.ne; i++) {
    exe* e = &S.e[i];
    if (e->rank != r) continue;
    begin_work(e, k);
    e->op = k;
    e->phase = PH_RUN;
    e->pc = 0;
    e->st = 0;
    S.pending[r]++;
    load_step(e);
  }
}

/* Runs e's next step (run_step), or its end-of-work drain: once every channel of the rank
 * drained, the operation is over on the rank, checked, and the next one's input written. */
static inline void execute(exe* e) {
  if (e->phase != PH_DRAIN) {
    run_step(e);
    return;
  }
  int r = e->rank;
  e->phase = PH_WAIT;
  if (--S.pending[r] > 0) return;
  int k = S.rank_op[r];
  if (check_rank(r, k)) return;
  if (k == 1) {
    for (int i = 0; i < S.ne; i++)
      if (S.e[i].rank == r) S.e[i].phase = PH_DONE;
    return;
  }
  memcpy(op_sendbuf(1, r), S.in[1][r], S.sbytes); /* the next operation's input */
  start_op(r, 1);
}

/* ---- running ---- */

/* The start of a run of c under seed: the state the scheduler draws from, and the case's name. */
static inline void begin_run(const zc_case* c, uint64_t seed) {
  S.c = c;
  S.rc = OK;
  S.msg[0] = '\0';
  S.seed = seed;
  S.rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (!S.rng) S.rng = 1;
  case_name(c, S.name, sizeof S.name);
}

/* Runs both operations on the executors to the end: at each tick the scheduler picks one
 * runnable executor by weight, or (sticky) the one it ran last, 7 times in 8 while it can run;
 * then check_end. OK or FAIL_* (S.msg says what); no runnable executor while work remains is a
 * deadlock. */
static inline int run_ops(int sticky, int no_drain, int no_flow) {
  S.tmp = realloc(S.tmp, S.rbytes > S.sbytes ? S.rbytes : S.sbytes);
  EXPECT(S.tmp != NULL);
  for (int r = 0; r < S.c->n; r++) start_op(r, 0);
  if (S.rc) return S.rc;
  int last = -1;
  int list[NEXE_MAX];
  for (;;) {
    int nr = 0, last_ok = 0, all_done = 1;
    uint64_t wsum = 0;
    for (int i = 0; i < S.ne; i++) {
      if (S.e[i].phase != PH_DONE) all_done = 0;
      if (!runnable(&S.e[i], no_drain, no_flow)) continue;
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

/* Cost of the runs so far: steps plus elements moved (a step costs about as much as moving
 * a few dozen elements). */
static inline uint64_t cost_now(void) { return g_steps + g_elems / 32; }

/* Runs seeds base, base + 1, … of c (base from WEFT_TEST_SEED) until max_seeds, or earlier once
 * at least min_seeds ran and they cost budget: many seeds where runs are small (the
 * interleavings are what is tested), fewer where one run moves a lot of data (there the
 * offsets are what is tested). Every run must pass. */
static inline void run_seeds(const zc_case* c, int min_seeds, int max_seeds, uint64_t budget) {
  g_cases++;
  uint64_t start = cost_now();
  for (int s = 0; s < max_seeds; s++) {
    g_runs++;
    if (run_case(c, g_seed_base + (uint64_t)s) != OK) {
      fprintf(stderr, "%s: %s\n", SIM_NAME, S.msg);
      exit(1);
    }
    if (s + 1 >= min_seeds && cost_now() - start >= budget) break;
  }
}

/* A negative check's runs: count of the nseeds seeds of c that fail with want_rc (first: the
 * first one's message); a run that fails otherwise ends the test. */
static inline int failing_seeds(const zc_case* c, int nseeds, int want_rc, char* first,
                                size_t len) {
  int bad = 0;
  first[0] = '\0';
  for (int s = 0; s < nseeds; s++) {
    g_runs++;
    int rc = run_case(c, g_seed_base + (uint64_t)s);
    if (rc != OK && rc != want_rc) {
      fprintf(stderr, "%s: negative case failed otherwise than expected: %s\n", SIM_NAME, S.msg);
      exit(1);
    }
    if (rc == want_rc) {
      if (!bad) snprintf(first, len, "%s", S.msg);
      bad++;
    }
  }
  return bad;
}

/* The cases and runs of the suite and of the negative checks, and the seconds both took. */
typedef struct {
  int cases, runs, neg_cases, neg_runs;
  double s;
} zc_totals;

/* Checks that weft's library is the one loaded, and takes the seeds' base from WEFT_TEST_SEED. */
static inline void sim_start(void) {
  test_require_weft_lib();
  g_seed_base = test_seed(1);
}

static inline zc_totals run_all(void (*suite)(void), void (*negatives)(void)) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  suite();
  zc_totals t = {.cases = g_cases, .runs = g_runs};
  negatives();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  t.neg_cases = g_cases - t.cases;
  t.neg_runs = g_runs - t.runs;
  t.s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  return t;
}

/* Frees what the runs allocated of S's inputs, references and step buffer. */
static inline void free_runs(void) {
  for (int r = 0; r < NR_MAX; r++) {
    free(S.in[0][r]);
    free(S.in[1][r]);
  }
  free(S.ref[0]);
  free(S.ref[1]);
  free(S.tmp);
}

#endif
