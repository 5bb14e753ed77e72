/* The net suite's shared state and helpers: the loaded plugin and the version under test, timed
 * plugin calls (no single call may take longer than the call limit), bounded waits, random data
 * that can be checked without a second copy, and the two-process harness (a forked peer, handles
 * and results exchanged through pipes). Every helper returns a conf_result: PASS to go on, FAIL
 * or SKIP with the reason recorded (propagate with CONF_TRY). */
#ifndef WEFT_CONF_NET_SUITE_H
#define WEFT_CONF_NET_SUITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl_net.h"
#include "plugin/net_shim.h"
#include "runner.h"

#define NT_MAX_CONNS 8

typedef struct {
  const char* path;
  void* dl;                 /* dlopen handle (parent, after the load test passed) */
  char load_error[512];     /* why the parent could not load the plugin; "" if it could */
  unsigned exported;        /* bit v set when ncclNetPlugin_vN (6..12) is exported */
  char other_symbols[256];  /* ncclNetPlugin_vN symbols outside 6..12, for the message */
  int version;              /* version the data-path tests use */
  int requested_version;    /* --abi, 0 when not given */
  const void* raw[WEFT_NET_MAX_VERSION + 1]; /* exported structs by version */
  double call_limit_s;      /* a single plugin call longer than this fails the test */
  double wait_s;            /* bound for one request / one connection to complete */
  int bench;
  /* What a probe child saw when it opened the plugin as the data-path tests do (see net_main):
   * probe_result CONF_PASS with probe_ndev devices, else why in probe_why. */
  int probed;
  conf_result probe_result;
  int probe_ndev;
  char probe_name[80];    /* the table's name after init */
  char probe_why[512];
  char probe_said[200]; /* with 0 devices: the plugin's own words for it ("" when none) */
  char* const* argv0;     /* this program, for tests that run in a fresh process */
} net_ctx;

extern net_ctx* nt_ctx; /* the suite's context (set by the suite before running) */

/* ---- plugin instance (per process) ---- */

typedef struct {
  weft_net_view view;
  ncclNet_v12_t* api; /* &view.api */
  void* nctx;         /* per-communicator context from init */
  int ndev;
  int dev;            /* device under test (0) */
  ncclNetProperties_v12_t props;
  int max_requests;   /* NCCL_NET_MAX_REQUESTS for the version */
  int log_calls;      /* calls the plugin made to our logger */
} nt_plugin;

/* Resolve version v's table, init it with our logger, then check and adapt the table (stock
 * NCCL's order: init may fill the table in). Init failing or a table still incomplete after it
 * is a FAIL naming the call; on success p holds a context (nt_close ends it). */
conf_result nt_init_table(nt_plugin* p, int v);
/* nt_init_table of the selected version, then devices and properties of dev 0. */
conf_result nt_open(nt_plugin* p);
/* finalize + release. */
conf_result nt_close(nt_plugin* p);
/* Our logger (counts calls; prints with -v). */
void nt_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
               const char* fmt, ...);
ncclResult_t nt_profiler(void** eHandle, int type, void* pHandle, int64_t pluginId,
                         void* extData);

/* ---- timed calls ---- */

const char* nt_result_str(ncclResult_t r);
double nt_now(void);
/* Time a plugin call: records the stage, fails when it took longer than the limit or returned
 * anything but ncclSuccess. NT_CALL is for the calls the ABI says never block (listen, connect,
 * accept, isend, irecv, iflush, test): limit call_limit_s. NT_CALL_SETUP is for calls that may
 * legitimately take a while (init, devices, getProperties, regMr — pinning a GiB takes time —,
 * deregMr, close*, finalize): limit 10 x call_limit_s. */
#define NT_CALL_LIMITED(what, call, limit, res)                                           \
  do {                                                                                    \
    conf_stage_set(what);                                                                 \
    double t0_ = nt_now();                                                                \
    (res) = (call);                                                                       \
    double dt_ = nt_now() - t0_;                                                          \
    if (dt_ > (limit))                                                                    \
      return conf_fail("%s took %.2f s (limit %.1f s: %s)", what, dt_, (double)(limit),  \
                       (limit) > nt_ctx->call_limit_s ? "a setup call must not hang"      \
                                                      : "this call must never block");    \
  } while (0)
#define NT_CALL_CHECKED(what, call, limit)                                                \
  do {                                                                                    \
    ncclResult_t r2_;                                                                     \
    NT_CALL_LIMITED(what, call, limit, r2_);                                              \
    if (r2_ != ncclSuccess) return conf_fail("%s returned %s", what, nt_result_str(r2_)); \
  } while (0)
#define NT_CALL(what, call) NT_CALL_CHECKED(what, call, nt_ctx->call_limit_s)
#define NT_CALL_SETUP(what, call) NT_CALL_CHECKED(what, call, 10 * nt_ctx->call_limit_s)
/* Same timing, but the result goes to res for the caller to judge. */
#define NT_CALL_RES(what, call, res) NT_CALL_LIMITED(what, call, nt_ctx->call_limit_s, res)
#define NT_CALL_SETUP_RES(what, call, res) \
  NT_CALL_LIMITED(what, call, 10 * nt_ctx->call_limit_s, res)

