/* Zero copy on registered buffers (WEFT_ZC_REGISTERED: algo.h weft_zc_bufs, conn.h zc_post,
 * plan/plan_zc.c find_registered, device_kernel.cuh run_work / wait_step / post_step /
 * simple_step) under a simulator, as algo_zc_sim.c does for windows: the direct step generators
 * run on 2..8 simulated ranks and 1..3 channels in one thread; a pseudo-random scheduler runs one
 * runnable (rank, channel) step at a time, atomically, by the kernel's rules:
 *  - a step runs once its receive connections have tail > step and its send connections
 *    head + WEFT_NSTEPS > step; then its sends do tail++ and its receives head++;
 *  - each rank's sendbuff / recvbuff sit at its own offsets in its own registrations, whose base
 *    as mapped in peer q's process is in the rank's table (0: q cannot map it; NULL table: no
 *    peer can). Such an address is a token here that only rank q can turn into memory;
 *  - run_work's zc_in[w][k] = peers[w][q] + off[w] (0: none); a send to role 8+d is in place when
 *    zc_in[0][d] (TwoShot: and zc_in[1][d]) is set: it posts {zc_in[0][d], zc_in[1][d], step + 1}
 *    in zc_post[step % 8] and stores nothing, else it copies into slot step % 8 (step_bytes);
 *  - a receive reads the post's buf[zc_from - 1] + zc_off when the post's tag is its step's, else
 *    the slot, which the sender must then have filled for this very step;
 *  - the chunk is the planner's for registered buffers (a Simple slot: step_bytes / elem), so
 *    an op takes many steps and wraps the 8 slots; a work item ends by waiting until every send
 *    connection's head equals its tail.
 * Each run does two ops back to back (a rank writes the second input once every channel of its
 * first drained). Per seed: which peer maps which registration (all, none, a mix for both ops,
 * a mix per op, some ranks' tables NULL in a mix, all for one op and none for the other),
 * rank-specific offsets in one or two registrations, the second op on the same or on other
 * buffers, and fresh connections or used ones (counters past 0, slots holding posts of earlier
 * ops that point at other buffers).
 * AllReduce also runs with placement per rank, which registered buffers allow (one rank may call
 * in place while another calls out of place): per seed all ranks in place, all out of place, or
 * a mix (a second op on other buffers draws its own). As in find_registered, a rank in place
 * gets no tables: it copies every send into the slots and posts nothing, and reads what its
 * out-of-place peers post as ever. Every rank asks the tuner as out of place (plan_op.c choose),
 * so all pick the same algorithm and OneShot runs with ranks in place too: a rank's push of a
 * chunk precedes its reduce of it (run_work: stream 0, then 1, at each pc; down_after_up), so
 * its copies leave before the result overwrites its input.
 *
 * Checks: results against references from the inputs (integers first, then non-integer floats
 * bit-equal to the sum in rank order, the same bits on every AllReduce rank), src untouched on
 * ranks out of place, every byte outside the ops' buffers untouched, no deadlock. Negative
 * checks show the checker can fail: (a) without the end-of-work drain; (b) with a receiver that
 * ignores the tag (takes any post whose buf is set), which can only fail where a slot may hold
 * a post pointing elsewhere than the op's buffers: used connections, or a second op on other
 * buffers after availability changed. On fresh connections and the same buffers it cannot, and
 * the suite checks it does not: within an op a connection posts at every step or at none, and a
 * post of the previous op names the same buffer, which holds the current data wherever a peer
 * may read it; (c) a TwoShot sender that posts without a readable recvbuff; (d) no flow control
 * (Broadcast and Reduce only: in the others a sender never gets 8 steps ahead); (e) mixed
 * placement under the old rule, in-place ranks keeping their tables and posting: OneShot gives
 * wrong sums (a peer reads a chunk after its owner's reduce wrote the result over it), in seeds
 * where such a rank has a peer that maps its buffer. TwoShot under that rule stays correct, and
 * the suite checks it does (as in the in-place TwoShot case, whose ranks keep their tables): a
 * rank overwrites block q only after q, having read it, sent its reduced block. WEFT_TEST_SEED
 * changes the seeds. The scheduler, the rules, the checks of results and the seed loops, shared
 * with algo_zc_sim.c, are in algo_zc_simcore.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "testutil.h"
#include "transport/conn.h"

#define NR_MAX WEFT_DIRECT_MAX_RANKS
#define NCH_MAX 3
#define NEXE_MAX (NR_MAX * NCH_MAX)
#define SIM_NAME "algo_zc_reg_sim"
#define SLOT_MAX 1024 /* largest step_bytes */

