/* A work item's shape: which algorithm generates its steps, how big a step is, and the
 * send/recv steps of point-to-point transfers (a Send is a chain of sends through the FIFO to
 * the peer, a Recv the matching chain of receives). */
#include <string.h>

#include "comm/comm.h"
#include "plan/plan.h"
#include "util/check.h"

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }

ncclResult_t plan_work_setup(weft_work* w) {
  const weft_op* op = w->op;
  struct ncclComm* comm = w->comm;
  for (int i = 0; i < WEFT_WORK_MAX_CONNS; i++) w->keys[i].peer = -1;
  w->nranks = comm->nranks;
  w->rank = comm->rank;
  w->src = op->sendbuff;
  w->dst = op->recvbuff;
  int ll = op->proto == NCCL_PROTO_LL;
  size_t step = comm->nranks > 1 ? transport_step_bytes(comm, op->proto) : (size_t)1 << 19;
  w->chunk = conn_payload_max(step, ll) / op->elem;
  if (w->chunk == 0) {
    WARN("rank %d: a %s step of %zu bytes cannot hold one %zu-byte element", comm->rank,
         ll ? "LL" : "Simple", step, op->elem);
    return ncclInternalError;
  }
  w->nstreams = 1;
  switch (op->func) {
    case ncclFuncSend:
    case ncclFuncRecv: {
      int send = op->func == ncclFuncSend;
      weft_conn_key* k = &w->keys[send ? 1 : 0];
      k->kind = WEFT_CONN_P2P;
      k->channel = w->channel;
      k->peer = op->root;
      k->send = send;
      k->proto = op->proto;
      w->npc[0] = divup(w->part_count, w->chunk);
      return ncclSuccess;
    }
    case ncclFuncAllReduce:
      if (op->algo == NCCL_ALGO_TREE) {
        plan_tree_setup(w);
        return ncclSuccess;
      }
      /* fall through */
    default:
      plan_ring_setup(w);
      return ncclSuccess;
  }
}

int plan_work_prim(const weft_work* w, int stream, uint64_t pc, weft_prim* p) {
  if (pc >= w->npc[stream]) return 0;
  memset(p, 0, sizeof *p);
  const weft_op* op = w->op;
  switch (op->func) {
    case ncclFuncSend:
    case ncclFuncRecv: {
      size_t off = (size_t)pc * w->chunk;
      p->nelem = w->part_count - off < w->chunk ? w->part_count - off : w->chunk;
      size_t at = (w->part_off + off) * op->elem;
      if (op->func == ncclFuncSend) {
        p->src = w->src + at;
        p->nsend = 1;
        p->send[0] = 1;
      } else {
        p->dst = w->dst + at;
        p->nrecv = 1;
        p->recv[0] = 0;
      }
      return 1;
    }
    case ncclFuncAllReduce:
      if (op->algo == NCCL_ALGO_TREE) return plan_tree_prim(w, stream, pc, p);
      /* fall through */
    default:
      return plan_ring_prim(w, stream, pc, p);
  }
}

const char* plan_func_name(int func) {
  switch (func) {
    case ncclFuncBroadcast: return "Broadcast";
    case ncclFuncReduce: return "Reduce";
    case ncclFuncAllGather: return "AllGather";
    case ncclFuncReduceScatter: return "ReduceScatter";
    case ncclFuncAllReduce: return "AllReduce";
    case ncclFuncSend: return "Send";
    case ncclFuncRecv: return "Recv";
    case ncclFuncAlltoAll: return "AlltoAll";
    case ncclFuncGather: return "Gather";
    case ncclFuncScatter: return "Scatter";
    default: return "Unknown";
  }
}
