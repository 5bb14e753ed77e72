/* The communicator: what one rank knows about its group of ranks. Everything a communicator
 * owns hangs off this struct and is freed by comm_free; no other global state refers to it. */
#ifndef WEFT_COMM_H
#define WEFT_COMM_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "nccl.h"
#include "plugin/profiler.h"
#include "policy/policy.h"
#include "topo/p2p_info.h"

#define WEFT_COMM_MAGIC_START 0x77656674636f6d6dull /* "weftcomm" */
#define WEFT_COMM_MAGIC_END 0x6d6d6f6374666577ull

typedef enum { WEFT_MODE_HOST = 0, WEFT_MODE_DEVICE = 1 } weft_mode;

/* Lifecycle, in order. Finalized comms accept only destroy. */
typedef enum {
  WEFT_COMM_INITIALIZING = 0,
  WEFT_COMM_READY,
  WEFT_COMM_FINALIZED,
  WEFT_COMM_FAILED
} weft_comm_state;

/* What each rank publishes at init; compared across ranks (version, mode). */
typedef struct {
  char weft_version[32];
  int nccl_version;
  int mode;
  int cuda_dev;
  int pid;
  uint64_t host_hash;
  char host[64];
  weft_p2p_rank_info p2p; /* device mode: what decides p2p against shm (transport/) */
  weft_sockaddr ras_addr; /* its process's RAS peer listener (ras/ras_peer.c); family 0: none */
} weft_rank_info;

/* Whether two ranks run on one host (the host hash and the name agree). */
static inline int comm_same_host(const weft_rank_info* a, const weft_rank_info* b) {
  return a->host_hash == b->host_hash && strcmp(a->host, b->host) == 0;
}

/* Ranks per host P when peers[0..n) are host-major with the same count P on each of two or more
 * hosts (host h holds ranks hP .. hP+P-1, and no host holds two such blocks), else 0. P may be
 * 1 (one rank per host). comm_hosts.c. */
int comm_host_major_ppn(const weft_rank_info* peers, int n);

/* A buffer registered with ncclCommRegister or ncclCommWindowRegister (api/api_mem.c). The
 * handle handed out is the node's address; it is only ever compared, never dereferenced,
 * before it is found in the list. */
typedef struct weft_mem_reg {
  void* buff;
  size_t size;
  int window; /* 1: ncclCommWindowRegister (flags below), 0: ncclCommRegister */
  int win_flags;
  struct weft_window_map* zc; /* a zero-copy window: every rank's buffer mapped here (transport/) */
  struct weft_window_lsa* lsa; /* a symmetric window's LSA flat mapping (transport/), or NULL */
  /* Device mode: the window as kernels see it (NCCL's ncclWindow_vidmem, 2.32 layout, in GPU
   * memory; api/api_devwin.c), which is also the ncclWindow_t handed out; NULL in host mode. */
  void* dev_win;
  int32_t* dev_delta; /* GPU memory: nranks lsaPeerDelta4G entries the window points to */
  /* Registered for zero copy without symmetry (ncclCommRegister, and windows without
   * NCCL_WIN_COLL_SYMMETRIC) on a communicator where it can apply (transport_reg_zero_copy):
   * local_zc is set, and views holds this buffer's address in each peer's process (NULL: no
   * peer reads it in place; transport/transport_regview.c). */
  int local_zc;
  struct weft_reg_views* views;
  struct weft_mem_reg* next;
} weft_mem_reg;

struct ncclComm {
  uint64_t magic_start;
  int rank, nranks;
  int cuda_dev; /* -1 in host mode */
  weft_mode mode;
  size_t launched_sm_copy_max; /* WEFT_LAUNCHED_SM_COPY_MAX_BYTES (device/device_exec.c) */
  uint64_t comm_hash; /* identifies this communicator (plugins get it as commId) */
  ncclConfig_t config; /* resolved: no UNDEF fields left except pointers */
  char name[64];       /* config.commName copy, for logs */
  weft_bootstrap* bootstrap;
  weft_rank_info* peers; /* nranks entries */
  weft_policy_outcome policy; /* the cluster this rank resolved (lifecycle/policy_comm.c) */

