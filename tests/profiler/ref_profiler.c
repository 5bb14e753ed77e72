/* A reference profiler plugin for the tests: it exports ncclProfiler_v<REF_VERSION> (built once
 * per version 1..6) and records every event it is given, normalised (ref_profiler.h), so a
 * test can read the tree the core reported. Handles are records that live until the library
 * unloads. REF_PROF_MASK sets the activation mask init returns (default: every event the
 * version knows); REF_PROF_FAIL_INIT=1 makes init fail; REF_PROF_NULL_CTX=1 makes init succeed
 * with a NULL context and a zero mask (a plugin that disabled itself). Built with REF_BROKEN_NULL_STOP, the
 * table's stopEvent is NULL; with REF_BROKEN_NOSYM, the table has a wrong name; with
 * REF_BROKEN_CRASH_STOP, stopEvent crashes; with REF_BROKEN_LEAK, every event leaks 64 bytes
 * (the conformance suite's bad plugins). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler.h"
#include "ref_profiler.h"

#define REF_CAP 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ref_event* events;
static int nevents, inits, finalizes, last_mask;
static char comm_name[64];
static int g_nranks, g_rank, g_nnodes;
static int ctx_token;

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define DESCR PASTE(PASTE(ncclProfilerEventDescr_v, REF_VERSION), _t)
#define ARGS PASTE(PASTE(ncclProfilerEventStateArgs_v, REF_VERSION), _t)
#define TABLE PASTE(PASTE(ncclProfiler_v, REF_VERSION), _t)

static const char* const funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                    "AllReduce", "SendRecv", "Send",    "Recv"};
static const char* const algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                    "NVLS", "NVLS_TREE", "PAT"};
static const char* const protos[] = {"LL", "LL128", "SIMPLE"};

static void copy(char* dst, const char* s) { snprintf(dst, 32, "%s", s ? s : "(null)"); }

/* Keep a NetPlugin descriptor of a type the tests know (its size follows from the id). */
__attribute__((unused)) static void copy_net(ref_event* e, const void* data) {
  if (data == NULL) return;
  int64_t type = e->net_id & (int64_t)NCCL_PROFILER_NET_TYPE_MASK;
  size_t n = type == NCCL_PROFILER_NET_TYPE_SOCK  ? sizeof(ncclProfilerNetSockDescr_v1_t)
             : type == NCCL_PROFILER_NET_TYPE_IB  ? sizeof(ncclProfilerNetIbDescr_v1_t)
             : type == WEFT_PROFILER_NET_TYPE_OFI ? sizeof(weftProfilerNetOfiDescr_v1_t)
                                                  : 0;
  _Static_assert(sizeof(weftProfilerNetOfiDescr_v1_t) <= REF_NET_DATA, "net_data too small");
  if (n) memcpy(e->net_data, data, n);
  if (type == WEFT_PROFILER_NET_TYPE_OFI) /* the string lives only while the net plugin does */
    copy(e->net_provider, ((const weftProfilerNetOfiDescr_v1_t*)data)->op.provider);
}

/* A handle is ours when it points into the record array. */
static const ref_event* as_record(const void* p) {
  const ref_event* e = p;
  return events && e >= events && e < events + REF_CAP ? e : NULL;
}

static int default_mask(void) {
  int v = REF_VERSION;
  int m = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
          ncclProfileProxyStep | ncclProfileProxyCtrl;
  if (v >= 3) m |= ncclProfileKernelCh | ncclProfileNetPlugin;
  if (v >= 5)
    m |= ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch;
  return m;
}

