/* Per-communicator plan state: the NCCL_ALGO/NCCL_PROTO masks (parsed once, at init), the
 * agreed channel count, the collective sequence number and the ops of the open group. */
#include <stdlib.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/param.h"

/* Ranks per host when the ranks are host-major with the same count P > 1 on each of two or more
 * hosts (hosts as comm_same_host tells them): RecDoubling then runs hierarchically
 * (algo/algo_log.h). 0 otherwise, or in device mode, or with WEFT_LOG_HIER=0. */
static int host_major_ppn(const struct ncclComm* comm) {
  if (comm->mode != WEFT_MODE_HOST || param_int(WEFT_PARAM_LOG_HIER) == 0 || comm->nranks < 4)
    return 0;
  int P = comm_host_major_ppn(comm->peers, comm->nranks);
  return P < 2 ? 0 : P;
}

ncclResult_t plan_comm_init(struct ncclComm* comm, int nchannels, int launch_blocks) {
  struct weft_plan* p = calloc(1, sizeof *p);
  if (!p) {
    WARN("rank %d: out of memory for the plan state", comm->rank);
    return ncclSystemError;
  }
  ncclResult_t res = tune_parse_masks(param_str(WEFT_PARAM_ALGO), param_str(WEFT_PARAM_PROTO),
                                      &p->mask);
  if (res != ncclSuccess) {
    free(p);
    return res;
  }
  p->nchannels = nchannels;
  int device = comm->mode == WEFT_MODE_DEVICE;
  p->ask = (weft_tune_ask){.rank = comm->rank,
                           .nranks = comm->nranks,
                           .device = device,
                           .max_channels = nchannels,
                           .all_p2p = device && transport_all_p2p(comm),
                           .launch_blocks = device ? launch_blocks : 0,
                           .mask = &p->mask};
  p->check_colls = (int)param_int(WEFT_PARAM_CHECK_COLLECTIVES);
  p->zero_copy = (int)param_int(WEFT_PARAM_ZERO_COPY);
  p->log_ppn = host_major_ppn(comm);
  if (p->log_ppn)
    INFO(NCCL_INIT | NCCL_TUNING, "rank %d: %d hosts of %d ranks, host-major: RecDoubling runs "
         "hierarchically (a reduce and a broadcast within each host around the hosts' exchange)",
         comm->rank, comm->nranks / p->log_ppn, p->log_ppn);
  /* Same on every rank (comm_hash comes from the unique id), different across comms. */
  p->uop_salt = (uint32_t)((comm->comm_hash >> 17) ^ comm->comm_hash) & 0x7ffffffu;
  p->ask.dtype = p->ask.redop = -1;
  comm->plan = p;
  return ncclSuccess;
}

void plan_comm_fini(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  if (!p) return;
  plan_discard(comm);
  plan_collnet_fini(comm);
  free(p->uops);
  free(p);
  comm->plan = NULL;
}
