/* The data path of a communicator: what init sets up after bootstrap (agreed channel count and
 * buffer sizes, the net plugin context, the connection table, the executor) and what free
 * tears down. Connections themselves are made lazily, by the first operation that needs each
 * (plan/), so an init costs no shared memory and no network connections. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "device/device.h" /* launch limits (plain C, also without CUDA) */
#include "lifecycle/lifecycle.h"
#ifdef WEFT_HAVE_CUDA
#include "device/device_exec.h"
#endif
#include "host/host.h"
#include "rma/rma.h"
#include "plan/plan.h"
#include "plugin/kind.h"
#include "plugin/net.h"
#include "proxy/proxy.h"
#include "util/cpus.h"
#include "transport/transport.h"
#include "util/check.h"
#include "util/param.h"
#include "util/names.h"

/* Host channels by default: enough to keep each rank's cores busy copying, at most 2 (more
 * worker threads than cores only adds switching; tests run 8 ranks on 2 cores). */
#define HOST_DEFAULT_MAX_CHANNELS 2

typedef struct {
  int32_t nchannels;
  int32_t shm_disable;
  uint64_t buffsize;
  uint64_t ll_buffsize;
  int32_t ll128_ok; /* device mode: every peer peer-to-peer (LL128 needs NVLink/P2P) */
  int32_t launch_blocks; /* device mode: blocks one launch may use (0: host mode) */
} dp_proposal;

static int local_ranks(const struct ncclComm* comm) {
  int n = 0;
  const weft_rank_info* me = &comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks; r++)
    if (comm_same_host(&comm->peers[r], me)) n++;
  return n;
}

#ifdef WEFT_HAVE_CUDA
/* Device mode: ranks of this communicator on this rank's GPU (the same host and GPU UUID). */
static int gpu_sharers(const struct ncclComm* comm) {
  int n = 0;
  const weft_rank_info* me = &comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks; r++) {
    const weft_rank_info* o = &comm->peers[r];
    if (comm_same_host(o, me) && memcmp(o->p2p.uuid, me->p2p.uuid, sizeof o->p2p.uuid) == 0)
      n++;
  }
  return n > 0 ? n : 1;
}
#endif

/* Device mode: the blocks one launch of this rank may use. Ranks sharing one GPU (weft allows
 * it) spin in their kernels until their peers' blocks run, so all of theirs must be resident
 * at once: each gets its share of the GPU's resident blocks. */
static int propose_launch_blocks(const struct ncclComm* comm) {
  int cap = WEFT_DEV_MAX_BLOCKS;
#ifdef WEFT_HAVE_CUDA
  int sharers = gpu_sharers(comm);
  int resident = sharers > 1 ? device_resident_blocks(comm->cuda_dev) : 0;
  if (resident > 0 && resident / sharers < cap) cap = resident / sharers;
  if (cap < 1) cap = 1;
  if (sharers > 1 && cap < WEFT_DEV_MAX_BLOCKS)
    INFO(NCCL_INIT, "rank %d: %d ranks share GPU %d (%d resident blocks): at most %d blocks per "
         "launch", comm->rank, sharers, comm->cuda_dev, resident, cap);
#else
  (void)comm;
#endif
  return cap;
}

static int propose_channels(const struct ncclComm* comm, int launch_blocks) {
  int nch;
  if (comm->mode == WEFT_MODE_DEVICE) {
#ifdef WEFT_HAVE_CUDA
    nch = device_default_channels(); /* one block each: enough to fill NVLink */
#else
    nch = 1;
#endif
  } else {
    long ncpu = weft_usable_cpus();
    int local = local_ranks(comm);
    nch = ncpu > 0 ? (int)(ncpu / (local > 0 ? local : 1)) : 1;
    if (nch > HOST_DEFAULT_MAX_CHANNELS) nch = HOST_DEFAULT_MAX_CHANNELS;
    if (nch < 1) nch = 1;
  }
  if (param_is_set(WEFT_PARAM_MIN_NCHANNELS) && nch < (int)param_int(WEFT_PARAM_MIN_NCHANNELS))
    nch = (int)param_int(WEFT_PARAM_MIN_NCHANNELS);
  if (param_is_set(WEFT_PARAM_MAX_NCHANNELS) && nch > (int)param_int(WEFT_PARAM_MAX_NCHANNELS))
    nch = (int)param_int(WEFT_PARAM_MAX_NCHANNELS);
  if (comm->config.minCTAs > 0 && nch < comm->config.minCTAs) nch = comm->config.minCTAs;
  if (comm->config.maxCTAs > 0 && nch > comm->config.maxCTAs) nch = comm->config.maxCTAs;
  if (nch > WEFT_MAX_CHANNELS) nch = WEFT_MAX_CHANNELS;
  /* Last, over the settings above: more blocks than fit beside the GPU's other ranks hang. */
  if (launch_blocks > 0 && nch > launch_blocks) nch = launch_blocks;
  return nch < 1 ? 1 : nch;
}