static ncclResult_t common_init(void** ctx, int* mask) {
  const char* f = getenv("REF_PROF_FAIL_INIT");
  if (f && f[0] == '1') return ncclInternalError;
  pthread_mutex_lock(&lock);
  if (!events) events = calloc(REF_CAP, sizeof *events);
  inits++;
  const char* m = getenv("REF_PROF_MASK");
  last_mask = m ? (int)strtol(m, NULL, 0) : default_mask();
  *mask = last_mask;
  pthread_mutex_unlock(&lock);
  *ctx = &ctx_token;
  const char* n = getenv("REF_PROF_NULL_CTX"); /* disable itself, as the Inspector does */
  if (n && n[0] == '1') *ctx = NULL, *mask = 0, last_mask = 0;
  return events ? ncclSuccess : ncclSystemError;
}

#if REF_VERSION >= 5
static ncclResult_t ref_init(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                             int nranks, int rank, ncclDebugLogger_t log) {
  (void)id, (void)log;
  snprintf(comm_name, sizeof comm_name, "%s", name ? name : "");
  g_nranks = nranks, g_rank = rank, g_nnodes = nnodes;
  return common_init(ctx, mask);
}
#elif REF_VERSION == 4
static ncclResult_t ref_init(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes,
                             int nranks, int rank, ncclDebugLogger_t log) {
  (void)hash, (void)log;
  snprintf(comm_name, sizeof comm_name, "%s", name ? name : "");
  g_nranks = nranks, g_rank = rank, g_nnodes = nnodes;
  return common_init(ctx, mask);
}
#else
static ncclResult_t ref_init(void** ctx, int* mask) { return common_init(ctx, mask); }
#endif

static ncclResult_t ref_start(void* ctx, void** handle, DESCR* d) {
  *handle = NULL;
  if (ctx != &ctx_token) return ncclInvalidArgument;
  pthread_mutex_lock(&lock);
  if (nevents == REF_CAP) {
    pthread_mutex_unlock(&lock);
    return ncclSuccess;
  }
  ref_event* e = &events[nevents++];
#ifdef REF_BROKEN_LEAK
  nevents = 0; /* reuse the records, but leak a buffer per event */
  void* leak = malloc(64);
  if (leak) memset(leak, 1, 64);
#endif
  memset(e, 0, sizeof *e);
  e->type = d->type;
  e->parent = as_record(d->parentObj);
  e->rank = d->rank;
  e->channel = -1;
  switch (d->type) {
    case ncclProfileColl:
#if REF_VERSION == 1
      copy(e->func, d->coll.func < 8 ? funcs[d->coll.func] : "?");
      copy(e->algo, d->coll.algo < 7 ? algos[d->coll.algo] : "?");
      copy(e->proto, d->coll.proto < 3 ? protos[d->coll.proto] : "?");
      snprintf(e->dtype, sizeof e->dtype, "%d", d->coll.datatype);
#else
      copy(e->func, d->coll.func);
      copy(e->algo, d->coll.algo);
      copy(e->proto, d->coll.proto);
      copy(e->dtype, d->coll.datatype);
      (void)algos, (void)protos;
#endif
      e->seq = d->coll.seqNumber;
      e->count = d->coll.count;
      e->root = d->coll.root;
#if REF_VERSION >= 4
      e->nchannels = d->coll.nChannels;
#else
      e->nchannels = d->coll.nMaxChannels;
      if (d->coll.name != NULL || d->coll.commHash != 0) e->depth = -1; /* NCCL sends none */
#endif
#if REF_VERSION >= 5
      e->group = as_record(d->coll.parentGroup);
#endif
      break;
    case ncclProfileP2p:
#if REF_VERSION == 1
      copy(e->func, d->p2p.func < 8 ? funcs[d->p2p.func] : "?");
#else
      copy(e->func, d->p2p.func);
      copy(e->dtype, d->p2p.datatype);
#endif
      e->count = d->p2p.count;
      e->peer = d->p2p.peer;
#if REF_VERSION >= 4
      e->nchannels = d->p2p.nChannels;
#endif
#if REF_VERSION >= 5
      e->group = as_record(d->p2p.parentGroup);
#endif
      break;
#if REF_VERSION >= 3
    case ncclProfileNetPlugin:
      e->net_id = d->netPlugin.id;
      copy_net(e, d->netPlugin.data);
      break;
    case ncclProfileKernelCh:
      e->channel = d->kernelCh.channelId;
#if REF_VERSION >= 4
      e->ptimer_start = d->kernelCh.pTimer;
#endif
      break;
#endif
#if REF_VERSION >= 5
    case ncclProfileGroupApi: e->depth = d->groupApi.groupDepth; break;
    case ncclProfileCollApi:
      copy(e->func, d->collApi.func);
      e->count = d->collApi.count;
      e->root = d->collApi.root;
      break;
    case ncclProfileP2pApi:
      copy(e->func, d->p2pApi.func);
      e->count = d->p2pApi.count;
      break;
#endif
    case ncclProfileProxyOp:
      e->channel = d->proxyOp.channelId;
      e->peer = d->proxyOp.peer;
      e->count = (size_t)d->proxyOp.nSteps;
      e->root = d->proxyOp.isSend;
      e->chunk = (size_t)d->proxyOp.chunkSize;
      break;
    case ncclProfileProxyStep: e->seq = (uint64_t)d->proxyStep.step; break;
    default: break;
  }
  (void)funcs;
  pthread_mutex_unlock(&lock);
  *handle = e;
  return ncclSuccess;
}

