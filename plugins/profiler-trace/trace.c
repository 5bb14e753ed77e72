/* libnccl-profiler-weft-trace.so: a timeline of every communicator of a process, written as
 * one Chrome trace-event JSON file per rank and communicator into WEFT_TRACE_DIR (default: the
 * working directory), for Perfetto or chrome://tracing. Exports ncclProfiler_v6, _v5 and _v4,
 * so it loads in weft and in stock NCCL 2.26+; it needs nothing beyond libc.
 *
 * Tracks: the process is the rank ("rank R"), threads are tracks: API calls (GroupApi, CollApi,
 * P2pApi, KernelLaunch), the Group/Coll/P2p the core ran (with their arguments), one track per
 * channel for KernelCh, per channel for proxy ops and steps, the proxy thread, and per channel
 * the net transfers the net plugin reported (NetPlugin events: socket tasks, IB work requests,
 * weft-ofi operations, with their bytes and socket / QP).
 *
 * Memory is bounded: event handles come from a fixed ring of slots per communicator (a slot is
 * reused only once stopped; when every slot is live, new events are dropped and counted), and
 * finished events go to a fixed ring of records (the oldest are overwritten and counted). The
 * file is written at finalize, and at process exit for a communicator never finalized; events
 * still open then are written with "unfinished": true, so a hung rank shows what it was doing.
 * WEFT_TRACE_EVENTS sets the record ring size (default 65536, about 150 bytes each; 4096 handle
 * slots, or one per 64 records when more), WEFT_TRACE_MASK the activation mask (default every
 * event the ABI version has). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "nccl_profiler.h"

#define EXPORT __attribute__((visibility("default")))

enum { TR_API = 0, TR_GROUP = 1, TR_PROXYCTRL = 2, TR_KERNEL = 100, TR_PROXY = 200, TR_NET = 300 };

typedef struct trace_ctx trace_ctx;

/* One open event: a slot of its communicator's ring. */
typedef struct {
  trace_ctx* ctx;
  int live;
  uint64_t type;
  uint64_t start_us;
  int track;
  const char* name;
  const char *func, *dtype, *algo, *proto;
  uint64_t seq;
  size_t count, bytes;
  int root, peer, channel, nchannels, step, is_send, nsteps, last_state;
  int nstates;
  int net;            /* NetPlugin: NET_* (the plugin's type), NET_OTHER when unknown */
  int64_t net_id;     /* NetPlugin: the plugin id (type | version) */
  long long net_unit; /* NetPlugin: the socket fd, the QP number, the device (ofi) */
  /* KernelCh: pTimer of the start and of KernelChStop (the executor's clock: the GPU's
   * %globaltimer in device mode, ns) */
  uint64_t timer_start, timer_stop;
} trace_ev;

enum { NET_OTHER = 0, NET_SOCK, NET_IB, NET_OFI };
static const char* const net_names[] = {"net", "socket", "ib", "ofi"};

/* A finished event. */
typedef struct {
  trace_ev ev;
  uint64_t dur_us;
} trace_rec;

struct trace_ctx {
  pthread_mutex_t lock;
  int rank, nranks, version;
  uint64_t comm_id;
  char name[64];
  trace_ev* slots;
  size_t nslots, next_slot;
  trace_rec* recs;
  size_t nrecs, nrec_total; /* ring capacity, records ever written */
  uint64_t dropped;          /* events refused for lack of a free slot */
  int written;
  metrics_t metrics;         /* WEFT_METRICS_DIR: Prometheus text (metrics.c) */
  trace_ctx* next;           /* every live context, for the exit flush */
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static trace_ctx* all;

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A bad setting: one line on stderr naming it and the default (the plugin has no logger in every
 * ABI version it exports, and runs under stock NCCL too). Once per process and name. */
static void warn_setting(const char* name, const char* value, const char* expected,
                         unsigned long long def) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char warned[4][32];
  pthread_mutex_lock(&lock);
  int seen = 0, i = 0;
  for (; i < 4 && warned[i][0]; i++) seen |= !strcmp(warned[i], name);
  if (!seen && i < 4) snprintf(warned[i], sizeof warned[i], "%s", name);
  pthread_mutex_unlock(&lock);
  if (!seen)
    fprintf(stderr, "weft-trace: WARN %s=%s: expected %s; using the default %#llx (%llu)\n", name,
            value, expected, def, def);
}

