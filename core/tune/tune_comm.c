/* A communicator's tuning state: the topology facts, agreed across ranks, the tuner plugin and
 * the model derived from both.
 *
 * Every rank decides each collective alone, so two ranks that read different facts (a CPU
 * count, NCCL_SHM_DISABLE set on one host only, a tuner found on one node only, a v5 tuner that
 * rewrote the constants differently) would run different algorithms and hang. Init therefore
 * exchanges what the decisions read and agrees: shared memory off if any rank has it off, the
 * fewest cores per rank, the socket net if any rank uses it; and the tuner (its name, version
 * and the constants it left) must be the same everywhere, else every rank drops it with one
 * WARN naming the ranks that differ, and the model decides alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "comm/comm.h"
#include "plugin/kind.h"
#include "plugin/net.h"
#include "transport/transport.h"
#include "tune/tune.h"
#include "util/check.h"
#include "util/cpus.h"
#include "util/param.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

typedef struct {
  int32_t compcap_idx; /* device: NCCL_*_COMPCAP_IDX of this rank's GPU */
  int32_t shm_disable;
  int32_t cores_per_rank;
  int32_t oversub_pct; /* ranks per core × 100 */
  int32_t net_socket;
  int32_t tuner_version; /* 0: none */
  uint64_t tuner_hash;   /* name and constants */
  uint64_t collnet_pairs; /* CollNet: the (type, operator) pairs this rank's plugin reduces */
  char tuner_name[32];   /* for the message when ranks differ */
} tune_proposal;

static uint64_t fnv(const void* p, size_t n, uint64_t h) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Nodes, ranks per node (min, max) and this rank's node-local count from the rank infos. */
static void count_nodes(const struct ncclComm* comm, weft_tune_facts* f, int* local) {
  int n = comm->nranks, nodes = 0, pmin = n, pmax = 0;
  for (int r = 0; r < n; r++) {
    int first = 1, count = 0;
    for (int q = 0; q < n; q++) {
      if (!comm_same_host(&comm->peers[q], &comm->peers[r])) continue;
      if (q < r) first = 0;
      count++;
    }
    if (r == comm->rank) *local = count;
    if (!first) continue;
    nodes++;
    if (count < pmin) pmin = count;
    if (count > pmax) pmax = count;
  }
  f->nnodes = nodes;
  f->ppn_min = pmin;
  f->ppn_max = pmax;
}

static void nvl_info(const weft_tune_facts* f, ncclNvlDomainInfo_v5_t* nvl) {
  /* A node is the NVLink domain (host: its shared memory plays that part); the tuner reads the
   * communicator's shape from it. */
  nvl->nNvlDomains = f->nnodes;
  nvl->minRanksPerNvlDomain = f->ppn_min;
  nvl->maxRanksPerNvlDomain = f->ppn_max;
}

static uint64_t tuner_hash(const weft_tuner* tu, const ncclTunerConstants_v5_t* k) {
  if (tu == NULL) return 0;
  uint64_t h = fnv(tu->name, strlen(tu->name), 0xcbf29ce484222325ull);
  return fnv(k, sizeof *k, h);
}

