/* Communicator init: allocate the shell, join the bootstrap network, exchange rank info and
 * check that every rank runs the same weft and executor. Blocking inits run on the caller's
 * thread; non-blocking ones on a thread of the communicator that GetAsyncError, destroy or
 * abort reaps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "lifecycle/lifecycle.h"
#include "comm/comm_hang.h"
#include "plan/plan.h"
#include "ras/ras.h"
#include "transport/transport.h"
#include "tune/tune.h"
#include "util/check.h"
#include "util/param.h"

static uint64_t hash_bytes(const void* p, size_t n, uint64_t h) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

ncclResult_t comm_alloc(int nranks, int rank, const ncclConfig_t* config, int cuda_dev,
                        struct ncclComm** out) {
  struct ncclComm* c = calloc(1, sizeof *c);
  if (!c) {
    WARN("rank %d: out of memory allocating a communicator", rank);
    return ncclSystemError;
  }
  c->magic_start = WEFT_COMM_MAGIC_START;
  c->magic_end = WEFT_COMM_MAGIC_END;
  c->rank = rank;
  c->nranks = nranks;
  c->config = *config;
  c->cuda_dev = cuda_dev;
  c->mode = cuda_dev >= 0 ? WEFT_MODE_DEVICE : WEFT_MODE_HOST;
  c->launched_sm_copy_max = (size_t)param_int(WEFT_PARAM_LAUNCHED_SM_COPY_MAX_BYTES);
  c->state = WEFT_COMM_INITIALIZING;
  c->async_error = ncclInProgress;
  if (config->commName) snprintf(c->name, sizeof c->name, "%s", config->commName);
  pthread_mutex_init(&c->lock, NULL);
  ncclResult_t res = comm_registry_add(c);
  if (res != ncclSuccess) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return res;
  }
  *out = c;
  return ncclSuccess;
}

static ncclResult_t fill_rank_info(const struct ncclComm* comm, weft_rank_info* info) {
  memset(info, 0, sizeof *info);
  const char* fake = param_str(WEFT_PARAM_FAKE_VERSION);
  snprintf(info->weft_version, sizeof info->weft_version, "%s",
           *fake ? fake : WEFT_VERSION_STRING);
  info->nccl_version = NCCL_VERSION_CODE;
  info->mode = comm->mode;
  info->cuda_dev = comm->cuda_dev;
  info->pid = (int)getpid();
  gethostname(info->host, sizeof info->host - 1);
  /* NCCL_HOSTID names the host instead (NCCL's override): ranks with different values are on
   * different hosts, whatever their hostnames (comm_same_host compares the hash first). */
  const char* hostid = param_str(WEFT_PARAM_HOSTID);
  const char* who = *hostid ? hostid : info->host;
  info->host_hash = hash_bytes(who, strlen(who), 0xcbf29ce484222325ull);
  ras_peer_addr(bootstrap_listen_addr(comm->bootstrap), &info->ras_addr);
  return transport_p2p_rank_info(comm, &info->p2p);
}

/* Every rank must run the same weft build and executor; the classic cause of random
 * multi-node hangs is a mixed installation, so name the ranks and what they run. */
