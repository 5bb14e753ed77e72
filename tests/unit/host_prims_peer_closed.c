/* The host primitive (core/host/host_prims.c) when a peer sends its last steps and destroys its
 * communicator at once, as shm_close does: the sender publishes tail (release), then marks the
 * shared control block broken (CLOSED, release). The receiver must use that data: a wait is an
 * error only when the data is still missing after the mark is seen. A receiver that looked at
 * tail just before the data and at the mark just after it once failed a whole CI run
 * (coll_matrix_9ranks_shm, "rank 3 destroyed its communicator" on an AllGather rank 3 had
 * finished).
 *
 * Two threads share one connection's control block and slots, one producing and one
 * consuming, through host_prim_try itself. Each round picks Simple or LL, whether the first step
 * carries the op signature, 1..WEFT_NSTEPS steps and their sizes, and random bytes; the
 * receiver is already polling when the sender starts, so the mark lands while it looks. The
 * receiver's bytes are compared with the sender's inputs.
 *
 * Negative rounds prove the check can fail: the sender marks the block CLOSED one step short,
 * and the receiver must then fail that step with ncclRemoteError (not wait, not succeed).
 * WEFT_TEST_SEED changes the seed. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "nccl_common.h"
#include "transport/transport.h"
#include "testutil.h"
#include "transport/conn.h"

#define ROUNDS 20000
#define NEG_EVERY 100 /* every 100th round is a negative one (each logs its WARN) */
#define STEP_BYTES 1024
/* Looks in a tight loop before each wait starts yielding: tight looks, while the other thread
 * runs on another core, are what meet the race; yields let a loaded machine with one free core
 * still run the other thread. */
#define SPINS 4096
#define LL_PAYLOAD (STEP_BYTES / WEFT_LL_LINE_BYTES * WEFT_LL_LINE_PAYLOAD)

typedef struct {
  /* set by the main thread before a round */
  int proto, with_sig, nsteps, short_by;
  size_t nbytes[WEFT_NSTEPS];
  unsigned char in[WEFT_NSTEPS][STEP_BYTES];
  /* the shared connection memory */
  weft_fifo_ctrl* ctrl;
  char* buff;
  weft_op op;
  /* receiver's results */
  unsigned char out[WEFT_NSTEPS][STEP_BYTES];
  int recv_steps;
  int recv_fail;
  ncclResult_t recv_res;
  int polling;
  pthread_barrier_t start, done;
  int quit;
} round_t;

/* LL scratch (host.h: 2 × WEFT_PRIM_MAX_PEERS + 1 buffers of the largest LL payload), one set
 * per thread */
#define NSCRATCH (2 * WEFT_PRIM_MAX_PEERS + 1)
static char scratch_mem[2][NSCRATCH][LL_PAYLOAD];

/* host_sig.c's sibling check (host_exec.c calls it, the primitive does not) looks connections
 * up in the transport, which this test does not link. */
weft_conn* transport_find(struct ncclComm* comm, const weft_conn_key* key) {
  (void)comm;
  (void)key;
  return NULL;
}

/* One end's view of the shared connection for a round: is_send 1 is rank 0 sending on its
 * connection 1 (ring "to next"), 0 is rank 1 receiving on its connection 0. */
typedef struct {
  weft_conn c;
  weft_work w;
  char* scratch[NSCRATCH];
} end_t;

/* Wait for the next round and set this end up for it; 0 when the test is over. */
static int next_round(round_t* r, end_t* e, int is_send) {
  pthread_barrier_wait(&r->start);
  if (r->quit) return 0;
  memset(e, 0, sizeof *e);
  for (int i = 0; i < NSCRATCH; i++) e->scratch[i] = scratch_mem[is_send][i];
  e->c.ctrl = r->ctrl;
  e->c.buff = r->buff;
  e->c.step_bytes = STEP_BYTES;
  e->c.proto = r->proto;
  e->c.is_send = is_send;
  e->c.peer = is_send;
  e->w.op = &r->op;
  e->w.nranks = 2;
  e->w.rank = !is_send;
  e->w.conns[is_send] = &e->c;
  e->w.blocked = -1;
  e->w.sig_done = r->with_sig ? 0 : ~0u;
  return 1;
}