enum { NEG_NONE, NEG_NO_DRAIN, NEG_NO_TAG, NEG_NO_NEED_DST, NEG_NO_FLOW, NEG_IP_POSTS };
enum { AV_ALL, AV_NONE, AV_MIXED, AV_PER_OP, AV_FLIP, AV_N };
static const char* const av_names[] = {"all", "none", "mixed", "mixed per op", "all/none by op"};
#define MIXED 2 /* zc_case.in_place: AllReduce placement chosen per rank by the seed */
enum { PL_MIX, PL_ALL_IN, PL_ALL_OUT };

typedef struct {
  int func, algo, in_place, n, root, nch; /* in_place: 0, 1 or MIXED */
  size_t count, step_bytes;
  int neg;
  int av, moved, hist; /* -1: chosen by the seed */
} zc_case;

typedef struct {
  uint64_t head, tail;
  uint64_t filled[WEFT_NSTEPS]; /* step + 1 whose data the sender copied into the slot */
  struct {
    uint64_t buf[2], tag;
  } post[WEFT_NSTEPS];
  char* slots;
} fifo;

typedef struct {
  int rank, ch, phase, op, st;
  weft_algo a;
  uint64_t pc;
  uint64_t zc_in[2][WEFT_PRIM_MAX_PEERS]; /* run_work's, as addresses in the peer's process */
  weft_prim p;
  unsigned weight;
} exe;

typedef struct {
  const zc_case* c;
  char name[240];
  uint64_t seed, rng;
  int av, moved, hist, two_regs;
  int ip[2][NR_MAX];  /* [buffer set][rank]: sendbuff == recvbuff */
  int regs2[NR_MAX];  /* the rank's recvbuffs in a second registration */
  fifo f[NCH_MAX][NR_MAX][NR_MAX]; /* [channel][from][to] */
  char* slotmem;
  exe e[NEXE_MAX];
  int ne;
  char* mem[NR_MAX]; /* each rank's memory: registrations, buffers, guards */
  size_t mem_bytes[NR_MAX], sbytes, rbytes;
  size_t send_off[2][NR_MAX], recv_off[2][NR_MAX]; /* [buffer set][rank], in mem */
  size_t reg_off[2][NR_MAX], reg_bytes[2][NR_MAX]; /* [sendbuff 0 / recvbuff 1 registration] */
  char* tab[2][NR_MAX][2][NR_MAX];                 /* [op][rank][w][viewer] */
  weft_zc_bufs zb[2][NR_MAX];                      /* [op][rank] */
  float* in[2][NR_MAX];
  float* ref[2];
  int pending[NR_MAX], rank_op[NR_MAX];
  float* tmp;
  int rc;
  char msg[1200];
} sim;

static sim S;
static uint64_t g_posted, g_copied, g_read_post, g_read_slot, g_wraps; /* what the runs did */

#include "algo_zc_simcore.h" /* what both simulators share, on S */

/* Rank r's buffers and placement in operation k: the second set where the second op moved. */
static int set_of(int k) { return k == 1 && S.moved; }
static char* op_sendbuf(int k, int r) { return S.mem[r] + S.send_off[set_of(k)][r]; }
static char* op_recvbuf(int k, int r) { return S.mem[r] + S.recv_off[set_of(k)][r]; }
static int op_in_place(int k, int r) { return S.ip[set_of(k)][r]; }

static void case_name(const zc_case* c, char* out, size_t len) {
  static const char* const negs[] = {"", " (no drain)", " (tag ignored)", " (posts without dst)",
                                     " (no flow control)", " (in-place ranks post)"};
  static const char* const places[] = {"out-of-place", "in-place", "mixed-placement"};
  char root[16];
  root_tag(c, root, sizeof root);
  snprintf(out, len, "%s/%s %s n=%d count=%zu channels=%d step_bytes=%zu%s%s",
           func_name(c->func), algo_name(c->algo), places[c->in_place], c->n, c->count, c->nch,
           c->step_bytes, root, negs[c->neg]);
}

