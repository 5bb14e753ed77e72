/* Setup of a work item that runs one of the logarithmic algorithms (RecDoubling, Rabenseifner,
 * the log-step AllGather/ReduceScatter in PAT's slot, Binomial): the connections its steps use,
 * read off the steps of its first loop (every loop uses the same roles), each to the peer
 * algo_log_peer names. Only those are made, lazily, when the work first runs: at most
 * 2·ceil(log2 n) + 2 per channel, each one FIFO of the transport's bounded size. The steps
 * themselves are algo_log.h's, shared with the kernels. Up to WEFT_LOG_MAX_RANKS ranks (the
 * device executor: WEFT_LOG_DEV_MAX_RANKS, kept by the tuner's caps, tune_comm.c). */
#include "comm/comm.h"
#include "plan/plan.h"
#include "util/check.h"

int plan_log_fits(int algo, int func, int nranks) {
  if (nranks > WEFT_LOG_MAX_RANKS) return 0;
  switch (algo) {
    case WEFT_ALGO_RECDOUBLING_ID:
    case WEFT_ALGO_RABENSEIFNER_ID: return func == ncclFuncAllReduce;
    case WEFT_ALGO_PAT_ID: return func == ncclFuncAllGather || func == ncclFuncReduceScatter;
    case WEFT_ALGO_BINOMIAL_ID: return func == ncclFuncBroadcast || func == ncclFuncReduce;
    default: return 0;
  }
}

ncclResult_t plan_log_setup(weft_work* w) {
  weft_algo* a = &w->alg;
  a->log_ppn = a->algo == WEFT_ALGO_RECDOUBLING_ID ? w->comm->plan->log_ppn : 0;
  if (a->algo == WEFT_ALGO_RABENSEIFNER_ID && a->chunk < (size_t)algo_pow2_floor(a->nranks) / 2) {
    WARN("rank %d: Rabenseifner needs steps of %d elements on %d ranks; %s steps hold %zu",
         w->rank, algo_pow2_floor(a->nranks) / 2, a->nranks, tune_proto_name(w->op->proto),
         a->chunk);
    return ncclInternalError;
  }
  algo_count_steps(a);
  return plan_role_keys(w, algo_log_steps_per_loop(a), algo_log_peer,
                        tune_algo_name(a->algo));
}

ncclResult_t plan_role_keys(weft_work* w, uint64_t per, int (*peer_of)(const weft_algo*, int),
                            const char* what) {
  weft_algo* a = &w->alg;
  unsigned used = 0;
  for (uint64_t pc = 0; pc < per && pc < a->npc[0]; pc++) {
    weft_prim p;
    if (!algo_prim(a, 0, pc, &p)) break;
    for (int i = 0; i < p.nrecv; i++) used |= 1u << p.recv[i];
    for (int i = 0; i < p.nsend; i++) used |= 1u << p.send[i];
  }
  for (int role = 0; role < WEFT_ALGO_MAX_CONNS; role++) {
    if (!((used >> role) & 1)) continue;
    int peer = peer_of(a, role);
    if (peer < 0 || peer == w->rank) {
      WARN("rank %d: %s role %d has no peer on %d ranks", w->rank, what, role, a->nranks);
      return ncclInternalError;
    }
    weft_conn_key* k = &w->keys[role];
    k->kind = WEFT_CONN_COLL;
    k->channel = w->channel;
    k->peer = peer;
    algo_log_role_distance(role, &k->send);
    k->proto = w->op->proto;
  }
  return ncclSuccess;
}