/* transport/'s net_start hook: the proxy starts with the first net connection. A connection
 * failure it sees where no operation will (device mode) fails the communicator. Connections are
 * made from one thread at a time (transport_connect's rule), so the proxy is created once. */
static ncclResult_t datapath_net_start(struct ncclComm* comm, weft_conn* conn, void* net_comm,
                                       void* mhandle, int flush) {
  if (comm->proxy == NULL)
    WEFT_CHECK(proxy_create(comm, comm->net, (int)transport_capacity(comm), comm_datapath_broken,
                            &comm->proxy));
  return proxy_add_conn(comm->proxy, conn, net_comm, mhandle, flush);
}

ncclResult_t comm_datapath_init(struct ncclComm* comm) {
#ifndef WEFT_HAVE_CUDA
  if (comm->mode != WEFT_MODE_HOST) return ncclSuccess; /* built without kernels: enqueue says so */
#endif
  dp_proposal* all = calloc((size_t)comm->nranks, sizeof *all);
  if (!all) {
    WARN("rank %d: out of memory agreeing on the data path", comm->rank);
    return ncclSystemError;
  }
  dp_proposal* mine = &all[comm->rank];
  mine->launch_blocks = comm->mode == WEFT_MODE_DEVICE ? propose_launch_blocks(comm) : 0;
  mine->nchannels = propose_channels(comm, mine->launch_blocks);
  mine->shm_disable = (int32_t)param_int(WEFT_PARAM_SHM_DISABLE);
  mine->ll128_ok = transport_all_p2p(comm);
  mine->buffsize = (uint64_t)param_int(WEFT_PARAM_BUFFSIZE);
  mine->ll_buffsize = (uint64_t)param_int(WEFT_PARAM_LL_BUFFSIZE);
  ncclResult_t res = ncclSuccess;
  if (comm->nranks > 1)
    WEFT_CHECK_GOTO(bootstrap_allgather(comm->bootstrap, all, sizeof *all), res, out);
  /* The smallest proposal wins: every rank must cut data into the same steps. */
  weft_transport_params tp = {mine->nchannels, (size_t)mine->buffsize, (size_t)mine->ll_buffsize,
                              mine->shm_disable, datapath_net_start};
  int launch_blocks = mine->launch_blocks; /* both ends of a transfer must split it alike */
  for (int r = 0; r < comm->nranks; r++) {
    if (all[r].nchannels < tp.nchannels) tp.nchannels = all[r].nchannels;
    if (all[r].launch_blocks < launch_blocks) launch_blocks = all[r].launch_blocks;
    if (all[r].buffsize < tp.buffsize) tp.buffsize = (size_t)all[r].buffsize;
    if (all[r].ll_buffsize < tp.ll_buffsize) tp.ll_buffsize = (size_t)all[r].ll_buffsize;
    if (all[r].shm_disable) tp.shm_disable = 1;
    if (!all[r].ll128_ok) mine->ll128_ok = 0;
  }
  if (tp.nchannels < 1 || tp.nchannels > WEFT_MAX_CHANNELS || tp.buffsize < 65536 ||
      tp.ll_buffsize < 4096) {
    WARN("rank %d: ranks disagree beyond repair on channels/buffer sizes (%d, %zu, %zu)",
         comm->rank, tp.nchannels, tp.buffsize, tp.ll_buffsize);
    res = ncclInternalError;
    goto out;
  }
  WEFT_CHECK_GOTO(plan_comm_init(comm, tp.nchannels, launch_blocks), res, out);
#ifdef WEFT_HAVE_CUDA
  if (comm->mode == WEFT_MODE_DEVICE) {
    /* Only what the kernels implement; a forced protocol they lack falls back to Simple. */
    for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) {
      unsigned want = comm->plan->mask.proto[f];
      comm->plan->mask.proto[f] &= device_protocols(mine->ll128_ok);
      if (comm->plan->mask.proto[f] == 0) {
        if (f == 0 && comm->rank == 0)
          INFO(NCCL_INIT | NCCL_TUNING, "NCCL_PROTO allows only protocols the device executor "
               "lacks (mask 0x%x); using Simple", want);
        comm->plan->mask.proto[f] = 1u << NCCL_PROTO_SIMPLE;
      }
    }
  }
#endif
  if (comm->nranks > 1 && comm->net == NULL)
    WEFT_CHECK_GOTO(net_open_for_comm(comm->config.netName, comm->comm_hash,
                                      comm->config.trafficClass, &comm->net),
                    res, out);
  WEFT_CHECK_GOTO(transport_init(comm, &tp), res, out);