  volatile uint32_t abort_flag;
  volatile int async_error; /* ncclResult_t; ncclInProgress while a non-blocking init runs */
  volatile int state;       /* weft_comm_state */
  int split_count;          /* splits and shrinks done from this comm (tags bootstrap messages) */
  int split_child;          /* made by ncclCommSplit: its init is bounded by WEFT_TIMEOUT_MS too */
  /* ncclCommRevoke (lifecycle/comm_revoke.c): set once, never cleared; operations are refused
   * from then on and launches already in flight fail (the abort flag, raised until they left). */
  volatile int revoked;
  /* ncclCommSuspend (lifecycle/comm_suspend.c): 1 while the executor's scratch is released;
   * operations are refused. Under lock. */
  volatile int suspended;
  /* ncclCommGetUniqueId (lifecycle/comm_grow.c): the id this rank made for a grow, until a
   * grow consumes it. Under lock. */
  ncclUniqueId grow_id;
  int grow_id_live;

  /* Non-blocking init/split run on this thread; joined by GetAsyncError, destroy or abort. */
  pthread_t init_thread;
  int init_thread_live;
  pthread_mutex_t lock;

  /* Data path (lifecycle/comm_datapath.c sets these up at the end of init, tears them down in
   * free). */
  struct weft_net* net;             /* net plugin context; shared with split children */
  struct weft_transport* transport; /* connections (transport/) */
  struct weft_proxy* proxy;         /* net progress thread, started with the first net conn */
  struct weft_host* host;           /* host executor: channel workers */
  struct weft_device* device;       /* GPU executor: launches, abort/error words (device/) */
  struct weft_rma* rma;             /* one-sided windows, FIFOs and thread (rma/), lazily */
  /* The net library's CollNet plugin, opened at init in host mode with collnetEnable
   * (NCCL_COLLNET_ENABLE) when it has devices; NULL otherwise. tune/ agrees whether it is used,
   * plan/plan_collnet.c connects it lazily and runs its reductions. */
  struct weft_kind_plugin* collnet;
  int proxy_always_on;              /* device mode: the proxy was activated for good */
  struct weft_plan* plan;           /* masks, sequence numbers, user ops, queued ops */
  struct weft_tune* tune;           /* cost model and tuner plugin (tune/tune_comm.c) */
  weft_mem_reg* regs;               /* registered buffers and windows, under lock */
  struct weft_devapi* devapi;       /* the device API's window table (api/api_devwin.c) */
  struct weft_gin* gin;             /* the device API's proxy GIN setup (gin/gin_comm.c), or NULL */
  int zc_windows;                   /* regs with zc set (atomic): plan/ looks only when > 0 */
  int zc_locals;                    /* regs with local_zc set (atomic): likewise */
  weft_prof prof;                   /* profiler plugin context and activation mask */
  struct weft_hang* hang;           /* this rank's slot of the hang report board (comm_hang.c) */
  int ras_on;                       /* counted in the RAS service's users (ras/ras_server.c) */
  /* The id this communicator's init joined, readable once init_id_set (atomic) is 1: the RAS
   * service asks its bootstrap root who has not arrived while the init waits; ras_key (from the
   * id's secret) proves to another host's RAS peer that a query comes from one of the ranks. */
  ncclUniqueId init_id;
  int init_id_set;
  uint64_t ras_key;
  uint64_t magic_end;
};

/* ---- comm_config.c ---- */
/* Copy a user config honouring its size/version (NULL: defaults), validate, apply defaults and
 * environment overrides. ncclInvalidArgument with a WARN naming the field on bad input. */
ncclResult_t comm_config_resolve(const ncclConfig_t* user, const char* fn, ncclConfig_t* out);

/* ---- comm_check.c ---- */
/* A usable communicator handle: non-NULL, magics intact, not finalized/failed. */
ncclResult_t comm_check(const struct ncclComm* comm, const char* fn);
/* For split and shrink: a usable handle, or a revoked one that is quiescent, or (accept_failed)
 * one that failed after init (a peer died): what those build on is the bootstrap alone. */
ncclResult_t comm_check_manage(const struct ncclComm* comm, const char* fn, int accept_failed);
/* A handle that is at least structurally valid (destroy/abort/queries accept more states). */
ncclResult_t comm_check_handle(const struct ncclComm* comm, const char* fn);

/* ---- comm_registry.c ---- */
/* The live communicators of this process. comm_alloc adds, comm_free removes (first). */
ncclResult_t comm_registry_add(struct ncclComm* comm);
void comm_registry_remove(struct ncclComm* comm);
/* 1 while comm is a live communicator (reads nothing of *comm). */
int comm_registry_live(const struct ncclComm* comm);
/* fn(comm, arg) for each live communicator, under the registry lock: a comm visited is not
 * freed meanwhile; fn must not block and must not call back into the registry. */
void comm_registry_visit(void (*fn)(struct ncclComm* comm, void* arg), void* arg);

#endif