/* What a run drew: availability, buffers, connections, registrations, placement. */
static void fail_context(char* out, size_t len) {
  char pl[2 * NR_MAX + 40] = ""; /* mixed placement: each rank's, I in place, O out of place */
  if (S.c->in_place == MIXED) {
    size_t at = (size_t)snprintf(pl, sizeof pl, ", placement ");
    for (int k = 0; k <= S.moved; k++) {
      if (k) pl[at++] = '/';
      for (int r = 0; r < S.c->n; r++) pl[at++] = op_in_place(k, r) ? 'I' : 'O';
    }
    pl[at] = '\0';
  }
  snprintf(out, len, " [availability %s, %s buffers, %s%s%s]", av_names[S.av],
           S.moved ? "second op on other" : "same", S.hist ? "history" : "fresh",
           S.two_regs ? ", two registrations" : "", pl);
}

/* ---- memory: registrations, addresses as mapped in a viewer's process ---- */

/* Rank owner's registration w as mapped in viewer's process: a token, not memory. */
static uint64_t view_base(int owner, int w, int viewer) {
  return (uint64_t)(1 + (owner * 2 + w) * NR_MAX + viewer) << 32;
}
/* What reader finds at address a of its process (bytes of it), or NULL after failing. */
static const char* translate(int reader, uint64_t a, size_t bytes, int* owner, int* w) {
  uint64_t idx = (a >> 32) - 1, off = a & 0xffffffffu;
  if ((a >> 32) == 0 || idx >= 2 * NR_MAX * NR_MAX) {
    failf(FAIL_RULE, "rank %d reads address %#llx, which no registration has", reader,
          (unsigned long long)a);
    return NULL;
  }
  int viewer = (int)(idx % NR_MAX);
  *owner = (int)(idx / NR_MAX / 2), *w = (int)(idx / NR_MAX % 2);
  if (viewer != reader) {
    failf(FAIL_RULE, "rank %d reads rank %d's registration at its address in rank %d's process",
          reader, *owner, viewer);
    return NULL;
  }
  if (off > S.reg_bytes[*w][*owner] || bytes > S.reg_bytes[*w][*owner] - off) {
    failf(FAIL_RULE, "rank %d reads %zu bytes at %llu of rank %d's registration of %zu", reader,
          bytes, (unsigned long long)off, *owner, S.reg_bytes[*w][*owner]);
    return NULL;
  }
  return S.mem[*owner] + S.reg_off[*w][*owner] + off;
}

static size_t pad(void) {
  uint64_t x = test_rand(&S.rng);
  return (size_t)(x % 4 == 0 ? x >> 8 & 63 : x >> 8 & 7) * ELEM;
}

/* Each rank's placement per buffer set: the case's, or (MIXED) by the seed: all in place, all
 * out of place, or a mix of both (half the seeds); a second op on other buffers redraws a mix
 * (which may then be all one way), on the same buffers it keeps the first's. */
static void placement(void) {
  const zc_case* c = S.c;
  for (int s = 0; s < 2; s++)
    for (int r = 0; r < c->n; r++) S.ip[s][r] = c->in_place == 1;
  if (c->in_place != MIXED) return;
  static const int cycle[4] = {PL_MIX, PL_ALL_IN, PL_MIX, PL_ALL_OUT};
  int pl = cycle[(S.seed + S.seed / AV_N) % 4]; /* every availability meets every placement */
  for (int s = 0; s < 2; s++) {
    int any_in, any_out;
    do {
      any_in = any_out = 0;
      for (int r = 0; r < c->n; r++) {
        int x = s == 1 && !S.moved ? S.ip[0][r]
                : pl == PL_MIX     ? (int)(test_rand(&S.rng) >> 9 & 1)
                                   : pl == PL_ALL_IN;
        S.ip[s][r] = x, any_in |= x, any_out |= !x;
      }
    } while (s == 0 && pl == PL_MIX && !(any_in && any_out));
  }
}