/* Agree on the proposals; returns 0 when every rank has the same tuner and constants. */
static int agree(struct ncclComm* comm, const tune_proposal* all, weft_tune_facts* f) {
  int same_tuner = 1, odd = -1;
  for (int r = 0; r < comm->nranks; r++) {
    if (f->host && all[r].shm_disable) f->intra_link = TUNE_LINK_NET;
    if (!f->host && all[r].compcap_idx < f->compcap_idx) f->compcap_idx = all[r].compcap_idx;
    if (all[r].cores_per_rank < f->cores_per_rank) f->cores_per_rank = all[r].cores_per_rank;
    if (all[r].oversub_pct / 100.0 > f->oversub) f->oversub = all[r].oversub_pct / 100.0;
    if (all[r].net_socket) f->net_socket = 1;
    if (all[r].tuner_version != all[0].tuner_version || all[r].tuner_hash != all[0].tuner_hash) {
      same_tuner = 0;
      if (odd < 0) odd = r;
    }
  }
  if (!same_tuner && comm->rank == 0) {
    char a[48], b[48];
    snprintf(a, sizeof a, "%.31s v%d", all[0].tuner_name, (int)all[0].tuner_version);
    snprintf(b, sizeof b, "%.31s v%d", all[odd].tuner_name, (int)all[odd].tuner_version);
    WARN("TUNER: ranks disagree on the tuner: rank 0 uses %s, rank %d uses %s (or the constants "
         "it set differ); every rank must decide alike, so weft's model decides alone on this "
         "communicator",
         all[0].tuner_version ? a : "none", odd, all[odd].tuner_version ? b : "none");
  }
  return same_tuner ? 0 : -1;
}

/* NCCL's compute-capability row of this rank's GPU (Volta 0 .. Blackwell 3). */
static int compcap_idx(const struct ncclComm* comm) {
  int major = 9;
#ifdef WEFT_HAVE_CUDA
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm->cuda_dev) !=
      cudaSuccess) {
    cudaGetLastError();
    major = 9;
  }
#else
  (void)comm;
#endif
  return major <= 7 ? 0 : major == 8 ? 1 : major == 9 ? 2 : 3;
}

/* The built-in socket net ("Socket") or weft's socket plugin library ("weft-socket"). */
static int net_is_socket(const struct ncclComm* comm) {
  return comm->net == NULL || strcasecmp(comm->net->name, "Socket") == 0 ||
         strcasecmp(comm->net->name, "weft-socket") == 0;
}

/* The (type, operator) pairs this rank's CollNet plugin reduces on host memory, as the bits of
 * weft_tune.collnet_pairs: sum, prod, max and min (the operators with neither pre nor post,
 * algo/algo_collnet.h); 0 without a plugin, on the device executor, or when its device 0 does
 * not take host pointers. */
static uint64_t collnet_local_pairs(const struct ncclComm* comm) {
  const weft_kind_plugin* cn = comm->collnet;
  if (cn == NULL || comm->mode != WEFT_MODE_HOST) return 0;
  int ptr = 0;
  ncclResult_t r = collnet_shim_ptr_support(&cn->collnet, 0, &ptr);
  if (r != ncclSuccess || !(ptr & NCCL_PTR_HOST)) {
    INFO(NCCL_INIT | NCCL_TUNING, "rank %d: CollNet/Plugin %s: device 0 %s; CollNet not used",
         comm->rank, cn->name,
         r != ncclSuccess ? "getProperties failed" : "does not take host memory");
    return 0;
  }
  uint64_t pairs = 0;
  for (int t = 0; t < ncclNumTypes; t++)
    for (int op = ncclSum; op <= ncclMin; op++) {
      int ok = 0;
      if (collnet_shim_reduce_support(&cn->collnet, (ncclDataType_t)t, (ncclRedOp_t)op, &ok) ==
              ncclSuccess &&
          ok)
        pairs |= 1ull << (t * ncclNumOps + op);
    }
  return pairs;
}

/* CollNet usable on the communicator: every rank's plugin reduces some pair, and the ranks are
 * host-major over two or more hosts (the leaders' group). Sets t->collnet_pairs and
 * f->collnet_ppn; one INFO line says why not where collnetEnable asked for it. */
