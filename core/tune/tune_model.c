/* The cost model's common part: which (algorithm, protocol) can run a collective, the facts of
 * representative topologies, channel counts, and the predicted time from the derived tables
 * (tune_model_host.c and tune_model_device.c fill them). */
#include "tune/tune_model.h"

#include <math.h>
#include <string.h>

#include "tune/tune_model_impl.h"

unsigned tune_func_algos(ncclFunc_t func) {
  const unsigned ring = 1u << NCCL_ALGO_RING, one = 1u << WEFT_ALGO_ONESHOT_ID;
  const unsigned log_ar = (1u << WEFT_ALGO_RECDOUBLING_ID) | (1u << WEFT_ALGO_RABENSEIFNER_ID);
  switch (func) {
    case ncclFuncAllReduce:
      return ring | (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_COLLNET_DIRECT) |
             (1u << NCCL_ALGO_COLLNET_CHAIN) | (1u << NCCL_ALGO_NVLS) |
             (1u << NCCL_ALGO_NVLS_TREE) | one | (1u << WEFT_ALGO_TWOSHOT_ID) | log_ar;
    case ncclFuncAllGather:
    case ncclFuncReduceScatter:
      return ring | (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_NVLS) |
             (1u << NCCL_ALGO_PAT) | one;
    case ncclFuncBroadcast:
    case ncclFuncReduce:
      return ring | one | (1u << WEFT_ALGO_BINOMIAL_ID);
    default:
      return 0;
  }
}

unsigned tune_algo_protos(int algo) {
  if (algo == NCCL_ALGO_RING || algo == NCCL_ALGO_TREE || tune_is_direct(algo) ||
      tune_is_log(algo))
    return (1u << NCCL_NUM_PROTOCOLS) - 1;
  return 1u << NCCL_PROTO_SIMPLE;
}

void tune_facts_host(weft_tune_facts* f, int nranks, int nnodes, int shm, int max_channels,
                     int cores_per_rank, double oversub) {
  memset(f, 0, sizeof *f);
  f->nranks = nranks < 1 ? 1 : nranks;
  f->nnodes = nnodes < 1 ? 1 : nnodes > f->nranks ? f->nranks : nnodes;
  f->ppn_min = f->ppn_max = (f->nranks + f->nnodes - 1) / f->nnodes;
  f->host = 1;
  f->intra_link = shm ? TUNE_LINK_SHM : TUNE_LINK_NET;
  f->net_socket = 1;
  f->max_channels = max_channels < 1 ? 1 : max_channels;
  f->cores_per_rank = cores_per_rank < 1 ? 1 : cores_per_rank;
  f->oversub = oversub < 1 ? 1 : oversub;
}

void tune_facts_device(weft_tune_facts* f, int nranks, int nnodes, int nvlink, int compcap_idx,
                       int max_channels) {
  memset(f, 0, sizeof *f);
  f->nranks = nranks < 1 ? 1 : nranks;
  f->nnodes = nnodes < 1 ? 1 : nnodes > f->nranks ? f->nranks : nnodes;
  f->ppn_min = f->ppn_max = (f->nranks + f->nnodes - 1) / f->nnodes;
  f->intra_link = nvlink ? TUNE_LINK_NVLINK : TUNE_LINK_PCI;
  f->max_channels = max_channels < 1 ? 1 : max_channels;
  f->cores_per_rank = 1;
  f->oversub = 1;
  f->compcap_idx = compcap_idx < 0 ? 0 : compcap_idx >= NCCL_NUM_COMPCAPS ? NCCL_NUM_COMPCAPS - 1
                                                                            : compcap_idx;
  /* NVLink links per GPU × GB/s per link (NCCL's per-link figures: 20 sm70/sm80, 20.6 sm90,
   * 40.1 sm100), PCIe 12 GB/s; between nodes one 200 Gb/s NIC per GPU. */
  static const double nvl_total[NCCL_NUM_COMPCAPS] = {6 * 20.0, 12 * 20.0, 18 * 20.6, 18 * 40.1};
  f->bw_intra = nvlink ? nvl_total[f->compcap_idx] : 12.0;
  f->bw_inter = 25.0;
}

void tune_model_init(weft_tune_model* m, const weft_tune_facts* f,
                     const ncclTunerConstants_v5_t* k, const weft_tune_host_bw* hb) {
  memset(m, 0, sizeof *m);
  m->f = *f;
  m->k = *k;
  if (hb) m->hb = *hb;
  for (int fn = 0; fn < WEFT_NUM_COLL_FUNCS; fn++)
    for (int a = 0; a < WEFT_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) m->lat[fn][a][p] = -1;
  if (f->host)
    tune_model_init_host(m);
  else
    tune_model_init_device(m);
  tune_model_init_direct(m);
  tune_model_init_log(m);
  tune_model_init_collnet(m);
}

/* Bytes below which a channel is not worth its start-up, per protocol (device: NCCL's per-thread
 * thresholds × threads; host: a worker hand-off costs microseconds, worth it from 256 KiB). */
static size_t min_bytes_per_channel(const weft_tune_model* m, int proto) {
  if (m->f.host) return 256u << 10;
  static const size_t dev[NCCL_NUM_PROTOCOLS] = {8 * 512, 8 * 640, 64 * 512};
  return dev[proto];
}

int tune_model_channels(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                        size_t nbytes) {
  (void)func;
  if (algo == NCCL_ALGO_COLLNET_CHAIN) return 1; /* one CollNet group, one channel */
  int max = m->f.max_channels < 1 ? 1 : m->f.max_channels;
  if ((tune_is_direct(algo) || tune_is_log(algo)) && max > WEFT_DIRECT_MAX_CHANNELS)
    max = WEFT_DIRECT_MAX_CHANNELS;
  if (proto < 0 || proto >= NCCL_NUM_PROTOCOLS) return 1;
  size_t per = min_bytes_per_channel(m, proto);
  size_t want = nbytes / per;
  return want < 1 ? 1 : want > (size_t)max ? max : (int)want;
}

double tune_model_time(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                       size_t nbytes, int nch, int pipe_ops) {
  if ((int)func < 0 || (int)func >= WEFT_NUM_COLL_FUNCS || algo < 0 ||
      algo >= WEFT_NUM_ALGORITHMS || proto < 0 || proto >= NCCL_NUM_PROTOCOLS)
    return -1;
  double lat = m->lat[func][algo][proto];
  if (lat < 0) return -1;
  if (nch < 1) nch = 1;
  if (pipe_ops < 1) pipe_ops = 1;
  /* NCCL: a ring pays its latency per aggregated op, the others once per 10. */
  double lat_count =
      algo == NCCL_ALGO_RING || tune_is_direct(algo) || tune_is_log(algo) ? pipe_ops
                                                                          : ceil(pipe_ops / 10.0);
  if (m->f.nranks == 1) return lat * lat_count; /* nothing moves */
  double bytes = (double)nbytes * m->wire[func][algo][proto];
  return lat * lat_count + (m->f.host ? tune_host_xfer_us(m, func, algo, proto, bytes, nch)
                                      : tune_device_xfer_us(m, func, algo, proto, bytes, nch));
}