static void layout(void) {
  const zc_case* c = S.c;
  int n = c->n;
  size_t bytes = buffer_sizes();
  placement();
  int two = c->in_place != 1 && test_rand(&S.rng) % 2;
  S.two_regs = 0;
  for (int r = 0; r < n; r++) {
    size_t at = GUARD + pad();
    S.regs2[r] = two && !S.ip[0][r] && !S.ip[1][r]; /* a rank ever in place has one */
    S.two_regs |= S.regs2[r];
    if (S.ip[0][r] || S.ip[1][r]) { /* per set: both buffers in one block (AllGather's sendbuff
                                     * at its rank's part), or sendbuff then recvbuff */
      size_t big = S.sbytes > S.rbytes ? S.sbytes : S.rbytes;
      for (int s = 0; s < 2; s++) {
        if (!S.ip[s][r]) {
          S.send_off[s][r] = at, at += S.sbytes + GUARD + pad();
          S.recv_off[s][r] = at, at += S.rbytes + GUARD + pad();
          continue;
        }
        S.send_off[s][r] = S.recv_off[s][r] = at;
        if (c->func == WEFT_FN_ALLGATHER) S.send_off[s][r] += (size_t)r * bytes;
        if (c->func == WEFT_FN_REDUCESCATTER) S.recv_off[s][r] += (size_t)r * bytes;
        at += big + GUARD + pad();
      }
    } else { /* the sendbuffs, then the recvbuffs (the second registration, if any) */
      for (int s = 0; s < 2; s++) S.send_off[s][r] = at, at += S.sbytes + GUARD + pad();
      S.reg_off[1][r] = at - GUARD / 2;
      for (int s = 0; s < 2; s++) S.recv_off[s][r] = at, at += S.rbytes + GUARD + pad();
    }
    S.mem_bytes[r] = at + GUARD;
    S.mem[r] = realloc(S.mem[r], S.mem_bytes[r]);
    EXPECT(S.mem[r] != NULL);
    memset(S.mem[r], FILL, S.mem_bytes[r]);
    S.reg_off[0][r] = (size_t)(test_rand(&S.rng) % (GUARD / ELEM)) * ELEM; /* below the buffers */
    if (!S.regs2[r]) S.reg_off[1][r] = S.reg_off[0][r];
    S.reg_bytes[1][r] = S.mem_bytes[r] - S.reg_off[1][r];
    S.reg_bytes[0][r] = (S.regs2[r] ? S.reg_off[1][r] : S.mem_bytes[r]) - S.reg_off[0][r];
  }
  /* Which peer maps which registration, per op; then each rank's weft_zc_bufs (plan_zc.c). */
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < n; r++) {
      weft_zc_bufs* z = &S.zb[k][r];
      memset(z, 0, sizeof *z);
      int mapped_by_none = test_rand(&S.rng) % 4 == 0; /* in a mix: this rank's tables NULL */
      for (int w = 0; w < 2; w++) {
        int any = 0;
        for (int q = 0; q < n; q++) {
          int ok = q != r;
          if (S.av == AV_NONE || (S.av == AV_FLIP && (k ^ (int)(S.seed / AV_N % 2))))
            ok = 0;
          else if (S.av == AV_MIXED || S.av == AV_PER_OP)
            ok = ok && !mapped_by_none && test_rand(&S.rng) % 3 != 0;
          if (S.av == AV_MIXED && k == 1) ok = S.tab[0][r][w][q] != NULL;
          if (w == 1 && !S.regs2[r]) ok = S.tab[k][r][0][q] != NULL; /* one registration */
          S.tab[k][r][w][q] = ok ? (char*)(uintptr_t)view_base(r, w, q) : NULL;
          any |= ok;
        }
        if (w == 1 && c->func != WEFT_FN_ALLREDUCE) continue; /* TwoShot reads the results */
        z->peers[w] = any ? S.tab[k][r][w] : NULL;
        z->off[w] = (w ? S.recv_off : S.send_off)[set_of(k)][r] - S.reg_off[w][r];
      }
      /* find_registered: an AllReduce rank in place (placement per rank) gets no tables, so it
       * copies every send; its peers' tables, and what it reads of their posts, are as ever.
       * (The old rule kept them: NEG_IP_POSTS.) */
      if (c->in_place == MIXED && op_in_place(k, r) && c->neg != NEG_IP_POSTS)
        memset(z, 0, sizeof *z);
    }
}

/* Fresh connections, or ones that earlier operations used: counters past 0, and slots whose
 * posts point at the sender's other buffers (as mapped by the receiver) with their old tags. */
static void init_fifos(void) {
  const zc_case* c = S.c;
  for (int ch = 0; ch < c->nch; ch++)
    for (int a = 0; a < c->n; a++)
      for (int b = 0; b < c->n; b++) {
        fifo* f = &S.f[ch][a][b];
        size_t at = (size_t)((ch * NR_MAX + a) * NR_MAX + b) * WEFT_NSTEPS * SLOT_MAX;
        char* slots = S.slotmem + at;
        memset(f, 0, sizeof *f);
        f->slots = slots;
        memset(slots, FILL, WEFT_NSTEPS * c->step_bytes);
        if (!S.hist || a == b) continue;
        f->head = f->tail = test_rand(&S.rng) % 29;
        for (uint64_t s = f->head > 8 ? f->head - 8 : 0; s < f->head; s++) {
          int i = (int)(s % WEFT_NSTEPS);
          if (test_rand(&S.rng) % 4 == 0) { /* that step copied */
            f->filled[i] = s + 1;
            continue;
          }
          f->post[i].tag = s + 1;
          f->post[i].buf[0] = view_base(a, 0, b) + S.send_off[1][a] - S.reg_off[0][a];
          f->post[i].buf[1] = view_base(a, 1, b) + S.recv_off[1][a] - S.reg_off[1][a];
        }
      }
}

