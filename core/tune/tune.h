/* Algorithm, protocol and channel choice for each collective: the cost model (tune_model.h)
 * fills NCCL's cost table float[algo][proto] (µs, NCCL_ALGO_PROTO_IGNORE in cells that cannot
 * run: outside NCCL_ALGO/NCCL_PROTO, outside what the executor implements, not applicable to the
 * collective), a tuner plugin (plugin/tuner.h) may lower cells and set a channel count, and the
 * cheapest cell runs. Every rank decides alone, so everything a decision reads is agreed across
 * ranks at init (tune_comm.c). NCCL_DEBUG_SUBSYS=TUNING logs each decision with its table. */
#ifndef WEFT_TUNE_H
#define WEFT_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/tuner.h"
#include "tune/algo_proto.h"
#include "tune/tune_model.h"

struct ncclComm;

/* Defects of a tuner's answer; each is WARNed once per communicator. */
enum {
  TUNE_DEFECT_ERROR = 1u << 0,    /* getCollInfo returned an error */
  TUNE_DEFECT_IGNORED = 1u << 1,  /* it wrote into a cell marked NCCL_ALGO_PROTO_IGNORE */
  TUNE_DEFECT_NAN = 1u << 2,      /* it left a cell that is not a number */
  TUNE_DEFECT_EMPTY = 1u << 3,    /* it marked every usable cell unusable */
  TUNE_DEFECT_CHANNELS = 1u << 4, /* it set a negative channel count */
  TUNE_NOTE_CLAMPED = 1u << 5,    /* not a defect: it asked for more channels than the comm has */
};

/* Per communicator. */
typedef struct weft_tune {
  weft_tune_model model;
  weft_exec_caps caps;   /* what the executor runs; max_channels is the comm's channel count */
  weft_tuner* tuner;     /* NULL: the model alone */
  unsigned warned;       /* TUNE_DEFECT_* bits WARNed already (atomic) */
  int rank;              /* for log lines */
  /* CollNet (host mode, every rank's plugin usable): bit dtype * ncclNumOps + op of each
   * (type, operator) every rank's plugin reduces (sum, prod, max, min only); 0: no CollNet. */
  uint64_t collnet_pairs;
} weft_tune;