static void collnet_agree(const struct ncclComm* comm, const tune_proposal* all, weft_tune* t,
                          weft_tune_facts* f) {
  t->collnet_pairs = 0;
  f->collnet_ppn = 0;
  if (!comm->config.collnetEnable || !f->host || comm->nranks < 2) return;
  uint64_t pairs = ~0ull;
  int missing = -1;
  for (int r = 0; r < comm->nranks; r++) {
    pairs &= all[r].collnet_pairs;
    if (all[r].collnet_pairs == 0 && missing < 0) missing = r;
  }
  int ppn = comm_host_major_ppn(comm->peers, comm->nranks);
  if (missing >= 0 || pairs == 0 || ppn == 0) {
    if (comm->rank == 0 && missing >= 0)
      INFO(NCCL_INIT | NCCL_TUNING, "CollNet: collnetEnable set but not used: rank %d has no "
           "usable CollNet plugin", missing);
    else if (comm->rank == 0)
      INFO(NCCL_INIT | NCCL_TUNING, "CollNet: collnetEnable set but not used: %s",
           pairs == 0 ? "the ranks' plugins share no (type, operator) pair"
                      : "the ranks are not host-major with the same count on each of two or "
                        "more hosts");
    return;
  }
  t->collnet_pairs = pairs;
  f->collnet_ppn = ppn;
  INFO(NCCL_INIT | NCCL_TUNING, "rank %d: CollNet usable: %d hosts x %d rank(s), %s, pairs 0x%llx",
       comm->rank, comm->nranks / ppn, ppn, comm->collnet ? comm->collnet->name : "?",
       (unsigned long long)pairs);
}

/* This rank's facts before agreement. */
static void local_facts(struct ncclComm* comm, int nchannels, weft_tune_facts* f) {
  int local = 1;
  if (comm->mode == WEFT_MODE_DEVICE) {
    tune_facts_device(f, comm->nranks, 1, transport_all_nvlink(comm), compcap_idx(comm),
                      nchannels);
    count_nodes(comm, f, &local);
    f->net_socket = net_is_socket(comm);
    return;
  }
  long ncpu = weft_usable_cpus();
  tune_facts_host(f, comm->nranks, 1, !param_int(WEFT_PARAM_SHM_DISABLE), nchannels,
                  1, 1.0);
  count_nodes(comm, f, &local);
  f->cores_per_rank = ncpu > local ? (int)(ncpu / local) : 1;
  f->oversub = ncpu > 0 && local > ncpu ? (double)local / (double)ncpu : 1.0;
  f->net_socket = net_is_socket(comm);
}