#ifdef WEFT_HAVE_CUDA
  if (comm->mode == WEFT_MODE_DEVICE) {
    WEFT_CHECK_GOTO(device_exec_create(comm, launch_blocks, &comm->device), res, out);
    INFO(NCCL_INIT, "rank %d: device data path on cuda device %d: %d channel(s), Simple %zu B / "
         "LL %zu B per connection, shm %s, net %s",
         comm->rank, comm->cuda_dev, tp.nchannels, tp.buffsize, tp.ll_buffsize,
         tp.shm_disable ? "off" : "on", comm->net ? comm->net->name : "none");
    goto out;
  }
#endif
  if (comm->nranks > 1 && comm->config.collnetEnable) {
    /* CollNet sits in the net library (NCCL's rule); tune/ agrees whether every rank has it. */
    char net_lib[PATH_MAX];
    if (!net_external_library(net_lib, sizeof net_lib)) net_lib[0] = '\0';
    WEFT_CHECK_GOTO(kind_plugin_open(WEFT_KIND_COLLNET, net_lib[0] ? net_lib : NULL,
                                     comm->comm_hash, &comm->collnet),
                    res, out);
    WEFT_CHECK_GOTO(plan_collnet_init(comm), res, out);
  }
  size_t ll_payload = conn_payload_max(tp.ll_buffsize / WEFT_NSTEPS, 1);
  WEFT_CHECK_GOTO(host_exec_create(comm, tp.nchannels, ll_payload, plan_work_done, &comm->host), res, out);
  INFO(NCCL_INIT, "rank %d: host data path: %d channel(s), Simple %zu B / LL %zu B per "
       "connection, shm %s, net %s",
       comm->rank, tp.nchannels, tp.buffsize, tp.ll_buffsize, tp.shm_disable ? "off" : "on",
       comm->net ? comm->net->name : "none");
out:
  free(all);
  return res;
}

ncclResult_t comm_datapath_quiesce(struct ncclComm* comm) {
  /* After an abort or a failure nothing in flight is worth waiting for. */
  if (!comm->proxy || __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) ||
      __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE) == WEFT_COMM_FAILED)
    return ncclSuccess;
  return proxy_drain(comm->proxy, (int)param_int(WEFT_PARAM_TIMEOUT_MS));
}

/* Bound on waiting for another thread's launch to leave the comm during an abort. */
#define ABORT_WAIT_MS 2000

void comm_datapath_fini(struct ncclComm* comm) {
  /* Another thread's operation (possible only with abort, whose flag makes the workers fail
   * everything at once) must leave the comm before anything is freed. */
  if (!plan_wait_idle(comm, ABORT_WAIT_MS))
    WARN("rank %d: a thread is still inside an operation on comm %p being freed", comm->rank,
         (void*)comm);
  host_exec_destroy(comm->host);
  comm->host = NULL;
#ifdef WEFT_HAVE_CUDA
  /* Kernels may still use the connections (and wait on the proxy for net ones): they finish,
   * or stop after an abort, first; the executor is freed once the proxy, which may stop
   * kernels when a connection fails, and the connections are gone. */
  int aborting = __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) != 0;
  device_exec_wait_idle(comm, comm->device, aborting);
#endif
  /* After the kernels (a wait kernel reads its counters), before the connections close (the
   * rma thread reads the one-sided FIFOs). */
  rma_fini(comm);
  if (comm->proxy) {
    comm_datapath_quiesce(comm);
    proxy_stop(comm->proxy);
  }
  transport_fini(comm); /* before the net: closing net comms needs the plugin */
  /* After the net comms are closed: a plugin ends its NetPlugin events there, before the proxy
   * ends their ProxyStep parents. */
  proxy_destroy(comm->proxy);
  comm->proxy = NULL;
#ifdef WEFT_HAVE_CUDA
  /* Last: its cudaFreeHost may wait for other communicators' kernels in this process, which
   * the connections closed above release. */
  device_exec_destroy(comm, comm->device, aborting);
  comm->device = NULL;
#endif
  plan_comm_fini(comm); /* closes the CollNet group before its plugin */
  kind_plugin_close(comm->collnet);
  comm->collnet = NULL;
  net_close_for_comm(comm->net);
  comm->net = NULL;
}

void comm_datapath_broken(struct ncclComm* comm, ncclResult_t res, int peer, const char* what) {
  int ok = ncclSuccess;
  if (__atomic_compare_exchange_n(&comm->async_error, &ok, (int)res, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_RELAXED))
    WARN("rank %d: %s (rank %d) failed: %s; the communicator has failed", comm->rank, what, peer,
         weft_result_str(res));
  __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
#ifdef WEFT_HAVE_CUDA
  device_exec_stop(comm->device); /* kernels waiting on the connection give up */
#endif
}
