/* The cost model's rows for weft's direct algorithms, OneShot and TwoShot (algo/algo_direct.h),
 * for both parameter sets. They have no row in NCCL's constants, so they borrow the Ring row of
 * the same link and protocol (a tuner that rewrote it moves them too):
 *
 *   latency  = base(Ring) + steps · hop(Ring) · (step_scale + peer_hop · (n - 2))
 *   transfer = wire · nbytes at the Ring's bandwidth
 *
 * steps: 1 for OneShot (every rank's data crosses one link), 2 for TwoShot (reduce-scatter,
 * then all-gather). hop(Ring): the Ring's latency less its base, per ring step. wire, the bytes
 * a rank puts on its links per byte of buffer: OneShot AllReduce n-1 (its whole buffer to every
 * peer), TwoShot AllReduce 2(n-1)/n, AllGather and ReduceScatter (n-1)/n (the full buffer's
 * size), Broadcast and Reduce n-1 (the root to or from every peer).
 * Usable on 2 .. WEFT_DIRECT_MAX_RANKS ranks (one rank: what the ring costs, plus one, so it
 * never wins unless asked for).
 *
 * Constants: device, one NVLink/NVSwitch step a step, peers served at once (peer_hop 0.1);
 * host: a direct step polls n-1 FIFOs on one thread, so it is taken as 2.5 ring hops, and its
 * data moves at half the Ring's bandwidth (HOST_DIRECT_EFFICIENCY: TwoShot AllReduce of 8 ranks
 * on the 16-core GPU host took 1.8-1.9x the Ring's time from 256 KiB to 64 MiB, where the wire
 * is the same; the model had picked it there). */
#include "tune/tune_model_impl.h"

#define HOST_DIRECT_EFFICIENCY 0.5

static double direct_wire(ncclFunc_t func, int algo, int n) {
  switch (func) {
    case ncclFuncAllReduce:
      return algo == WEFT_ALGO_TWOSHOT_ID ? 2.0 * (n - 1) / n : (double)(n - 1);
    case ncclFuncAllGather:
    case ncclFuncReduceScatter: return (double)(n - 1) / n;
    default: return (double)(n - 1);
  }
}

/* Ring steps the Ring row's latency counts (host and device count them alike but Broadcast and
 * Reduce: the device model counts n, the host n-1). */
static int ring_steps(const weft_tune_model* m, ncclFunc_t func, int n) {
  if (func == ncclFuncAllReduce) return 2 * (n - 1);
  if (func == ncclFuncAllGather || func == ncclFuncReduceScatter || m->f.host) return n - 1;
  return n;
}

void tune_model_init_direct(weft_tune_model* m) {
  int n = m->f.nranks;
  if (m->direct_step_scale <= 0) {
    m->direct_step_scale = m->f.host ? 2.5 : 1.0;
    m->direct_peer_hop = m->f.host ? 0.5 : 0.1;
  }
  if (n > WEFT_DIRECT_MAX_RANKS) return;
  for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++) {
    ncclFunc_t func = (ncclFunc_t)fn;
    for (int a = WEFT_ALGO_ONESHOT_ID; a <= WEFT_ALGO_TWOSHOT_ID; a++) {
      if (!(tune_func_algos(func) & (1u << a))) continue;
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        double ring = m->lat[fn][NCCL_ALGO_RING][p];
        if (ring < 0) continue;
        if (n == 1) {
          m->lat[fn][a][p] = ring + 1.0;
          m->wire[fn][a][p] = 1.0;
          continue;
        }
        double base = m->k.baseLatencies[NCCL_ALGO_RING][p];
        int rs = ring_steps(m, func, n);
        double hop = rs > 0 && ring > base ? (ring - base) / rs : 0.0;
        int steps = a == WEFT_ALGO_ONESHOT_ID ? 1 : 2;
        m->lat[fn][a][p] =
            base + steps * hop * (m->direct_step_scale + m->direct_peer_hop * (n - 2));
        m->wire[fn][a][p] = direct_wire(func, a, n) / (m->f.host ? HOST_DIRECT_EFFICIENCY : 1.0);
        m->bw[fn][a][p] = m->bw[fn][NCCL_ALGO_RING][p];
      }
    }
  }
}