static void* sender(void* arg) {
  round_t* r = arg;
  end_t e;
  while (next_round(r, &e, 1)) {
    for (int spins = 0; !__atomic_load_n(&r->polling, __ATOMIC_ACQUIRE); spins++)
      if (spins > SPINS) sched_yield();
    for (int s = 0; s < r->nsteps - r->short_by; s++) {
      weft_prim p = {0};
      p.nsend = 1;
      p.send[0] = 1;
      p.src = (const char*)r->in[s];
      p.nelem = r->nbytes[s];
      ncclResult_t res = ncclSuccess;
      if (host_prim_try(&e.w, &p, e.scratch, &res) != 1) {
        fprintf(stderr, "FAIL: sender step %d did not run (FIFO full?)\n", s);
        exit(1);
      }
    }
    int none = 0; /* what shm_close does as the communicator is destroyed */
    __atomic_compare_exchange_n(&r->ctrl->broken, &none, WEFT_CONN_BROKEN_CLOSED, 0,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    pthread_barrier_wait(&r->done);
  }
  return NULL;
}

static void* receiver(void* arg) {
  round_t* r = arg;
  end_t e;
  while (next_round(r, &e, 0)) {
    r->recv_steps = 0;
    r->recv_fail = 0;
    r->recv_res = ncclSuccess;
    for (int s = 0; s < r->nsteps; s++) {
      weft_prim p = {0};
      p.nrecv = 1;
      p.recv[0] = 0;
      p.dst = (char*)r->out[s];
      p.nelem = r->nbytes[s];
      ncclResult_t res = ncclSuccess;
      int got;
      __atomic_store_n(&r->polling, 1, __ATOMIC_RELEASE);
      for (int spins = 0; (got = host_prim_try(&e.w, &p, e.scratch, &res)) == 0; spins++)
        if (spins > SPINS) sched_yield();
      if (got < 0) {
        r->recv_fail = 1;
        r->recv_res = res;
        break;
      }
      r->recv_steps++;
    }
    pthread_barrier_wait(&r->done);
  }
  return NULL;
}

int main(void) {
  test_require_weft_lib();
  uint64_t seed = test_seed(0x5eedc105edULL), st = seed;
  printf("host_prims_peer_closed: seed 0x%llx (WEFT_TEST_SEED), %d rounds\n",
         (unsigned long long)seed, ROUNDS);
  static round_t r;
  memset(&r, 0, sizeof r);
  size_t mem = WEFT_FIFO_CTRL_BYTES + (size_t)WEFT_NSTEPS * STEP_BYTES;
  char* block = aligned_alloc(4096, mem);
  if (!block) return 1;
  r.ctrl = (weft_fifo_ctrl*)block;
  r.buff = block + WEFT_FIFO_CTRL_BYTES;
  pthread_barrier_init(&r.start, NULL, 3);
  pthread_barrier_init(&r.done, NULL, 3);
  pthread_t ts, tr;
  pthread_create(&ts, NULL, sender, &r);
  pthread_create(&tr, NULL, receiver, &r);

  int bad = 0, pos = 0, neg = 0;
  for (int round = 0; round < ROUNDS && bad < 5; round++) {
    memset(block, 0, mem);
    r.proto = test_rand(&st) % 2 ? NCCL_PROTO_LL : NCCL_PROTO_SIMPLE;
    r.with_sig = (int)(test_rand(&st) % 2);
    r.nsteps = 1 + (int)(test_rand(&st) % WEFT_NSTEPS);
    r.short_by = round % NEG_EVERY == NEG_EVERY - 1 ? 1 : 0;
    memset(&r.op, 0, sizeof r.op);
    r.op.func = WEFT_FN_ALLGATHER;
    r.op.dtype = ncclUint8;
    r.op.elem = 1;
    r.op.count = (size_t)round;
    r.op.proto = r.proto;
    r.op.seq = (uint64_t)round + 1;
    for (int s = 0; s < r.nsteps; s++) {
      size_t cap = r.proto == NCCL_PROTO_LL ? LL_PAYLOAD : STEP_BYTES;
      if (s == 0 && r.with_sig) cap -= WEFT_CONN_SIG_BYTES;
      r.nbytes[s] = 1 + test_rand(&st) % cap;
      for (size_t b = 0; b < r.nbytes[s]; b++) r.in[s][b] = (unsigned char)test_rand(&st);
      memset(r.out[s], 0, sizeof r.out[s]);
    }
    r.polling = 0;
    pthread_barrier_wait(&r.start);
    pthread_barrier_wait(&r.done);

    int want_steps = r.nsteps - r.short_by;
    const char* proto = r.proto == NCCL_PROTO_LL ? "LL" : "Simple";
    if (r.short_by) {
      neg++;
      if (!r.recv_fail || r.recv_res != ncclRemoteError || r.recv_steps != want_steps) {
        fprintf(stderr,
                "FAIL round %d (%s, %d steps, one short): the receiver ran %d steps and %s "
                "(result %d) where it should fail step %d with ncclRemoteError\n",
                round, proto, r.nsteps, r.recv_steps, r.recv_fail ? "failed" : "succeeded",
                (int)r.recv_res, want_steps);
        bad++;
      }
      continue;
    }
    pos++;
    if (r.recv_fail || r.recv_steps != r.nsteps) {
      fprintf(stderr,
              "FAIL round %d (%s, %s, %d steps): the receiver failed step %d (result %d) though "
              "the sender had published it before it marked the connection closed\n",
              round, proto, r.with_sig ? "signature" : "no signature", r.nsteps, r.recv_steps,
              (int)r.recv_res);
      bad++;
      continue;
    }
    for (int s = 0; s < r.nsteps; s++)
      if (memcmp(r.in[s], r.out[s], r.nbytes[s]) != 0) {
        fprintf(stderr, "FAIL round %d (%s): step %d's %zu bytes differ from the sender's\n",
                round, proto, s, r.nbytes[s]);
        bad++;
        break;
      }
  }
  r.quit = 1;
  pthread_barrier_wait(&r.start);
  pthread_join(ts, NULL);
  pthread_join(tr, NULL);
  free(block);
  printf("host_prims_peer_closed: %d rounds delivered whole, %d short rounds failed as they "
         "should, %d failures\n",
         pos, neg, bad);
  return bad ? 1 : 0;
}