ncclResult_t tune_comm_init(struct ncclComm* comm, int nchannels) {
  ncclResult_t res = ncclSuccess;
  weft_tune* t = calloc(1, sizeof *t);
  tune_proposal* all = calloc((size_t)comm->nranks, sizeof *all);
  if (!t || !all) {
    WARN("rank %d: out of memory for the tuning state", comm->rank);
    res = ncclSystemError;
    goto fail;
  }
  weft_tune_facts f;
  local_facts(comm, nchannels, &f);

  ncclTunerConstants_v5_t k;
  tune_constants_default(&f, &k);
  ncclNvlDomainInfo_v5_t nvl;
  nvl_info(&f, &nvl);
  WEFT_CHECK_GOTO(tuner_open_for_comm(comm->comm_hash, (size_t)comm->nranks, (size_t)f.nnodes,
                                      &nvl, &k, &t->tuner),
                  res, fail);
  tune_proposal* mine = &all[comm->rank];
  mine->compcap_idx = f.compcap_idx;
  mine->shm_disable = f.intra_link != TUNE_LINK_SHM;
  mine->cores_per_rank = f.cores_per_rank;
  mine->oversub_pct = (int32_t)(f.oversub * 100 + 0.5);
  mine->net_socket = f.net_socket;
  mine->tuner_version = t->tuner ? t->tuner->version : 0;
  mine->tuner_hash = tuner_hash(t->tuner, &k);
  if (t->tuner) snprintf(mine->tuner_name, sizeof mine->tuner_name, "%s", t->tuner->name);
  mine->collnet_pairs = collnet_local_pairs(comm);
  if (comm->nranks > 1)
    WEFT_CHECK_GOTO(bootstrap_allgather(comm->bootstrap, all, sizeof *all), res, fail);
  int mine_cc = f.compcap_idx;
  int differ = agree(comm, all, &f) != 0;
  if (!f.host && f.compcap_idx != mine_cc) {
    /* The oldest GPU of the communicator sets the row (and with it the link bandwidth). */
    int nnodes = f.nnodes, pmin = f.ppn_min, pmax = f.ppn_max, sock = f.net_socket;
    tune_facts_device(&f, comm->nranks, nnodes, f.intra_link == TUNE_LINK_NVLINK,
                      f.compcap_idx, nchannels);
    f.ppn_min = pmin;
    f.ppn_max = pmax;
    f.net_socket = sock;
  }
  if (differ) { /* every rank sees the same hashes: all drop the tuner, or none */
    tuner_close_for_comm(t->tuner);
    t->tuner = NULL;
    tune_constants_default(&f, &k);
  }
  collnet_agree(comm, all, t, &f);
  weft_tune_host_bw hb;
  tune_host_bw_default(&f, &hb);
  tune_model_init(&t->model, &f, &k, &hb);
  /* Device: LL128 too, where the datapath agreed every peer is peer-to-peer (plan's mask). */
  unsigned protos = (1u << NCCL_PROTO_SIMPLE) | (1u << NCCL_PROTO_LL) |
                    (f.host ? 0u : 1u << NCCL_PROTO_LL128);
  /* Both executors run weft's direct algorithms (up to WEFT_DIRECT_MAX_RANKS: the model marks
   * them unusable beyond) and its logarithmic ones (the host up to WEFT_LOG_MAX_RANKS, the
   * device up to WEFT_LOG_DEV_MAX_RANKS: its work item has 16 roles). */
  unsigned log_algos = (1u << WEFT_ALGO_RECDOUBLING_ID) | (1u << WEFT_ALGO_RABENSEIFNER_ID) |
                       (1u << WEFT_ALGO_BINOMIAL_ID) | (1u << NCCL_ALGO_PAT);
  if (f.nranks > (f.host ? WEFT_LOG_MAX_RANKS : WEFT_LOG_DEV_MAX_RANKS)) log_algos = 0;
  t->caps = (weft_exec_caps){(1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_TREE) |
                                 (1u << WEFT_ALGO_ONESHOT_ID) | (1u << WEFT_ALGO_TWOSHOT_ID) |
                                 log_algos | (f.collnet_ppn ? 1u << NCCL_ALGO_COLLNET_CHAIN : 0u),
                             protos, nchannels};
  t->rank = comm->rank;
  if (f.host)
    INFO(NCCL_INIT | NCCL_TUNING,
         "rank %d: tuning: %d ranks on %d node(s) (%d..%d per node), %s, %d channel(s), %d "
         "core(s) per rank, %.2f ranks per core, tuner %s",
         comm->rank, f.nranks, f.nnodes, f.ppn_min, f.ppn_max,
         f.intra_link == TUNE_LINK_SHM ? "shared memory" : "net only", f.max_channels,
         f.cores_per_rank, f.oversub, t->tuner ? t->tuner->name : "none");
  else
    INFO(NCCL_INIT | NCCL_TUNING,
         "rank %d: tuning (GPUs): %d ranks on %d node(s) (%d..%d per node), %s, compute "
         "capability row %d, %d channel(s), tuner %s",
         comm->rank, f.nranks, f.nnodes, f.ppn_min, f.ppn_max,
         f.intra_link == TUNE_LINK_NVLINK ? "NVLink" : "PCIe/host memory", f.compcap_idx,
         f.max_channels, t->tuner ? t->tuner->name : "none");
  free(all);
  comm->tune = t;
  return ncclSuccess;
fail:
  if (t) tuner_close_for_comm(t->tuner);
  free(t);
  free(all);
  return res;
}

void tune_comm_fini(struct ncclComm* comm) {
  weft_tune* t = comm->tune;
  if (t == NULL) return;
  tuner_close_for_comm(t->tuner);
  free(t);
  comm->tune = NULL;
}
