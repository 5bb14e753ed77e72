/* The profiler events of a launch, with NCCL's parent links: a Group per communicator and
 * launch; under it (parentGroup) a Coll or P2p per op, whose parentObj is the CollApi/P2pApi
 * event of its call; a KernelCh per channel share under its Coll/P2p; a KernelLaunch under the
 * GroupApi event. Host mode times KernelCh on the host: it starts when the share is handed to
 * the executor and stops (KernelChStop, with the worker's clock in pTimer) when the worker
 * finishes it. Only called once PROF_ON said the mask asks for the event's subtree. */
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "proxy/proxy.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/names.h"

static int is_p2p(int func) { return func == ncclFuncSend || func == ncclFuncRecv; }
static int is_coll(int func) { return func >= ncclFuncBroadcast && func <= ncclFuncAllReduce; }

static void* coll_event(struct ncclComm* comm, const weft_op* op, void* group) {
  weft_prof* pf = &comm->prof;
  uint64_t seq = pf->seq[op->func]++;
  if (!PROF_ON(pf, ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp |
                       ncclProfileProxyStep | ncclProfileNetPlugin))
    return NULL;
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = op->prof_api;
  d.rank = comm->rank;
  d.coll.seqNumber = seq;
  d.coll.func = prof_func_name(op->func);
  d.coll.sendBuff = op->sendbuff;
  d.coll.recvBuff = op->recvbuff;
  d.coll.count = op->count;
  d.coll.root = op->root;
  d.coll.datatype = prof_dtype_name(op->dtype);
  d.coll.nChannels = (uint8_t)op->nchannels;
  d.coll.nWarps = 0;
  d.coll.algo = prof_algo_name(op->algo);
  d.coll.proto = prof_proto_name(op->proto);
  d.coll.parentGroup = group;
  return prof_start(pf, &d);
}

static void* p2p_event(struct ncclComm* comm, const weft_op* op, void* group) {
  weft_prof* pf = &comm->prof;
  if (!PROF_ON(pf, ncclProfileP2p | ncclProfileKernelCh | ncclProfileProxyOp |
                       ncclProfileProxyStep | ncclProfileNetPlugin))
    return NULL;
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileP2p;
  d.parentObj = op->prof_api;
  d.rank = comm->rank;
  d.p2p.func = prof_func_name(op->func);
  d.p2p.buff = op->func == ncclFuncSend ? (void*)op->sendbuff : op->recvbuff;
  d.p2p.datatype = prof_dtype_name(op->dtype);
  d.p2p.count = op->count;
  d.p2p.peer = op->root;
  d.p2p.nChannels = (uint8_t)op->nchannels;
  d.p2p.parentGroup = group;
  return prof_start(pf, &d);
}

void* plan_prof_begin(struct ncclComm* comm, weft_op* ops) {
  weft_prof* pf = &comm->prof;
  void* group = NULL;
  if (PROF_ON(pf, WEFT_PROF_GROUP_TREE)) {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof d);
    d.type = ncclProfileGroup;
    d.rank = comm->rank;
    group = prof_start(pf, &d);
  }
  for (weft_op* op = ops; op; op = op->next) {
    /* A send/receive to self was copied before the launch: it ran, and is reported too. */
    if (is_coll(op->func))
      op->prof_ev = coll_event(comm, op, group);
    else if (is_p2p(op->func))
      op->prof_ev = p2p_event(comm, op, group);
  }
  return group;
}

void plan_prof_end(struct ncclComm* comm, weft_op* ops, void* group) {
  weft_prof* pf = &comm->prof;
  for (weft_op* op = ops; op; op = op->next) {
    prof_stop(pf, op->prof_ev);
    op->prof_ev = NULL;
  }
  prof_stop(pf, group);
}

void* plan_prof_kernel_launch(struct ncclComm* comm, void* stream) {
  weft_prof* pf = &comm->prof;
  if (!PROF_ON(pf, ncclProfileKernelLaunch)) return NULL;
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelLaunch;
  d.parentObj = pf->group_api;
  d.rank = comm->rank;
  d.kernelLaunch.stream = stream;
  return prof_start(pf, &d);
}

void plan_prof_channel_start(weft_work* w) {
  weft_prof* pf = &w->comm->prof;
  w->prof_ch = NULL;
  if (!PROF_ON(pf, ncclProfileKernelCh) || w->op->prof_ev == NULL) return;
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelCh;
  d.parentObj = w->op->prof_ev;
  d.rank = w->comm->rank;
  d.kernelCh.channelId = (uint8_t)w->channel;
  d.kernelCh.pTimer = clock_ns();
  w->prof_ch = prof_start(pf, &d);
}

void plan_prof_channel_stop(weft_work* w) {
  weft_prof* pf = &w->comm->prof;
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = clock_ns();
  prof_state(pf, w->prof_ch, ncclProfilerKernelChStop, &a);
  prof_stop(pf, w->prof_ch);
  w->prof_ch = NULL;
}

void* plan_prof_local_coll(struct ncclComm* comm, const weft_op* op) {
  if (!is_coll(op->func)) return NULL;
  return coll_event(comm, op, NULL);
}

void plan_prof_proxy_ops(struct ncclComm* comm, weft_work* works, int nworks) {
  if (!comm->proxy) return;
  for (int i = 0; i < nworks; i++) {
    weft_work* w = &works[i];
    int net[WEFT_WORK_MAX_CONNS] = {0}, any = 0;
    for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++)
      if (w->conns[k] && transport_kind_of(comm, &w->keys[k]) == WEFT_TRANSPORT_NET)
        net[k] = any = 1;
    if (!any) continue;
    uint64_t steps[WEFT_WORK_MAX_CONNS] = {0};
    for (int s = 0; s < w->nstreams; s++) {
      weft_prim p;
      for (uint64_t pc = 0; work_prim(w, s, pc, &p); pc++) {
        for (int r = 0; r < p.nrecv; r++) steps[p.recv[r]]++;
        for (int r = 0; r < p.nsend; r++) steps[p.send[r]]++;
      }
    }
    for (int k = 0; k < WEFT_WORK_MAX_CONNS; k++)
      if (net[k] && steps[k])
        proxy_prof_expect(comm->proxy, w->conns[k], steps[k], w->op->prof_ev, w->keys[k].peer);
  }
}