static size_t env_size(const char* name, size_t def, size_t lo, size_t hi) {
  const char* s = getenv(name);
  if (!s || !*s) return def;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end || errno || s[0] == '-' || v < lo || v > hi) {
    char expected[80];
    snprintf(expected, sizeof expected, "an integer in [%zu, %zu]", lo, hi);
    warn_setting(name, s, expected, def);
    return def;
  }
  return (size_t)v;
}

/* The mask a version may ask for. */
static int version_mask(int version) {
  int all_bits = version >= 5 ? 0xfff : 0xff;
  const char* m = getenv("WEFT_TRACE_MASK");
  if (m && *m) {
    char* end;
    errno = 0;
    long v = strtol(m, &end, 0);
    if (!*end && !errno && v >= 0 && v <= 0xfff) return (int)v & all_bits;
    warn_setting("WEFT_TRACE_MASK", m, "an event mask in [0, 0xfff]", (unsigned long long)all_bits);
  }
  return all_bits;
}

static void json_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void write_event(FILE* f, const trace_ctx* c, const trace_ev* e, uint64_t dur,
                        int unfinished, int* first) {
  fprintf(f, "%s\n{\"name\":", *first ? "" : ",");
  *first = 0;
  char label[96];
  if (e->type == ncclProfileColl || e->type == ncclProfileCollApi)
    snprintf(label, sizeof label, "%s%s", e->func ? e->func : "?",
             e->type == ncclProfileCollApi ? " (api)" : "");
  else if (e->type == ncclProfileP2p || e->type == ncclProfileP2pApi)
    snprintf(label, sizeof label, "%s %d%s", e->func ? e->func : "?", e->peer,
             e->type == ncclProfileP2pApi ? " (api)" : "");
  else if (e->type == ncclProfileProxyStep)
    snprintf(label, sizeof label, "%s step %d", e->is_send ? "send" : "recv", e->step);
  else if (e->type == ncclProfileNetPlugin && e->net != NET_OTHER)
    snprintf(label, sizeof label, "%s %s %zu B", net_names[e->net], e->is_send ? "send" : "recv",
             e->bytes);
  else
    snprintf(label, sizeof label, "%s", e->name);
  json_str(f, label);
  fprintf(f, ",\"cat\":");
  json_str(f, e->name);
  fprintf(f, ",\"ph\":\"X\",\"ts\":%" PRIu64 ",\"dur\":%" PRIu64, e->start_us, dur);
  fprintf(f, ",\"pid\":%d,\"tid\":%d,\"args\":{", c->rank, e->track);
  fprintf(f, "\"comm\":\"0x%" PRIx64 "\"", c->comm_id);
  if (e->type == ncclProfileColl) {
    fprintf(f, ",\"seq\":%" PRIu64 ",\"count\":%zu,\"root\":%d,\"nChannels\":%d", e->seq,
            e->count, e->root, e->nchannels);
    fprintf(f, ",\"datatype\":"), json_str(f, e->dtype);
    fprintf(f, ",\"algo\":"), json_str(f, e->algo);
    fprintf(f, ",\"proto\":"), json_str(f, e->proto);
  } else if (e->type == ncclProfileP2p) {
    fprintf(f, ",\"count\":%zu,\"peer\":%d,\"nChannels\":%d,\"datatype\":", e->count, e->peer,
            e->nchannels);
    json_str(f, e->dtype);
  } else if (e->type == ncclProfileCollApi || e->type == ncclProfileP2pApi) {
    fprintf(f, ",\"count\":%zu,\"datatype\":", e->count);
    json_str(f, e->dtype);
  } else if (e->type == ncclProfileKernelCh) {
    fprintf(f, ",\"channel\":%d", e->channel);
    if (e->timer_stop > e->timer_start)
      fprintf(f, ",\"timer_ns\":%" PRIu64, e->timer_stop - e->timer_start);
  } else if (e->type == ncclProfileProxyOp) {
    fprintf(f, ",\"channel\":%d,\"peer\":%d,\"nSteps\":%d,\"send\":%d", e->channel, e->peer,
            e->nsteps, e->is_send);
  } else if (e->type == ncclProfileProxyStep) {
    fprintf(f, ",\"step\":%d,\"bytes\":%zu,\"lastState\":%d", e->step, e->bytes, e->last_state);
  } else if (e->type == ncclProfileNetPlugin) {
    fprintf(f, ",\"plugin\":\"%s\",\"bytes\":%zu", net_names[e->net], e->bytes);
    if (e->net != NET_OTHER)
      fprintf(f, ",\"send\":%d,\"%s\":%lld", e->is_send,
              e->net == NET_SOCK ? "fd" : e->net == NET_IB ? "qp" : "device", e->net_unit);
  } else if (e->type == ncclProfileProxyCtrl || e->type == ncclProfileGroupApi) {
    fprintf(f, ",\"states\":%d,\"lastState\":%d", e->nstates, e->last_state);
  }
  if (unfinished) fprintf(f, ",\"unfinished\":true");
  fprintf(f, "}}");
}