/* ---- executors ---- */

/* The next step's connections (as the planner makes them), its size (a FIFO slot's at most) and
 * its receives: of a buffer its senders post. */
static int check_step(const exe* e) {
  const zc_case* c = S.c;
  const weft_prim* p = &e->p;
  int n = c->n, r = e->rank;
  for (int i = 0; i < p->nrecv; i++)
    if (p->recv[i] > n - 2 || !key_recv(c, r, recv_peer(r, n, p->recv[i])))
      return step_fail(e, "receives on a connection the planner does not make");
  for (int i = 0; i < p->nsend; i++)
    if (p->send[i] < WEFT_DIRECT_SEND_ROLE0 || p->send[i] > WEFT_DIRECT_SEND_ROLE0 + n - 2 ||
        !key_send(c, r, send_peer(r, n, p->send[i])))
      return step_fail(e, "sends on a connection the planner does not make");
  size_t bytes = p->nelem * ELEM;
  if ((p->nrecv || p->nsend) && bytes > c->step_bytes)
    return step_fail(e, "moves more than a FIFO slot holds");
  if (p->nrecv && p->zc_from != WEFT_ZC_FROM_SRC &&
      !(p->zc_from == WEFT_ZC_FROM_DST && c->func == WEFT_FN_ALLREDUCE))
    return step_fail(e, "a receive reads a buffer no sender posts");
  return OK;
}

/* ---- checks ---- */

static int check_end(void) {
  const zc_case* c = S.c;
  static unsigned char fill[4096];
  memset(fill, FILL, sizeof fill);
  for (int r = 0; r < c->n; r++) { /* every byte outside the ops' buffers */
    size_t lo[4], hi[4], at = 0;
    int nb = 0;
    for (int s = 0; s <= S.moved; s++) {
      lo[nb] = S.send_off[s][r], hi[nb++] = S.send_off[s][r] + S.sbytes;
      lo[nb] = S.recv_off[s][r], hi[nb++] = S.recv_off[s][r] + S.rbytes;
    }
    for (;;) { /* the gap from at to the next buffer that ends past it */
      int nx = -1;
      for (int i = 0; i < nb; i++)
        if (hi[i] > at && (nx < 0 || lo[i] < lo[nx])) nx = i;
      size_t gap_end = nx < 0 ? S.mem_bytes[r] : lo[nx];
      for (size_t b = at; b < gap_end; b += sizeof fill) {
        size_t len = gap_end - b < sizeof fill ? gap_end - b : sizeof fill;
        if (memcmp(S.mem[r] + b, fill, len) != 0)
          return failf(FAIL_WRONG, "rank %d: a byte in [%zu, %zu) outside its buffers written", r,
                       b, b + len);
      }
      if (nx < 0) break;
      at = hi[nx];
    }
    if (S.moved && check_rank(r, 0)) return S.rc; /* the first op's buffers, still as it left */
  }
  return check_same_bits();
}

/* ---- running ---- */

/* Operation k's work item (its buffers and tables may differ from the first operation's),
 * then run_work's zc_in from its tables. */
static void begin_work(exe* e, int k) {
  const zc_case* c = S.c;
  int r = e->rank;
  weft_algo* a = &e->a;
  work_setup(e, c->step_bytes / ELEM /* tune_chunk_bytes: a Simple slot */, op_sendbuf(k, r),
             op_recvbuf(k, r), WEFT_ZC_REGISTERED, S.zb[k][r]);
  for (int w = 0; w < 2; w++) /* run_work */
    for (int j = 0; j < WEFT_PRIM_MAX_PEERS; j++) {
      int q = (r + j + 1) % c->n;
      uint64_t b = j < c->n - 1 && a->zc.peers[w] ? (uint64_t)(uintptr_t)a->zc.peers[w][q] : 0;
      e->zc_in[w][j] = b ? b + a->zc.off[w] : 0;
    }
}

/* Runs e's next step: all its reads (a post's buffer or a slot), then its writes and sends (a
 * post or a copy into the slot). */