/* ---- waits ---- */

typedef struct {
  unsigned polls;
} nt_backoff;
void nt_backoff_wait(nt_backoff* b);

/* Poll test() until done or the bound (wait_s, scaled by bytes) passes. sizes: room for the
 * request's n sizes, or NULL. */
conf_result nt_wait(nt_plugin* p, void* req, int* sizes, size_t bytes, const char* what);
/* The bound nt_wait uses for a transfer of bytes. */
double nt_wait_bound(size_t bytes);

/* ---- connections in one process ---- */

/* listen (checking the handle stays within NCCL_NET_HANDLE_MAXSIZE and the comm is non-NULL). */
conf_result nt_listen(nt_plugin* p, void* handle, void** lcomm);
/* Drive connect and accept together until both complete (bounded). */
conf_result nt_connect_local(nt_plugin* p, void** scomm, void** rcomm, void** lcomm);

/* ---- memory and data ---- */

/* Deterministic pseudo-random bytes: byte i of stream seed is a function of (seed, i), so a
 * receiver checks data without holding the sender's copy. */
void nt_fill(void* buf, size_t len, uint64_t seed);
/* FAIL naming the first differing offset and the count of differing bytes. */
conf_result nt_check(const void* buf, size_t len, uint64_t seed, const char* what);
/* Page-aligned allocation; SKIP when it cannot be had. */
conf_result nt_alloc(size_t len, void** out);
void nt_free(void* buf, size_t len);
/* Bytes of memory available (MemAvailable), 0 when unknown. */
size_t nt_mem_available(void);

/* Timed regMr/deregMr of host memory. */
conf_result nt_reg(nt_plugin* p, void* comm, void* buf, size_t len, void** mh);
conf_result nt_dereg(nt_plugin* p, void* comm, void* mh);

/* Post a single send / single receive, retrying NULL requests (bounded, and polling the extra
 * request when given so progress can happen). */
conf_result nt_isend(nt_plugin* p, void* scomm, void* buf, size_t len, int tag, void* mh,
                     void** req);
conf_result nt_irecv(nt_plugin* p, void* rcomm, void* buf, size_t len, int tag, void* mh,
                     void** req);
/* Send / receive one message and wait for it. recv reports the size it got in *got. */
conf_result nt_send_msg(nt_plugin* p, void* scomm, void* buf, size_t len, int tag, void* mh);
conf_result nt_recv_msg(nt_plugin* p, void* rcomm, void* buf, size_t len, int tag, void* mh,
                        int* got);

/* Number of open fds of this process (/proc/self/fd), -1 when unknown. */
int nt_count_fds(void);

/* ---- two processes ---- */

typedef struct {
  nt_plugin plugin;
  int is_peer;
  int to_peer, from_peer; /* the child's ends of the control pipes (see nt_ctl_*) */
  pid_t peer_pid;         /* in the child: the peer's pid */
  int nconns;
  void* send[NT_MAX_CONNS]; /* send comms (the peer's in one-way mode; both in bidir) */
  void* recv[NT_MAX_CONNS];
  void* listen[NT_MAX_CONNS];
  int peer_may_exit;        /* child: the peer leaving early is part of the test */
  void* arg;
  /* What nt_pair_opts.before_open answered, its reason kept here (not recorded as the
   * process's reason), for the side function to act on once the peers are connected. */
  conf_result before_result;
  char before_why[1024];
} nt_side;

typedef conf_result (*nt_side_fn)(nt_side* s);

typedef struct {
  int nconns;      /* connections (1 when 0) */
  int bidir;       /* each side gets a send and a recv comm per connection */
  int no_close;    /* the test closes its comms itself (sets send/recv/listen to NULL) */
  void* arg;
  /* When set: runs in each process right before it opens the plugin (the GPU cases make their
   * GPU current there, as the core does before any plugin call); see nt_side.before_result. */
  nt_side_fn before_open;
} nt_pair_opts;

/* Forks a peer. Both processes open the plugin; the child listens and the peer connects (and
 * the reverse in bidir mode); then the child runs child_fn (normally the receiver) while the
 * peer runs peer_fn (the sender). They meet again, close their comms and the peer reports. A
 * peer that fails makes the test fail with "peer: <reason>"; a peer killed by a signal, with
 * that signal. */
conf_result nt_run_pair(const nt_pair_opts* o, nt_side_fn child_fn, nt_side_fn peer_fn);
/* Control messages between the two sides (bounded by the test's wait bound). */
conf_result nt_ctl_send(nt_side* s, const void* buf, size_t len);
conf_result nt_ctl_recv(nt_side* s, void* buf, size_t len);
/* In the child: wait (bounded) until the peer process has exited, whatever the way. */
conf_result nt_wait_peer_exit(nt_side* s);
/* In the child: the result the peer's part reported (CONF_PASS while it has not finished), its
 * reason, and whether the peer process has exited (reaped). */
conf_result nt_peer_reported(nt_side* s);
const char* nt_peer_reason(void);
int nt_peer_exited(nt_side* s);
/* In the child: FAIL when the peer died by a signal (unless peer_may_exit). */
conf_result nt_peer_alive(nt_side* s);

#include "stage.h"

#endif