__attribute__((unused)) static ncclResult_t ref_stop(void* handle) {
#ifdef REF_BROKEN_CRASH_STOP
  if (handle) raise(SIGSEGV); /* a stopEvent that crashes */
#endif
  ref_event* e = (ref_event*)as_record(handle);
  if (!e) return ncclInvalidArgument;
  pthread_mutex_lock(&lock);
  e->stopped++;
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

static ncclResult_t ref_record(void* handle, ncclProfilerEventState_t s, ARGS* a) {
  ref_event* e = (ref_event*)as_record(handle);
  if (!e) return ncclInvalidArgument;
  pthread_mutex_lock(&lock);
  if (e->stopped) e->after_stop_state = 1;
  if (e->nstates < REF_MAX_STATES) e->states[e->nstates++] = (int)s;
#if REF_VERSION >= 4
  if (s == ncclProfilerKernelChStop && a) e->ptimer_stop = a->kernelCh.pTimer;
  if (e->type == ncclProfileProxyStep && a) e->trans_size = a->proxyStep.transSize;
  if (s == ncclProfilerNetPluginUpdate && a) {
    e->net_updates++;
    copy_net(e, a->netPlugin.data);
  }
#else
  (void)a;
#endif
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

static ncclResult_t ref_finalize(void* ctx) {
  pthread_mutex_lock(&lock);
  finalizes++; /* counted even for a bad context: the tests check finalize is not called */
  pthread_mutex_unlock(&lock);
  if (ctx != &ctx_token) return ncclInvalidArgument;
  pthread_mutex_lock(&lock);
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

__attribute__((visibility("default"))) void ref_profiler_summary(ref_summary* out) {
  pthread_mutex_lock(&lock);
  out->version = REF_VERSION;
  out->inits = inits;
  out->finalizes = finalizes;
  out->last_mask = last_mask;
  out->nevents = nevents;
  out->events = events;
  snprintf(out->comm_name, sizeof out->comm_name, "%s", comm_name);
  out->nranks = g_nranks, out->rank = g_rank, out->nnodes = g_nnodes;
  pthread_mutex_unlock(&lock);
}

#ifdef REF_BROKEN_NOSYM
#define EXPORT_NAME ncclProfilerPlugin_vX
#else
#define EXPORT_NAME PASTE(ncclProfiler_v, REF_VERSION)
#endif

__attribute__((visibility("default"))) const TABLE EXPORT_NAME = {
    .name = "weft-ref",
    .init = ref_init,
    .startEvent = ref_start,
#ifdef REF_BROKEN_NULL_STOP
    .stopEvent = NULL,
#else
    .stopEvent = ref_stop,
#endif
    .recordEventState = ref_record,
    .finalize = ref_finalize,
};