static void run_step(exe* e) {
  const zc_case* c = S.c;
  int n = c->n, r = e->rank;
  const weft_prim* p = &e->p;
  size_t ne = p->nelem, bytes = ne * ELEM;
  const char* ins[1 + WEFT_PRIM_MAX_PEERS];
  int nin = 0, srci = -1;
  for (int i = 0; i < p->nrecv; i++) { /* wait_step, then simple_step's inputs */
    if (p->src && i == p->src_at) ins[srci = nin++] = p->src;
    int q = recv_peer(r, n, p->recv[i]), w = p->zc_from - 1;
    fifo* f = &S.f[e->ch][q][r];
    uint64_t s = f->head, rd = 0;
    int slot = (int)(s % WEFT_NSTEPS);
    if (c->neg == NEG_NO_TAG)
      rd = f->post[slot].buf[w];
    else if (f->post[slot].tag == s + 1)
      rd = f->post[slot].buf[w];
    if (rd) {
      int owner, ww;
      const char* at = translate(r, rd + p->zc_off, bytes, &owner, &ww);
      if (!at) return;
      if (owner != q || ww != w) {
        step_fail(e, "reads a post naming another rank's or buffer's registration");
        return;
      }
      if (c->neg != NEG_NO_TAG &&
          !in_range(at, bytes, w ? op_recvbuf(e->op, q) : op_sendbuf(e->op, q),
                    w ? S.rbytes : S.sbytes)) {
        step_fail(e, "reads a post outside the peer's buffer of this op");
        return;
      }
      ins[nin++] = at;
      g_read_post++;
    } else {
      if (f->filled[slot] != s + 1) {
        step_fail(e, "reads slot %d of rank %d for step %llu, which the sender did not fill",
                  slot, q, (unsigned long long)s);
        return;
      }
      ins[nin++] = f->slots + (size_t)slot * c->step_bytes;
      g_read_slot++;
    }
  }
  if (p->src && srci < 0) ins[srci = nin++] = p->src;
  int need_dst = c->func == WEFT_FN_ALLREDUCE && c->algo == WEFT_ALGO_TWOSHOT_ID &&
                 c->neg != NEG_NO_NEED_DST;
  if (nin > 0 && ne > 0) { /* reads */
    g_elems += ne * (uint64_t)nin;
    for (size_t x = 0; x < ne; x++) {
      float acc = 0;
      for (int i = 0; i < nin; i++) {
        float v = fval(ins[i] + x * ELEM);
        acc = i ? acc + v : v;
      }
      S.tmp[x] = acc;
    }
  }
  if (p->dst && nin > 0) memcpy(p->dst, S.tmp, bytes); /* then the writes */
  for (int i = 0; i < p->nsend; i++) { /* simple_step's outputs, post_step */
    int d = p->send[i] - WEFT_DIRECT_SEND_ROLE0;
    fifo* f = &S.f[e->ch][r][send_peer(r, n, p->send[i])];
    int slot = (int)(f->tail % WEFT_NSTEPS);
    if (e->zc_in[0][d] && (!need_dst || e->zc_in[1][d])) { /* zc_send_in_place: it posts */
      f->post[slot].buf[0] = e->zc_in[0][d];
      f->post[slot].buf[1] = e->zc_in[1][d];
      f->post[slot].tag = f->tail + 1;
      g_posted++;
    } else {
      if (nin == 0) {
        step_fail(e, "copies a send with no input");
        return;
      }
      memcpy(f->slots + (size_t)slot * c->step_bytes, S.tmp, bytes);
      f->filled[slot] = f->tail + 1;
      g_copied++;
    }
    if (f->tail + 1 - f->head == WEFT_NSTEPS) g_wraps++; /* 8 unread: the next send waits */
    f->tail++;
  }
  for (int i = 0; i < p->nrecv; i++) S.f[e->ch][recv_peer(r, n, p->recv[i])][r].head++;
  if (++e->st >= (e->a.npc[1] ? 2 : 1)) e->st = 0, e->pc++;
  load_step(e);
}

static void describe_wait(char* out, size_t len) {
  size_t k = 0;
  out[0] = '\0';
  for (int i = 0; i < S.ne && k + 80 < len; i++) {
    const exe* e = &S.e[i];
    if (e->phase == PH_DONE || e->phase == PH_WAIT) continue;
    int w = snprintf(out + k, len - k, " [rank %d ch %d op %d %s pc %llu]", e->rank, e->ch, e->op,
                     e->phase == PH_DRAIN ? "drain" : "step", (unsigned long long)e->pc);
    if (w > 0) k += (size_t)w < len - k ? (size_t)w : len - k - 1;
  }
}

