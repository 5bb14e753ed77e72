/* What the executors run: an operation (weft_op, one API call) and its share on one channel
 * (weft_work), whose steps algo.h generates from a program counter. plan/ fills both in; host/
 * and device/ only read them, and report a finished work item through the weft_work_done_fn
 * they were created with, not by calling back into plan/. */
#ifndef WEFT_ALGO_WORK_H
#define WEFT_ALGO_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"
#include "algo/redop.h"
#include "graph/graph.h"
#include "nccl.h"
#include "transport/transport.h"

struct ncclComm;

/* One API call. func is an ncclFunc_t: Broadcast … AllReduce, Send or Recv (AlltoAll, Gather
 * and Scatter are lowered to Send/Recv at the API). */
typedef struct weft_op {
  struct weft_op* next;
  int func;
  const void* sendbuff;
  void* recvbuff;
  size_t count; /* AllGather: sendcount; ReduceScatter: recvcount; otherwise count */
  ncclDataType_t dtype;
  size_t elem;
  ncclRedOp_t user_op;
  weft_redop redop;          /* resolved at enqueue; a device-resident scalar is read at launch */
  const void* scalar_ptr;    /* PreMulSum with ncclScalarDevice: read at launch */
  int root;                  /* root, or peer for Send/Recv */
  int algo, proto, nchannels;
  int zero_copy;             /* WEFT_ZC_* (algo.h): a direct algorithm's peers read the buffers */
  weft_zc_bufs zc;           /* zero_copy: where (algo.h) */
  uint64_t seq;              /* collective sequence number on this comm (0 for p2p) */
  void* stream;              /* cudaStream_t of the call (device mode) */
  void* prof_api;            /* profiler: the CollApi/P2pApi event of the call, or NULL */
  void* prof_ev;             /* profiler: the Coll/P2p event while it runs, or NULL */
} weft_op;

#define WEFT_WORK_MAX_CONNS WEFT_ALGO_MAX_CONNS

struct weft_launch;
struct weft_work;

/* The net collective a CollNet step goes through (algo_collnet.h), handed down by plan/ with
 * the work item: step() starts or tests the in-network AllReduce of buf[nelem] (the op's type
 * and operator) in place on w's behalf, keeping its state in w's net_* fields. It returns 1 when
 * done, 0 when not yet (call again), -1 when it failed (*res set, logged with rank and call).
 * Never blocks beyond what the plugin's own calls do. */
typedef struct weft_netcoll {
  int (*step)(struct weft_netcoll* nc, struct weft_work* w, char* buf, size_t nelem,
              ncclResult_t* res);
} weft_netcoll;

/* An op's share on one channel. Streams are independent sequences of primitives (a tree's
 * reduce-up and broadcast-down run as two, so the pipeline runs both ways at once). */
typedef struct weft_work {
  struct weft_work* next;
  struct weft_launch* launch; /* plan/'s completion record (opaque here) */
  struct ncclComm* comm;
  const weft_op* op;
  int channel;
  int nranks, rank;
  const char* src;
  char* dst;
  size_t part_off, part_count; /* elements of this channel's part */
  size_t chunk;                /* elements per step */
  int nstreams;
  uint64_t pc[2], npc[2];
  int down_after_up;           /* stream 1 step i needs stream 0 past step i (tree root) */
  weft_algo alg;               /* what the steps depend on (algo.h) */
  weft_ring ring;
  weft_tree tree;
  /* Connections by role (NULL: unused), as algo.h lists them: ring and p2p [0] receive from
   * prev/peer, [1] send to next/peer; tree [0] up, [1..3] from children, [4] from up, [5..7] to
   * children; direct [d-1] from and [8+d-1] to the rank d places on. */
  weft_conn* conns[WEFT_WORK_MAX_CONNS];
  weft_conn_key keys[WEFT_WORK_MAX_CONNS];
  uint64_t tickets[WEFT_WORK_MAX_CONNS];
  /* executor state */
  uint32_t ll_ready[WEFT_WORK_MAX_CONNS]; /* LL lines of the current step seen complete */
  int blocked;                            /* conn index the last attempt waited for */
  uint32_t sig_done;                      /* conns whose first step (signature) is done */
  uint64_t idle_since_ms;
  void* prof_ch; /* profiler: the KernelCh event of this channel's share, or NULL */
  /* CollNet: the net collective (NULL: none), this item's turn on it (the items of every
   * communicator's launches take turns in op order, so every leader calls the plugin in the
   * same order), net steps done, and the request in flight with its buffer's registration. */
  weft_netcoll* netcoll;
  uint64_t net_ticket, net_steps;
  void *net_req, *net_mh;
  ncclResult_t result;
} weft_work;

/* How an executor reports a finished work item (res != ncclSuccess: it failed). Called once per
 * work item, from the executor's own thread. */
typedef void (*weft_work_done_fn)(weft_work* w, ncclResult_t res);

/* Step pc of stream s: fills *p and returns 1, or 0 when pc is past the end. */
static inline int work_prim(const weft_work* w, int stream, uint64_t pc, weft_prim* p) {
  return algo_prim(&w->alg, stream, pc, p);
}

#endif
