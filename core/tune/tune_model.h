/* The cost model: predicted time of one collective for each (algorithm, protocol), from what
 * the communicator found about its topology. Pure: no I/O, no allocation, calls only util/log.
 *
 *   time(µs) = latency(algo, proto, topology) · latCount + wire_bytes / bandwidth(...)
 *
 * Two parameter sets share that shape:
 *  - device (GPUs): NCCL's model (src/graph/tuning.cc) over ncclTunerConstants_v5_t — base and
 *    per-link latencies, per-architecture bandwidth caps — and the link bandwidths of the topology;
 *  - host (the CPU executor): the same latency table, holding constants measured with weft-perf
 *    on the host data path (docs/tuning.md, "Host calibration"), plus host bandwidths per link
 *    and protocol with a cache knee (the working set leaving the cache roughly halves them).
 * Either way the latencies of NCCL's algorithms live in the ABI's constants struct, so a v5
 * tuner plugin may rewrite them at init and the model uses what it left. weft's direct
 * algorithms (OneShot, TwoShot: tune_model_direct.c) have no row there; their constants are
 * weft's (weft_tune_direct), derived from the Ring row of the same link. */
#ifndef WEFT_TUNE_MODEL_H
#define WEFT_TUNE_MODEL_H

#include <stddef.h>
#include "nccl_tuner.h"
#include "tune/algo_proto.h"

/* How two ranks of the communicator are connected. */
enum {
  TUNE_LINK_SHM = 0,    /* host: shared memory on one node */
  TUNE_LINK_NET = 1,    /* host or device: through the net plugin */
  TUNE_LINK_NVLINK = 2, /* device: NVLink (or NVSwitch) */
  TUNE_LINK_PCI = 3,    /* device: PCIe peer-to-peer or through host memory */
  TUNE_NLINKS = 4
};

typedef struct {
  int nranks, nnodes;
  int ppn_min, ppn_max; /* ranks per node */
  int host;             /* 1: host executor, 0: device executor */
  int intra_link;       /* TUNE_LINK_*: ranks of one node (SHM or NET on host) */
  int net_socket;       /* the inter-node (or shm-less) net is the TCP socket plugin */
  int max_channels;     /* channels the communicator has (>= 1) */
  int cores_per_rank;   /* host: online CPUs / ranks on this node, at least 1 */
  double oversub;       /* host: ranks on this node per online CPU, at least 1 (2: twice as
                         * many ranks as cores, each step then waits for a context switch) */
  int compcap_idx;      /* device: NCCL_*_COMPCAP_IDX */
  double bw_intra;      /* device: GB/s a GPU moves inside its node over all channels */
  double bw_inter;      /* device: GB/s a GPU moves to other nodes over all channels */
  int collnet_ppn;      /* host: CollNet usable, ranks host-major with this many per node (>= 1);
                         * 0: no CollNet (its row stays unusable) */
} weft_tune_facts;

/* Host bandwidths (GB/s per channel) by link (SHM, NET), algorithm (Tree, Ring) and protocol,
 * for a working set inside and beyond the cache, and where that knee lies (bytes); the extra
 * step latency per extra rank per core when ranks outnumber cores. */
typedef struct {
  double bw_hot[2][2][NCCL_NUM_PROTOCOLS];
  double bw_cold[2][2][NCCL_NUM_PROTOCOLS];
  double knee_bytes;
  double oversub_hop; /* step latency × (1 + oversub_hop · (oversub - 1)) */
} weft_tune_host_bw;

typedef struct {
  weft_tune_facts f;
  ncclTunerConstants_v5_t k;
  weft_tune_host_bw hb;
  /* OneShot/TwoShot: a direct step costs step_scale × the ring's hop, plus peer_hop × that hop
   * per extra peer it touches (tune_model_direct.c). */
  double direct_step_scale, direct_peer_hop;
  /* Derived at init, per collective × algorithm × protocol: latency (µs, < 0: unusable) and the
   * factor from nbytes to the bytes each rank puts on its busiest link. */
  double lat[WEFT_NUM_COLL_FUNCS][WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double wire[WEFT_NUM_COLL_FUNCS][WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  /* device: algorithm bandwidth (GB/s) at max_channels; host: unused */
  double bw[WEFT_NUM_COLL_FUNCS][WEFT_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
} weft_tune_model;

/* The constants a model starts from for these facts: NCCL's published defaults for the device,
 * the measured host constants for the host (tune_constants.c). */
void tune_constants_default(const weft_tune_facts* f, ncclTunerConstants_v5_t* k);
void tune_host_bw_default(const weft_tune_facts* f, weft_tune_host_bw* hb);

/* Derive the tables from facts and constants (k as a v5 tuner may have left it). */
void tune_model_init(weft_tune_model* m, const weft_tune_facts* f,
                     const ncclTunerConstants_v5_t* k, const weft_tune_host_bw* hb);

/* Which algorithms can run func at all (NCCL's applicability) and which protocols algo
 * implements, independent of any executor. */
unsigned tune_func_algos(ncclFunc_t func);
unsigned tune_algo_protos(int algo);

/* Channels the model gives (func, algo, proto) for nbytes: fewer for small messages (direct
 * algorithms: at most WEFT_DIRECT_MAX_CHANNELS, since each channel connects every pair). */
#define WEFT_DIRECT_MAX_CHANNELS 8
int tune_model_channels(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                        size_t nbytes);

/* Predicted µs for nbytes (the per-rank buffer nccl-tests calls "size"; AllGather and
 * ReduceScatter: the full buffer) on nch channels, numPipeOps ops aggregated; -1 when the
 * model cannot run (func, algo, proto) on these facts. */
double tune_model_time(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                       size_t nbytes, int nch, int pipe_ops);

/* Facts for tests and tools: a topology described by its shape. */
void tune_facts_host(weft_tune_facts* f, int nranks, int nnodes, int shm, int max_channels,
                     int cores_per_rank, double oversub);
void tune_facts_device(weft_tune_facts* f, int nranks, int nnodes, int nvlink, int compcap_idx,
                       int max_channels);

#endif