/* One run of case c under seed: OK or FAIL_* (S.msg says what). */
static int run_case(const zc_case* c, uint64_t seed) {
  int n = c->n;
  begin_run(c, seed);
  S.av = c->av >= 0 ? c->av : (int)(seed % AV_N);
  S.moved = c->moved >= 0 ? c->moved : (int)(test_rand(&S.rng) >> 9 & 1);
  S.hist = c->hist >= 0 ? c->hist : (int)(test_rand(&S.rng) >> 9 & 1);
  layout();
  gen_inputs(NULL, NULL);
  init_fifos();
  g_elems += 6 * (uint64_t)n * (S.sbytes + S.rbytes) / ELEM;
  for (int r = 0; r < n; r++) memcpy(op_sendbuf(0, r), S.in[0][r], S.sbytes);
  unsigned mode = (unsigned)(test_rand(&S.rng) % 3);
  add_executors(mode); /* their work items: begin_work, per operation */
  return run_ops(mode == 2, c->neg == NEG_NO_DRAIN, c->neg == NEG_NO_FLOW);
}

/* ---- the suite ---- */

/* With every rank in place OneShot AllReduce is never zero copy (tune_op.c zero_copy_safe), but
 * the planner asks as out of place on registered buffers (plan_op.c choose), so placement mixed
 * by rank runs both AllReduce algorithms, its in-place ranks with no tables (layout). The
 * in-place TwoShot case keeps its ranks' tables, as find_registered did before: its steps never
 * overwrite what a peer has yet to read (algo_direct.h). negatives() names variants by index:
 * 1 out-of-place TwoShot, 3 and 4 mixed placement. */
static const struct {
  int func, algo, in_place;
} variants[] = {
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_ONESHOT_ID, 0},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_TWOSHOT_ID, 0},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_TWOSHOT_ID, 1},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_ONESHOT_ID, MIXED},
    {WEFT_FN_ALLREDUCE, WEFT_ALGO_TWOSHOT_ID, MIXED},
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
static const size_t counts[] = {1, 5, 37, 300, 2049};
#define NCOUNTS (int)(sizeof counts / sizeof counts[0])

/* Channels and step_bytes of the configurations of counts up to 37, up to 300, and more: slots
 * small enough that a channel's part takes from a few steps to many times the 8 slots. */
static const struct {
  int nch;
  size_t sb;
} configs[3][3] = {{{1, 16}, {2, 32}, {3, 64}},
                   {{1, 64}, {3, 32}, {2, 256}},
                   {{1, 256}, {2, 64}, {3, SLOT_MAX}}};

static zc_case variant_case(int v, int n, int root, int nch, size_t count, size_t sb) {
  return (zc_case){.func = variants[v].func, .algo = variants[v].algo,
                   .in_place = variants[v].in_place, .n = n, .root = root, .nch = nch,
                   .count = count, .step_bytes = sb, .av = -1, .moved = -1, .hist = -1};
}

#define BIG_BUDGET 20000

static void suite(void) {
  for (int v = 0; v < NVARIANTS; v++)
    for (int n = 2; n <= NR_MAX; n++)
      for (int ci = 0; ci < NCOUNTS; ci++) {
        int cf = counts[ci] <= 37 ? 0 : counts[ci] <= 300 ? 1 : 2;
        int nroots = rooted(variants[v].func) ? n : 1;
        for (int k = 0; k < 3; k++)
          for (int root = 0; root < nroots; root++) {
            zc_case c = variant_case(v, n, root, configs[cf][k].nch, counts[ci], configs[cf][k].sb);
            if (counts[ci] <= 5)
              run_seeds(&c, 40, 40, 0);
            else
              run_seeds(&c, AV_N, 60, BIG_BUDGET / (uint64_t)nroots);
          }
      }
}

/* Runs 100 seeds of c: each must pass or fail with want_rc, in some seed (must_fail) or none. */
static void negative(const zc_case* c, int want_rc, int must_fail, int show) {
  char first[1200], name[240];
  g_cases++;
  int bad = failing_seeds(c, 100, want_rc, first, sizeof first);
  case_name(c, name, sizeof name);
  if (must_fail != (bad > 0)) {
    fprintf(stderr, "algo_zc_reg_sim: %s [availability %d, moved %d, history %d]: %d/100 seeds "
            "fail, expected %s%s\n", name, c->av, c->moved, c->hist, bad,
            must_fail ? "some: the checker cannot see it" : "none: ", first);
    exit(1);
  }
  if (show)
    printf("negative %s: %d/100 seeds fail%s%s\n", name, bad, bad ? ", e.g. " : "", first);
}

