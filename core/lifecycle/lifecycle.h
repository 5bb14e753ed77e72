/* A communicator's lifecycle: allocate, init (blocking or on its own thread), split, finalize,
 * destroy, abort, free; the executor choice; the data path set up at the end of init and torn
 * down at free (comm_datapath.c); the policy hooks of init (policy_comm.c). The functions keep
 * the comm_ prefix: they act on a whole communicator (comm/comm.h, one layer down). */
#ifndef WEFT_LIFECYCLE_H
#define WEFT_LIFECYCLE_H

#include "comm/comm.h"
#include "nccl.h"

/* Arguments of one init, owned by the job until it runs (non-blocking and group inits). */
typedef struct {
  struct ncclComm* comm;
  ncclUniqueId id;
  int nranks, rank;
} weft_init_job;

/* ---- comm_init.c ---- */
/* Allocate a communicator shell (not yet connected) for rank of nranks. */
ncclResult_t comm_alloc(int nranks, int rank, const ncclConfig_t* config, int cuda_dev,
                        struct ncclComm** out);
/* Connect the shell: bootstrap, exchange rank info, check versions. Sets state/async_error. */
ncclResult_t comm_init_run(struct ncclComm* comm, const ncclUniqueId* id);
/* Blocking: run now. Non-blocking: start the init thread and return ncclInProgress. */
ncclResult_t comm_init_start(struct ncclComm* comm, const ncclUniqueId* id);
/* Wait for a non-blocking init thread (if any) and reap it. */
void comm_join_init(struct ncclComm* comm);
void comm_free(struct ncclComm* comm);

/* ---- comm_datapath.c ---- */
/* Agree on channels and buffer sizes, open the net, start the executor (host mode). Called at
 * the end of comm_init_run; an unknown NCCL_ALGO/NCCL_PROTO token fails it (InvalidUsage). */
ncclResult_t comm_datapath_init(struct ncclComm* comm);
/* Flush net sends still in flight (bounded; skipped after abort). */
ncclResult_t comm_datapath_quiesce(struct ncclComm* comm);
/* Stop threads, close connections and the net. Safe on a partly initialised comm. */
void comm_datapath_fini(struct ncclComm* comm);
/* A connection failed where no operation will see it (the proxy, under device kernels): fail
 * the communicator (ncclCommGetAsyncError reports res), WARN once, stop its kernels. */
void comm_datapath_broken(struct ncclComm* comm, ncclResult_t res, int peer, const char* what);

/* ---- comm_split.c ---- */
ncclResult_t comm_split(struct ncclComm* parent, int color, int key, const ncclConfig_t* config,
                        struct ncclComm** out);

/* ---- comm_revoke.c ---- */
/* Refuse later operations, stop those in flight, and once none is left lower the abort flag
 * (async_error: ncclInProgress, then ncclSuccess). wait: return when quiescent; otherwise a
 * thread waits and this returns ncclInProgress. ncclInvalidArgument (WARN) when comm was
 * already revoked, finalized, or never initialized. */
ncclResult_t comm_revoke(struct ncclComm* comm, int wait);

/* ---- comm_shrink.c ---- */
/* The survivors' new communicator: parent's ranks minus exclude[0..nexclude) (valid, distinct,
 * not this rank: the caller checked), renumbered in parent order. abort_first: revoke the
 * parent first (NCCL_SHRINK_ABORT). Non-blocking config: *out initializes on its own thread. */
ncclResult_t comm_shrink(struct ncclComm* parent, const int* exclude, int nexclude,
                         const ncclConfig_t* config, int abort_first, struct ncclComm** out);

/* ---- comm_grow.c ---- */
/* ncclCommGetUniqueId: a fresh id for a grow of comm; ncclInvalidUsage while one is unused. */
ncclResult_t comm_grow_unique_id(struct ncclComm* comm, ncclUniqueId* out);
/* An existing rank's ncclCommGrow: id is the root's (must be comm's live id, consumed here) or
 * NULL; every existing rank calls it. nranks > comm->nranks was checked by the caller. */
ncclResult_t comm_grow(struct ncclComm* parent, int nranks, const ncclUniqueId* id,
                       const ncclConfig_t* config, struct ncclComm** out);

/* ---- comm_suspend.c ---- */
/* NCCL_SUSPEND_MEM: release the executor's dynamic memory; operations are refused until
 * comm_resume. ncclInvalidUsage when already suspended (resume: when not suspended). */
ncclResult_t comm_suspend(struct ncclComm* comm);
ncclResult_t comm_resume(struct ncclComm* comm);
/* One ncclCommMemStat_t value (ncclInvalidArgument for an unknown stat). */
ncclResult_t comm_mem_stat(struct ncclComm* comm, int stat, uint64_t* value);

/* ---- comm_destroy.c ---- */
ncclResult_t comm_finalize(struct ncclComm* comm);
ncclResult_t comm_destroy(struct ncclComm* comm);
ncclResult_t comm_abort(struct ncclComm* comm);

/* ---- comm_mode.c ---- */
/* Host or device executor for a new comm (WEFT_DEVICE, then whether a CUDA device is usable),
 * and the CUDA device to use (the current one, or devlist entry); -1 in host mode. */
ncclResult_t comm_choose_mode(int requested_dev, weft_mode* mode, int* cuda_dev);
/* The INFO banner on first init: weft version, NCCL version answered to, CUDA versions. */
void comm_print_banner(void);

/* ---- policy_comm.c ---- */
/* Start of init, before anything reads settings: read the policy and, when this host's facts
 * decide the cluster, apply it. Never fails: an invalid file is WARNed here and reported on
 * every rank by policy_comm_agree. */
void policy_comm_begin(struct ncclComm* comm);
/* After the rank-info allgather (node count and ranks per node known), before nets are opened:
 * finish a choice that waited for them and apply it, then compare every rank's (cluster,
 * settings hash). ncclInvalidUsage, on every rank, naming the ranks and the clusters they
 * chose, when they differ or a rank's file is invalid. */
ncclResult_t policy_comm_agree(struct ncclComm* comm);

#endif
