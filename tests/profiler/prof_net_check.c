/* NetPlugin events in a host-mode run over a net (prof_tree with PROF_EXPECT_NET): the net
 * plugin reports its own transfers through profFn under the ProxyStep the proxy handed it, the
 * reference profiler keeps the plugin id and descriptor of each (ref_profiler.c), and this
 * checks them against the core's own ProxySteps — and, across the two ranks, the bytes one
 * side's events sent against the bytes the other side's events received. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler.h"
#include "prof_net_check.h"
#include "testutil.h"

/* verbs.h opcodes (enum ibv_wr_opcode, enum ibv_wc_opcode): the test builds without verbs. */
#define VERBS_WR_RDMA_WRITE_WITH_IMM 1
#define VERBS_WC_RECV_RDMA_WITH_IMM 129

int64_t prof_net_want_id(const char* which) {
  if (strcmp(which, "sock") == 0) return NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER;
  if (strcmp(which, "ib") == 0) return NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER;
  if (strcmp(which, "ofi") == 0) return WEFT_PROFILER_NET_TYPE_OFI | WEFT_PROFILER_NET_OFI_VER;
  fprintf(stderr, "PROF_EXPECT_NET=%s: want sock, ib, ofi or none\n", which);
  exit(2);
}

size_t prof_net_descr(int64_t id, const void* data, const char* provider, int* is_send) {
  int64_t type = id & (int64_t)NCCL_PROFILER_NET_TYPE_MASK;
  if (type == NCCL_PROFILER_NET_TYPE_SOCK) {
    ncclProfilerNetSockDescr_v1_t d;
    memcpy(&d, data, sizeof d);
    EXPECT_EQ_INT(d.type, ncclProfileSocket);
    EXPECT(d.sock.fd > 2);
    EXPECT(d.sock.op == 0 || d.sock.op == 1); /* NCCL's NCCL_SOCKET_SEND / _RECV */
    *is_send = d.sock.op == 0;
    return d.sock.length;
  }
  if (type == NCCL_PROFILER_NET_TYPE_IB) {
    ncclProfilerNetIbDescr_v1_t d;
    memcpy(&d, data, sizeof d);
    EXPECT_EQ_INT(d.type, ncclProfileQp);
    EXPECT(d.qp.device >= 0);
    EXPECT(d.qp.qpNum >= 0 && d.qp.qpNum < (1 << 24)); /* QP numbers have 24 bits */
    EXPECT(d.qp.opcode == VERBS_WR_RDMA_WRITE_WITH_IMM ||
           d.qp.opcode == VERBS_WC_RECV_RDMA_WITH_IMM);
    *is_send = d.qp.opcode == VERBS_WR_RDMA_WRITE_WITH_IMM;
    return d.qp.length;
  }
  EXPECT_EQ_INT(type, WEFT_PROFILER_NET_TYPE_OFI);
  weftProfilerNetOfiDescr_v1_t d;
  memcpy(&d, data, sizeof d);
  EXPECT_EQ_INT(d.type, weftProfileOfiOp);
  EXPECT(d.op.op == weftProfileOfiTsend || d.op.op == weftProfileOfiTrecv);
  EXPECT(d.op.device >= 0);
  EXPECT(d.op.provider != NULL && provider != NULL && strstr(provider, "tcp") != NULL);
  *is_send = d.op.op == weftProfileOfiTsend;
  return d.op.length;
}

void prof_net_check(const ref_summary* s, int rank, prof_net_totals* out) {
  const char* which = getenv("PROF_EXPECT_NET");
  if (which == NULL) return;
  int nsteps = 0, nnet = 0;
  for (int i = 0; i < s->nevents; i++) {
    nsteps += s->events[i].type == ncclProfileProxyStep;
    nnet += s->events[i].type == ncclProfileNetPlugin;
  }
  EXPECT(nsteps > 0); /* the run went over the net */
  if (strcmp(which, "none") == 0 || s->version < 3) {
    EXPECT_EQ_INT(nnet, 0);
    return;
  }
  int64_t id = prof_net_want_id(which);
  int exact = s->version >= 4 || strcmp(which, "sock") == 0;
  size_t* sum = calloc((size_t)s->nevents, sizeof *sum);
  int* kids = calloc((size_t)s->nevents, sizeof *kids);
  EXPECT(sum && kids);
  uint64_t sent = 0, recvd = 0;
  for (int i = 0; i < s->nevents; i++) {
    const ref_event* e = &s->events[i];
    if (e->type != ncclProfileNetPlugin) continue;
    EXPECT_EQ_INT(e->net_id, id);
    const ref_event* step = e->parent;
    EXPECT(step != NULL && step->type == ncclProfileProxyStep);
    const ref_event* op = step->parent;
    EXPECT(op != NULL && op->type == ncclProfileProxyOp);
    int is_send = op->root, descr_send = -1; /* ref_profiler keeps isSend there */
    size_t len = prof_net_descr(e->net_id, e->net_data, e->net_provider, &descr_send);
    EXPECT_EQ_INT(descr_send, is_send);
    /* A receive's length is final in its update (IB, OFI: bytes that arrived; v4+ only). */
    if (s->version >= 4)
      EXPECT_EQ_INT(e->net_updates, !is_send && strcmp(which, "sock") != 0 ? 1 : 0);
    sum[step - s->events] += len;
    kids[step - s->events]++;
    if (is_send)
      sent += len;
    else
      recvd += len;
  }
  for (int i = 0; i < s->nevents; i++) {
    const ref_event* st = &s->events[i];
    if (st->type != ncclProfileProxyStep) continue;
    EXPECT(kids[i] >= 1);
    if (s->version < 4) continue; /* no transSize before v4 */
    /* A send step's transSize is the bytes it carries, a receive step's the bytes it moved. */
    EXPECT_EQ_INT(sum[i], st->trans_size);
  }
  free(sum);
  free(kids);
  EXPECT(sent > 0 && recvd > 0);
  if (rank < PROF_NET_MAX_RANKS) {
    out->checked[rank] = exact;
    out->sent[rank] = sent;
    out->recvd[rank] = recvd;
    out->nevents[rank] = nnet;
  }
  printf("rank %d: %d NetPlugin events under %d ProxySteps, %llu bytes sent, %llu received\n",
         rank, nnet, nsteps, (unsigned long long)sent, (unsigned long long)recvd);
}

int prof_net_check_totals(const prof_net_totals* t, int nranks) {
  for (int r = 0; r < nranks && r < PROF_NET_MAX_RANKS; r++) {
    int p = r ^ 1;
    if (p >= nranks || !t->checked[r] || !t->checked[p]) continue;
    if (t->sent[r] != t->recvd[p]) {
      fprintf(stderr, "rank %d's NetPlugin events sent %llu bytes, rank %d's received %llu\n", r,
              (unsigned long long)t->sent[r], p, (unsigned long long)t->recvd[p]);
      return 1;
    }
  }
  return 0;
}