static ncclResult_t check_peers_agree(const struct ncclComm* comm) {
  const weft_rank_info* p = comm->peers;
  for (int r = 1; r < comm->nranks; r++) {
    if (strcmp(p[r].weft_version, p[0].weft_version) != 0 ||
        p[r].nccl_version != p[0].nccl_version) {
      WARN("rank %d: weft version mismatch: rank 0 (%s pid %d) runs weft %s (NCCL %d), "
           "rank %d (%s pid %d) runs weft %s (NCCL %d)",
           comm->rank, p[0].host, p[0].pid, p[0].weft_version, p[0].nccl_version, r, p[r].host,
           p[r].pid, p[r].weft_version, p[r].nccl_version);
      return ncclInvalidUsage;
    }
    if (p[r].mode != p[0].mode) {
      WARN("rank %d: executor mismatch: rank 0 runs in %s mode, rank %d in %s mode "
           "(set WEFT_DEVICE the same everywhere)",
           comm->rank, p[0].mode ? "device" : "host", r, p[r].mode ? "device" : "host");
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

/* Distinct hosts among the ranks (the profiler's nNodes). */
static int count_nodes(const struct ncclComm* comm) {
  int nodes = 0;
  for (int r = 0; r < comm->nranks; r++) {
    int first = 1;
    for (int q = 0; q < r && first; q++)
      if (comm->peers[q].host_hash == comm->peers[r].host_hash) first = 0;
    nodes += first;
  }
  return nodes;
}

ncclResult_t comm_init_run(struct ncclComm* comm, const ncclUniqueId* id) {
  ncclResult_t res;
  weft_log_set_thread_rank(comm->rank, comm->cuda_dev);
  comm_print_banner();
  comm->comm_hash = hash_bytes(id, sizeof *id, 0xcbf29ce484222325ull);
  comm->ras_key = hash_bytes(id, sizeof *id, 0x9e3779b97f4a7c15ull) | 1;
  comm->init_id = *id;
  __atomic_store_n(&comm->init_id_set, 1, __ATOMIC_RELEASE);
  policy_comm_begin(comm); /* before anything below reads a setting */
  /* WEFT_INIT_TIMEOUT_MS allows for ranks that start late. A split child's ranks are all in the
   * split already (its parent's allgather saw them): one that does not arrive has failed, and
   * the wait is an operation's, bounded by WEFT_TIMEOUT_MS as well. */
  int timeout = (int)param_int(WEFT_PARAM_INIT_TIMEOUT_MS);
  int op_timeout = (int)param_int(WEFT_PARAM_TIMEOUT_MS);
  if (comm->split_child && op_timeout < timeout) timeout = op_timeout;
  if (!comm->ras_on) { /* the RAS service runs while the process has a communicator */
    ras_comm_add();
    comm->ras_on = 1;
  }
  WEFT_CHECK_GOTO(bootstrap_init(id, comm->rank, comm->nranks, timeout, &comm->abort_flag,
                                 &comm->bootstrap),
                  res, fail);
  WEFT_CHECK_GOTO(comm_hang_attach(comm), res, fail);
  comm->peers = calloc((size_t)comm->nranks, sizeof *comm->peers);
  if (!comm->peers) {
    WARN("rank %d: out of memory for %d rank infos", comm->rank, comm->nranks);
    res = ncclSystemError;
    goto fail;
  }
  WEFT_CHECK_GOTO(fill_rank_info(comm, &comm->peers[comm->rank]), res, fail);
  WEFT_CHECK_GOTO(bootstrap_allgather(comm->bootstrap, comm->peers, sizeof *comm->peers), res,
                  fail);
  WEFT_CHECK_GOTO(check_peers_agree(comm), res, fail);
  WEFT_CHECK_GOTO(policy_comm_agree(comm), res, fail);
  param_check_all(); /* the settings are final: a bad one warns even where no path reads it */
  bootstrap_set_timeout(comm->bootstrap, (int)param_int(WEFT_PARAM_TIMEOUT_MS));
  WEFT_CHECK_GOTO(comm_datapath_init(comm), res, fail);
  if (comm->plan) WEFT_CHECK_GOTO(tune_comm_init(comm, comm->plan->nchannels), res, fail);
  prof_open_for_comm(&comm->prof, comm->comm_hash, comm->name, count_nodes(comm), comm->nranks,
                     comm->rank);
  INFO(NCCL_INIT, "comm %p%s%s rank %d nranks %d cudaDev %d mode %s hash 0x%llx - Init COMPLETE",
       (void*)comm, comm->name[0] ? " " : "", comm->name, comm->rank, comm->nranks,
       comm->cuda_dev, comm->mode == WEFT_MODE_DEVICE ? "device" : "host",
       (unsigned long long)comm->comm_hash);
  comm_hang_ready(comm, comm->plan && comm->plan->check_colls); /* all ranks mapped the board (the allgather); the watchdog may look */
  __atomic_store_n(&comm->state, WEFT_COMM_READY, __ATOMIC_RELEASE);
  __atomic_store_n(&comm->async_error, ncclSuccess, __ATOMIC_RELEASE);
  return ncclSuccess;
fail:
  __atomic_store_n(&comm->state, WEFT_COMM_FAILED, __ATOMIC_RELEASE);
  __atomic_store_n(&comm->async_error, res, __ATOMIC_RELEASE);
  return res;
}

typedef struct {
  struct ncclComm* comm;
  ncclUniqueId id;
} init_thread_args;

static void* init_thread_main(void* arg) {
  init_thread_args* a = arg;
  comm_init_run(a->comm, &a->id);
  free(a);
  return NULL;
}

ncclResult_t comm_init_start(struct ncclComm* comm, const ncclUniqueId* id) {
  if (comm->config.blocking) return comm_init_run(comm, id);
  init_thread_args* a = malloc(sizeof *a);
  if (!a) {
    WARN("rank %d: out of memory starting a non-blocking init", comm->rank);
    return ncclSystemError;
  }
  a->comm = comm;
  a->id = *id;
  int rc = pthread_create(&comm->init_thread, NULL, init_thread_main, a);
  if (rc != 0) {
    free(a);
    WARN("rank %d: cannot start the init thread: %s", comm->rank, strerror(rc));
    return ncclSystemError;
  }
  comm->init_thread_live = 1;
  return ncclInProgress;
}

void comm_join_init(struct ncclComm* comm) {
  pthread_mutex_lock(&comm->lock);
  if (comm->init_thread_live) {
    pthread_join(comm->init_thread, NULL);
    comm->init_thread_live = 0;
  }
  pthread_mutex_unlock(&comm->lock);
}

void comm_free(struct ncclComm* comm) {
  comm_registry_remove(comm); /* first: a stale handle is refused from here on */
  comm_hang_detach(comm);     /* the peers' reports see this rank gone */
  if (comm->ras_on) ras_comm_remove();
  for (weft_mem_reg* r = comm->regs; r; r = r->next) { /* never deregistered */
    transport_window_unmap(comm, r->zc);
    r->zc = NULL;
    transport_reg_views_free(comm, r->views, 0); /* the peers unmap as the transport closes */
    r->views = NULL;
  }
  comm_datapath_fini(comm);
  comm_hang_free(comm); /* after every thread that notes launches and waits has left */
  prof_close_for_comm(&comm->prof); /* after the proxy thread, which reports too */
  tune_comm_fini(comm);
  if (comm->bootstrap) bootstrap_close(comm->bootstrap);
  free(comm->peers);
  while (comm->regs) { /* registrations the application never released (as NCCL frees them) */
    weft_mem_reg* r = comm->regs;
    comm->regs = r->next;
    free(r);
  }
  pthread_mutex_destroy(&comm->lock);
  comm->magic_start = comm->magic_end = 0; /* a stale handle now fails comm_check */
  free(comm);
}