static void negatives(void) {
  for (int v = 0; v < NVARIANTS; v++)
    for (int n = 2; n <= 4; n++) {
      int drain_free = variants[v].algo == WEFT_ALGO_TWOSHOT_ID && variants[v].in_place != 1;
      zc_case c = variant_case(v, n, n - 1, 2, 100, 16); /* 8..25 steps a connection */
      /* (a) No end-of-work drain: the next input overwrites data a peer still reads in place
       * (out-of-place TwoShot needs none: a rank's data is read before the rank's last step;
       * nor mixed placement TwoShot, whose in-place ranks copy). */
      c.neg = NEG_NO_DRAIN;
      c.moved = c.hist = 0;
      if (!drain_free) negative(&c, FAIL_WRONG, 1, n == 3 && v == 0);
      /* (b) A receiver that ignores the tag: a post of an earlier op on the connection, ... */
      c.neg = NEG_NO_TAG;
      c.hist = 1;
      negative(&c, FAIL_WRONG, 1, n == 3 && v == 0);
      /* ... or of the first op, when the second, on other buffers, copies where it posted; */
      c.hist = 0, c.moved = 1, c.av = AV_FLIP;
      negative(&c, FAIL_WRONG, 1, n == 3 && v == 1);
      c.av = AV_PER_OP;
      negative(&c, FAIL_WRONG, 1, 0);
      /* ... but never on fresh connections and the same buffers, whatever the availability. */
      c.moved = 0, c.av = -1;
      negative(&c, FAIL_WRONG, 0, 0);
    }
  /* (c) TwoShot posting where the recvbuff is not readable: a receiver takes the slot. (Out of
   * place with two registrations only: one registration is mapped for both or for none.) */
  for (int n = 2; n <= 4; n++) {
    zc_case c = variant_case(1, n, 0, 1, 37, 32);
    c.neg = NEG_NO_NEED_DST;
    c.av = AV_MIXED;
    negative(&c, FAIL_RULE, 1, n == 3);
  }
  /* (d) No flow control (head + 8 > step): a sender overwrites a slot or post not yet read.
   * Only Broadcast's root and Reduce's non-roots may run 8 steps ahead of a receiver: in the
   * others a rank's next sends wait for receives that follow its peers' reads. */
  for (int v = 0; v < NVARIANTS; v++) {
    if (!rooted(variants[v].func)) continue;
    zc_case c = variant_case(v, 3, 1, 2, 300, 16);
    c.neg = NEG_NO_FLOW;
    negative(&c, FAIL_RULE, 1, variants[v].func == WEFT_FN_BROADCAST && !variants[v].in_place);
  }
  /* (e) Mixed placement under the old rule, in-place ranks keeping their tables: in OneShot a
   * peer may read a chunk after the reduce of its owner wrote the result over it (wrong sums);
   * in TwoShot nothing a peer reads is overwritten first, so it stays correct. */
  for (int n = 2; n <= 4; n++) {
    zc_case c = variant_case(3, n, 0, 2, 100, 16);
    c.neg = NEG_IP_POSTS;
    negative(&c, FAIL_WRONG, 1, n == 3);
    c = variant_case(4, n, 0, 2, 100, 16);
    c.neg = NEG_IP_POSTS;
    negative(&c, FAIL_WRONG, 0, n == 3);
  }
}

int main(void) {
  sim_start();
  S.slotmem = malloc((size_t)NCH_MAX * NR_MAX * NR_MAX * WEFT_NSTEPS * SLOT_MAX);
  EXPECT(S.slotmem != NULL);
  zc_totals t = run_all(suite, negatives);
  printf("algo_zc_reg_sim: %d cases (%d runs) correct; %d negative cases (%d runs) as expected; "
         "%llu steps, %.2f s\n",
         t.cases, t.runs, t.neg_cases, t.neg_runs, (unsigned long long)g_steps, t.s);
  printf("algo_zc_reg_sim: sends posted %llu, copied %llu; receives read in place %llu, from a "
         "slot %llu; sends that left all 8 slots unread %llu\n",
         (unsigned long long)g_posted, (unsigned long long)g_copied,
         (unsigned long long)g_read_post, (unsigned long long)g_read_slot,
         (unsigned long long)g_wraps);
  for (int r = 0; r < NR_MAX; r++) free(S.mem[r]);
  free_runs();
  free(S.slotmem);
  return 0;
}