/* One decision and what it came from. */
typedef struct {
  int algo, proto, nchannels;
  double predicted_us; /* the model's time for what runs */
  int by_tuner;        /* the tuner's answer changed the model's choice or channel count */
  int tuner_fallback;  /* the tuner's answer was unusable: the model decided */
  int by_default;      /* the executor's own choice stood in for the model's */
  /* The model's costs: NCCL's seven algorithms, then weft's (OneShot, TwoShot). A tuner plugin
   * sees the first NCCL_NUM_ALGORITHMS rows (all of them through weft's extension, plugin/
   * tuner.h); one that edits them picks among them, one that leaves them as they are leaves
   * the whole choice to the model. */
  float table[WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
} weft_decision;

/* Decide for one collective (func Broadcast..AllReduce) of nbytes: the per-rank buffer, or for
 * AllGather/ReduceScatter the full one (nccl-tests' "size"). pipe_ops: ops aggregated with it
 * (NCCL's numPipeOps, 1 alone); reg_buff: buffers registered. quiet: no INFO line (queries).
 * ncclInvalidUsage with a WARN naming the collective and the settings when mask and executor
 * leave nothing; ncclInvalidArgument for a bad func. A tuner never makes it fail. */
ncclResult_t tune_decide(weft_tune* t, const weft_algo_proto_mask* mask, ncclFunc_t func,
                         size_t nbytes, int pipe_ops, int reg_buff, int quiet, weft_decision* out);

/* An executor's own choice, standing in for the model's (device communicators: the rule
 * measured on GPUs, plan/): it runs unless a tuner edits the cost table or sets a channel
 * count. nchannels[p]: the executor's channel count for protocol p (used too when a tuner's
 * edit picks another cell and sets no count). */
typedef struct {
  int algo, proto;
  int nchannels[NCCL_NUM_PROTOCOLS];
} weft_default_choice;

/* tune_decide, with dflt (when its cell is usable) in place of the model's cheapest cell.
 * dflt NULL: exactly tune_decide. The table the tuner sees is the model's either way. */
ncclResult_t tune_decide_from(weft_tune* t, const weft_algo_proto_mask* mask, ncclFunc_t func,
                              size_t nbytes, int pipe_ops, int reg_buff, int quiet,
                              const weft_default_choice* dflt, weft_decision* out);

/* The model alone (no tuner, no log), for tests and tools. */
ncclResult_t tune_choose(const weft_tune_model* m, const weft_algo_proto_mask* mask,
                         const weft_exec_caps* caps, ncclFunc_t func, size_t nbytes,
                         weft_choice* out, double* predicted_us);

/* ---- the choice for one operation (tune_op.c) ---- */
/* What plan/ knows when it asks: the communicator's shape and the NCCL_ALGO/NCCL_PROTO masks. */
typedef struct {
  int rank, nranks;
  int device;        /* device executor (the measured rule stands in for the model) */
  int max_channels;  /* the communicator's agreed channel count */
  int all_p2p;       /* device: every peer is reached peer to peer */
  int launch_blocks; /* device: blocks one launch can hold (0: host) */
  int quiet;         /* no INFO line (queries) */
  const weft_algo_proto_mask* mask;
  /* device: the op's buffers are in zero-copy windows (plan/plan_zc.c; 1: where measured
   * faster, 2: wherever a direct algorithm can, WEFT_ZERO_COPY), and whether it runs in place:
   * a direct algorithm may then read the peers' buffers instead of copying. */
  int zero_copy, in_place;
  /* The op's datatype and operator (ncclDataType_t, ncclRedOp_t; -1: not known): CollNet runs
   * only what the plugin reduces, else the choice falls back with an INFO line. */
  int dtype, redop;
} weft_tune_ask;

typedef struct {
  int algo, proto;
  int nchannels;       /* 0: nothing to move (an empty operation) */
  double predicted_us; /* the model's time (0 where the rule decided alone) */
  int zero_copy;       /* the direct algorithm reads the peers' windows (ask.zero_copy) */
} weft_op_choice;

/* Algorithm, protocol and channels for func (a collective, Send or Recv) of nbytes (collectives:
 * as tune_decide counts them; p2p: the bytes of the transfer). t may be NULL (no model). */
ncclResult_t tune_op(weft_tune* t, const weft_tune_ask* a, int func, size_t nbytes,
                     weft_op_choice* out);
/* The cost model's time (µs) for func of nbytes run as algo/proto on nchannels (what tune_op
 * chose): where the model cannot price that cell (the device rule's choice outside the model's
 * rows), the model's cheapest cell for func under mask. 0 for t NULL, a point-to-point func or
 * nothing usable. ncclGroupSimulateEnd's estimate (group/). */
double tune_estimate_us(const weft_tune* t, const weft_algo_proto_mask* mask, int func,
                        size_t nbytes, int algo, int proto, int nchannels);
/* Bytes of payload one step of proto carries in a FIFO slot of step_bytes (host_signature: the
 * host executor's first step leads with the op's signature): the chunk of every algorithm. */
size_t tune_chunk_bytes(int proto, size_t step_bytes, int host_signature);
/* The device rule alone (tune_decide_from's default on device communicators). */
ncclResult_t tune_device_rule(const weft_tune_ask* a, int func, size_t nbytes,
                              weft_default_choice* r);

/* Communicator hooks (tune_comm.c): after the data path is up, gather and agree on the facts
 * (host: cores, shared memory; device: NVLink, compute capability), open the tuner, derive the
 * model; at free, close the tuner. */
ncclResult_t tune_comm_init(struct ncclComm* comm, int nchannels);
void tune_comm_fini(struct ncclComm* comm);

#endif