static void write_meta(FILE* f, const trace_ctx* c, int tid, const char* what, int* first) {
  fprintf(f, "%s\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
          *first ? "" : ",", tid < 0 ? "process_name" : "thread_name", c->rank,
          tid < 0 ? 0 : tid);
  *first = 0;
  json_str(f, what);
  fprintf(f, "}}");
}

/* Write the context's file (called with c->lock held). */
static void write_file_locked(trace_ctx* c) {
  metrics_write(&c->metrics, c->comm_id, c->name, c->rank, c->nranks);
  const char* dir = getenv("WEFT_TRACE_DIR");
  if (!dir || !*dir) dir = ".";
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  char path[1024], tmp[1100];
  snprintf(path, sizeof path, "%s/weft-trace-%s-%d-%016" PRIx64 "-r%d.json", dir, host,
           (int)getpid(), c->comm_id, c->rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "weft-trace: cannot write %s: %s\n", tmp, strerror(errno));
    return;
  }
  int first = 1;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"comm\":\"0x%" PRIx64
             "\",\"commName\":",
          c->comm_id);
  json_str(f, c->name);
  uint64_t lost = c->nrec_total > c->nrecs ? c->nrec_total - c->nrecs : 0;
  fprintf(f, ",\"rank\":%d,\"nranks\":%d,\"abi\":%d,\"overwritten\":%" PRIu64
             ",\"dropped\":%" PRIu64 "},\"traceEvents\":[",
          c->rank, c->nranks, c->version, lost, c->dropped);
  char pname[96];
  snprintf(pname, sizeof pname, "rank %d (%s pid %d)", c->rank, host, (int)getpid());
  write_meta(f, c, -1, pname, &first);
  write_meta(f, c, TR_API, "API calls", &first);
  write_meta(f, c, TR_GROUP, "Group / Coll / P2p", &first);
  write_meta(f, c, TR_PROXYCTRL, "proxy thread", &first);
  int seen_tracks[3][64] = {{0}};
  size_t n = c->nrec_total < c->nrecs ? c->nrec_total : c->nrecs;
  size_t start = c->nrec_total - n;
  for (size_t i = 0; i < n; i++) {
    const trace_rec* r = &c->recs[(start + i) % c->nrecs];
    int t = r->ev.track;
    int kind = t >= TR_NET ? 2 : t >= TR_PROXY ? 1 : t >= TR_KERNEL ? 0 : -1;
    if (kind >= 0 && t % 100 < 64 && !seen_tracks[kind][t % 100]) {
      char tn[48];
      snprintf(tn, sizeof tn, "%s %d", kind == 0 ? "channel" : kind == 1 ? "proxy ch" : "net ch",
               t % 100);
      write_meta(f, c, t, tn, &first);
      seen_tracks[kind][t % 100] = 1;
    }
    write_event(f, c, &r->ev, r->dur_us, 0, &first);
  }
  uint64_t now = now_us();
  for (size_t i = 0; i < c->nslots; i++)
    if (c->slots[i].live)
      write_event(f, c, &c->slots[i], now - c->slots[i].start_us, 1, &first);
  fprintf(f, "\n]}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    fprintf(stderr, "weft-trace: writing %s failed: %s\n", path, strerror(errno));
    unlink(tmp);
    return;
  }
  c->written = 1;
}

/* Communicators that never finalized get their file when the library goes: at dlclose or at
 * process exit, whichever comes first. A destructor rather than atexit(): a handler atexit
 * registered from a library that is unloaded before exit would be called into unmapped code
 * wherever atexit is not tied to the library (ThreadSanitizer's interceptor is not). */
