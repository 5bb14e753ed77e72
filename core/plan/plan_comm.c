/* Per-communicator plan state: the NCCL_ALGO/NCCL_PROTO masks (parsed once, at init), the
 * agreed channel count, the collective sequence number and the ops of the open group. */
#include <stdlib.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/param.h"

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
  /* Same on every rank (comm_hash comes from the unique id), different across comms. */
  p->uop_salt = (uint32_t)((comm->comm_hash >> 17) ^ comm->comm_hash) & 0x7ffffffu;
  comm->plan = p;
  return ncclSuccess;
}

void plan_comm_fini(struct ncclComm* comm) {
  struct weft_plan* p = comm->plan;
  if (!p) return;
  plan_discard(comm);
  free(p->uops);
  free(p);
  comm->plan = NULL;
}