__attribute__((destructor)) static void flush_all_at_exit(void) {
  pthread_mutex_lock(&all_lock);
  for (trace_ctx* c = all; c; c = c->next) {
    pthread_mutex_lock(&c->lock);
    write_file_locked(c);
    pthread_mutex_unlock(&c->lock);
  }
  pthread_mutex_unlock(&all_lock);
}

static ncclResult_t trace_init_common(void** context, int version, uint64_t id, int* mask,
                                      const char* name, int nranks, int rank) {
  trace_ctx* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->nrecs = env_size("WEFT_TRACE_EVENTS", 65536, 64, (size_t)1 << 26);
  c->nslots = c->nrecs / 64 < 4096 ? 4096 : c->nrecs / 64;
  c->recs = calloc(c->nrecs, sizeof *c->recs);
  c->slots = calloc(c->nslots, sizeof *c->slots);
  if (!c->recs || !c->slots) {
    free(c->recs);
    free(c->slots);
    free(c);
    return ncclSystemError;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->rank = rank;
  c->nranks = nranks;
  c->version = version;
  c->comm_id = id;
  snprintf(c->name, sizeof c->name, "%s", name ? name : "");
  pthread_mutex_lock(&all_lock);
  c->next = all;
  all = c;
  pthread_mutex_unlock(&all_lock);
  *mask = version_mask(version);
  *context = c;
  return ncclSuccess;
}

static ncclResult_t trace_finalize(void* context) {
  trace_ctx* c = context;
  pthread_mutex_lock(&all_lock);
  for (trace_ctx** p = &all; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  pthread_mutex_unlock(&all_lock);
  pthread_mutex_lock(&c->lock);
  write_file_locked(c);
  pthread_mutex_unlock(&c->lock);
  pthread_mutex_destroy(&c->lock);
  free(c->recs);
  free(c->slots);
  free(c);
  return ncclSuccess;
}

/* The slot of c that p points to, or NULL (a handle of another communicator or process). */
static trace_ev* own_slot(trace_ctx* c, void* p) {
  trace_ev* e = p;
  return e && e >= c->slots && e < c->slots + c->nslots ? e : NULL;
}

static trace_ev* new_event(trace_ctx* c, uint64_t type) {
  for (size_t k = 0; k < c->nslots; k++) {
    trace_ev* e = &c->slots[c->next_slot];
    c->next_slot = (c->next_slot + 1) % c->nslots;
    if (e->live) continue;
    memset(e, 0, sizeof *e);
    e->ctx = c;
    e->live = 1;
    e->type = type;
    e->start_us = now_us();
    e->channel = -1;
    return e;
  }
  c->dropped++;
  return NULL;
}

/* What a NetPlugin descriptor says (the plugin id names its layout): kind, bytes, direction, the
 * socket or QP. Called at start, and with a receive's final length at an update. */
static void describe_net(trace_ev* e, int64_t id, const void* data) {
  int64_t type = id & (int64_t)NCCL_PROFILER_NET_TYPE_MASK;
  e->net_id = id;
  if (data == NULL || (id & NCCL_PROFILER_NET_VER_MASK) != 1) return; /* v1 layouts only */
  if (type == NCCL_PROFILER_NET_TYPE_SOCK) {
    const ncclProfilerNetSockDescr_v1_t* d = data;
    e->net = NET_SOCK;
    e->bytes = d->sock.length;
    e->is_send = d->sock.op == 0; /* NCCL's NCCL_SOCKET_SEND */
    e->net_unit = d->sock.fd;
  } else if (type == NCCL_PROFILER_NET_TYPE_IB) {
    const ncclProfilerNetIbDescr_v1_t* d = data;
    e->net = NET_IB;
    e->bytes = d->qp.length;
    e->is_send = (d->qp.opcode & 0x80) == 0; /* receive completion opcodes have IBV_WC_RECV */
    e->net_unit = d->qp.qpNum;
  } else if (type == WEFT_PROFILER_NET_TYPE_OFI) {
    const weftProfilerNetOfiDescr_v1_t* d = data;
    e->net = NET_OFI;
    e->bytes = d->op.length;
    e->is_send = d->op.op == weftProfileOfiTsend;
    e->net_unit = d->op.device;
  }
}

/* Fill e from a v5/v6 descriptor (v4's are converted to this layout first). */
static void describe(trace_ctx* c, trace_ev* e, const ncclProfilerEventDescr_v5_t* d) {
  trace_ev* parent = own_slot(c, d->parentObj);
  switch (d->type) {
    case ncclProfileGroupApi: e->name = "GroupApi"; e->track = TR_API; break;
    case ncclProfileCollApi:
      e->name = "CollApi";
      e->track = TR_API;
      e->func = d->collApi.func;
      e->count = d->collApi.count;
      e->dtype = d->collApi.datatype;
      e->root = d->collApi.root;
      break;
    case ncclProfileP2pApi:
      e->name = "P2pApi";
      e->track = TR_API;
      e->func = d->p2pApi.func;
      e->count = d->p2pApi.count;
      e->dtype = d->p2pApi.datatype;
      e->peer = -1;
      break;
    case ncclProfileKernelLaunch: e->name = "KernelLaunch"; e->track = TR_API; break;
    case ncclProfileGroup: e->name = "Group"; e->track = TR_GROUP; break;
    case ncclProfileColl:
      e->name = "Coll";
      e->track = TR_GROUP;
      e->seq = d->coll.seqNumber;
      e->func = d->coll.func;
      e->count = d->coll.count;
      e->root = d->coll.root;
      e->dtype = d->coll.datatype;
      e->nchannels = d->coll.nChannels;
      e->algo = d->coll.algo;
      e->proto = d->coll.proto;
      break;
    case ncclProfileP2p:
      e->name = "P2p";
      e->track = TR_GROUP;
      e->func = d->p2p.func;
      e->count = d->p2p.count;
      e->dtype = d->p2p.datatype;
      e->peer = d->p2p.peer;
      e->nchannels = d->p2p.nChannels;
      break;
    case ncclProfileKernelCh:
      e->name = "KernelCh";
      e->channel = d->kernelCh.channelId;
      e->timer_start = d->kernelCh.pTimer;
      e->timer_stop = 0;
      e->track = TR_KERNEL + e->channel % 64;
      if (parent) e->func = parent->func, e->seq = parent->seq;
      break;
    case ncclProfileProxyOp:
      e->name = "ProxyOp";
      e->channel = d->proxyOp.channelId;
      e->peer = d->proxyOp.peer;
      e->nsteps = d->proxyOp.nSteps;
      e->is_send = d->proxyOp.isSend;
      e->track = TR_PROXY + e->channel % 64;
      break;
    case ncclProfileProxyStep:
      e->name = "ProxyStep";
      e->step = d->proxyStep.step;
      if (parent) e->channel = parent->channel, e->is_send = parent->is_send;
      e->track = TR_PROXY + (e->channel < 0 ? 0 : e->channel % 64);
      break;
    case ncclProfileProxyCtrl: e->name = "ProxyCtrl"; e->track = TR_PROXYCTRL; break;
    case ncclProfileNetPlugin:
      e->name = "NetPlugin";
      if (parent) e->channel = parent->channel, e->is_send = parent->is_send;
      describe_net(e, d->netPlugin.id, d->netPlugin.data);
      e->track = TR_NET + (e->channel < 0 ? 0 : e->channel % 64);
      break;
    default: e->name = "event"; e->track = TR_GROUP; break;
  }
}

static ncclResult_t start_v5(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  trace_ctx* c = context;
  *handle = NULL;
  if (!c || !d) return ncclSuccess;
  pthread_mutex_lock(&c->lock);
  trace_ev* e = new_event(c, d->type);
  if (e) describe(c, e, d);
  pthread_mutex_unlock(&c->lock);
  *handle = e;
  return ncclSuccess;
}

static ncclResult_t trace_stop(void* handle) {
  trace_ev* e = handle;
  if (!e) return ncclSuccess;
  trace_ctx* c = e->ctx;
  pthread_mutex_lock(&c->lock);
  if (e->live) {
    trace_rec* r = &c->recs[c->nrec_total % c->nrecs];
    r->ev = *e;
    uint64_t t = now_us();
    r->dur_us = t > e->start_us ? t - e->start_us : 0;
    c->nrec_total++;
    e->live = 0;
    if (e->type == ncclProfileColl) {
      metrics_add(&c->metrics, e->func, e->dtype, e->count, c->nranks, r->dur_us);
      if (metrics_due(&c->metrics, t)) metrics_write(&c->metrics, c->comm_id, c->name, c->rank, c->nranks);
    }
  }
  pthread_mutex_unlock(&c->lock);
  return ncclSuccess;
}

static ncclResult_t record_v5(void* handle, ncclProfilerEventState_t s,
                              ncclProfilerEventStateArgs_v5_t* a) {
  trace_ev* e = handle;
  if (!e) return ncclSuccess;
  trace_ctx* c = e->ctx;
  pthread_mutex_lock(&c->lock);
  if (e->live) {
    e->nstates++;
    e->last_state = (int)s;
    if (a && e->type == ncclProfileProxyStep) e->bytes = a->proxyStep.transSize;
    if (a && e->type == ncclProfileKernelCh && s == ncclProfilerKernelChStop)
      e->timer_stop = a->kernelCh.pTimer;
    if (a && e->type == ncclProfileNetPlugin && s == ncclProfilerNetPluginUpdate)
      describe_net(e, e->net_id, a->netPlugin.data);
  }
  pthread_mutex_unlock(&c->lock);
  return ncclSuccess;
}

/* ---- the exported tables ---- */
static ncclResult_t init_v5(void** context, uint64_t id, int* mask, const char* name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  (void)nnodes, (void)log;
  return trace_init_common(context, 5, id, mask, name, nranks, rank);
}
static ncclResult_t init_v6(void** context, uint64_t id, int* mask, const char* name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  (void)nnodes, (void)log;
  return trace_init_common(context, 6, id, mask, name, nranks, rank);
}
static ncclResult_t start_v6(void* context, void** handle, ncclProfilerEventDescr_v6_t* d) {
  if (d && (d->type & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch))) {
    *handle = NULL;
    return ncclSuccess;
  }
  ncclProfilerEventDescr_v5_t d5;
  memcpy(&d5, d, sizeof d5); /* v6 keeps v5's layout for every v5 event */
  return start_v5(context, handle, &d5);
}
static ncclResult_t record_v6(void* handle, ncclProfilerEventState_t s,
                              ncclProfilerEventStateArgs_v6_t* a) {
  return record_v5(handle, s, a);
}

static ncclResult_t init_v4(void** context, int* mask, const char* name, uint64_t hash,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  (void)nnodes, (void)log;
  return trace_init_common(context, 4, hash, mask, name, nranks, rank);
}
static ncclResult_t start_v4(void* context, void** handle, ncclProfilerEventDescr_v4_t* d) {
  ncclProfilerEventDescr_v5_t e;
  memset(&e, 0, sizeof e);
  e.type = d->type;
  e.parentObj = d->parentObj;
  e.rank = d->rank;
  switch (d->type) {
    case ncclProfileColl:
      e.coll.seqNumber = d->coll.seqNumber;
      e.coll.func = d->coll.func;
      e.coll.count = d->coll.count;
      e.coll.root = d->coll.root;
      e.coll.datatype = d->coll.datatype;
      e.coll.nChannels = d->coll.nChannels;
      e.coll.algo = d->coll.algo;
      e.coll.proto = d->coll.proto;
      break;
    case ncclProfileP2p:
      e.p2p.func = d->p2p.func;
      e.p2p.count = d->p2p.count;
      e.p2p.datatype = d->p2p.datatype;
      e.p2p.peer = d->p2p.peer;
      e.p2p.nChannels = d->p2p.nChannels;
      break;
    case ncclProfileProxyOp: memcpy(&e.proxyOp, &d->proxyOp, sizeof e.proxyOp); break;
    case ncclProfileProxyStep: e.proxyStep.step = d->proxyStep.step; break;
    case ncclProfileKernelCh:
      e.kernelCh.channelId = d->kernelCh.channelId;
      e.kernelCh.pTimer = d->kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      e.netPlugin.id = d->netPlugin.id;
      e.netPlugin.data = d->netPlugin.data;
      break;
    default: break;
  }
  return start_v5(context, handle, &e);
}
static ncclResult_t record_v4(void* handle, ncclProfilerEventState_t s,
                              ncclProfilerEventStateArgs_v4_t* a) {
  ncclProfilerEventStateArgs_v5_t b;
  memset(&b, 0, sizeof b);
  if (a) memcpy(&b, a, sizeof b); /* v4's state arguments are v5's */
  return record_v5(handle, s, a ? &b : NULL);
}

EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"weft-trace", init_v6, start_v6, trace_stop,
                                                  record_v6, trace_finalize};
EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"weft-trace", init_v5, start_v5, trace_stop,
                                                  record_v5, trace_finalize};
EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"weft-trace", init_v4, start_v4, trace_stop,
                                                  record_v4, trace_finalize};
