/* Adapts a v11 net plugin (ncclNetPlugin_v11, NCCL 2.28–2.29) to the current (v12) view. The
 * calls are the same; the types of four entries differ: the properties gain rail and plane ids
 * (NCCL_NET_ID_UNDEF here), a virtual device may name 8 devices (v11 fuses at most 4: more is
 * refused before the plugin sees it), and init's config and setNetAttr's hints have v12 types.
 * None of those entries says which plugin it is called for (getProperties and makeVDevice have
 * no context at all), so each bound v11 struct gets one of a few slots, each with entry points
 * of its own (the built-in socket net holds one for the process; external v11 plugins use the
 * others). The other entries pass through. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "plugin/net_shim_impl.h"
#include "util/log.h"
#include "util/check.h"

#define V11_SLOTS 6

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const ncclNet_v11_t* raw; /* NULL: free; stays put while binds > 0 */
  int binds;
} slots[V11_SLOTS];

static ncclResult_t props_from_v11(const ncclNet_v11_t* raw, int dev,
                                   ncclNetProperties_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  ncclNetProperties_v11_t p;
  WEFT_CHECK(raw->getProperties(dev, &p));
  net_shim_props_defaults(props, dev);
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->regIsGlobal = p.regIsGlobal;
  props->forceFlush = p.forceFlush;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  props->vProps.ndevs = p.vProps.ndevs;
  memcpy(props->vProps.devs, p.vProps.devs, sizeof p.vProps.devs);
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  props->maxMultiRequestSize = p.maxMultiRequestSize;
  return ncclSuccess;
}

static ncclResult_t vdevice_to_v11(const ncclNet_v11_t* raw, int* d,
                                   ncclNetVDeviceProps_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  if (props->ndevs < 0 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V11) {
    WARN("NET/Plugin: %s (v11) fuses at most %d devices; a virtual device of %d is refused",
         raw->name, NCCL_NET_MAX_DEVS_PER_NIC_V11, props->ndevs);
    return ncclInvalidArgument;
  }
  ncclNetVDeviceProps_v11_t p;
  memset(&p, 0, sizeof p);
  p.ndevs = props->ndevs;
  memcpy(p.devs, props->devs, sizeof p.devs);
  return raw->makeVDevice(d, &p);
}

/* One pair of context-free entry points per slot. */
#define V11_SLOT_ENTRIES(i)                                                           \
  static ncclResult_t get_props_##i(int dev, ncclNetProperties_v12_t* props) {        \
    return props_from_v11(slots[i].raw, dev, props);                                  \
  }                                                                                   \
  static ncclResult_t make_vdevice_##i(int* d, ncclNetVDeviceProps_v12_t* props) {    \
    return vdevice_to_v11(slots[i].raw, d, props);                                    \
  }
V11_SLOT_ENTRIES(0)
V11_SLOT_ENTRIES(1)
V11_SLOT_ENTRIES(2)
V11_SLOT_ENTRIES(3)
V11_SLOT_ENTRIES(4)
V11_SLOT_ENTRIES(5)

static const struct {
  ncclResult_t (*get_props)(int, ncclNetProperties_v12_t*);
  ncclResult_t (*make_vdevice)(int*, ncclNetVDeviceProps_v12_t*);
} entries[V11_SLOTS] = {{get_props_0, make_vdevice_0}, {get_props_1, make_vdevice_1},
                        {get_props_2, make_vdevice_2}, {get_props_3, make_vdevice_3},
                        {get_props_4, make_vdevice_4}, {get_props_5, make_vdevice_5}};

static int slot_of(const void* raw) {
  for (int i = 0; i < V11_SLOTS; i++)
    if (slots[i].raw == raw && slots[i].binds > 0) return i;
  return -1;
}

/* init, setNetAttr and finalize per slot: the context is the plugin's own, only the config and
 * hint types are converted. */
#define V11_SLOT_CALLS(i)                                                                  \
  static ncclResult_t init_##i(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config, \
                               ncclDebugLogger_t log, ncclProfilerCallback_t prof) {        \
    ncclNetCommConfig_v11_t c;                                                             \
    if (config) c.trafficClass = config->trafficClass;                                     \
    return slots[i].raw->init(ctx, comm_id, config ? &c : NULL, log, prof);                \
  }                                                                                        \
  static ncclResult_t set_net_attr_##i(void* ctx, ncclNetAttr_v12_t* attr) {               \
    ncclNetAttr_v11_t a;                                                                   \
    if (attr) memcpy(&a, attr, sizeof a);                                                  \
    return slots[i].raw->setNetAttr(ctx, attr ? &a : NULL);                                \
  }                                                                                        \
  static ncclResult_t finalize_##i(void* ctx) { return slots[i].raw->finalize(ctx); }
V11_SLOT_CALLS(0)
V11_SLOT_CALLS(1)
V11_SLOT_CALLS(2)
V11_SLOT_CALLS(3)
V11_SLOT_CALLS(4)
V11_SLOT_CALLS(5)

static const struct {
  ncclResult_t (*init)(void**, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t,
                       ncclProfilerCallback_t);
  ncclResult_t (*set_net_attr)(void*, ncclNetAttr_v12_t*);
  ncclResult_t (*finalize)(void*);
} calls[V11_SLOTS] = {{init_0, set_net_attr_0, finalize_0}, {init_1, set_net_attr_1, finalize_1},
                      {init_2, set_net_attr_2, finalize_2}, {init_3, set_net_attr_3, finalize_3},
                      {init_4, set_net_attr_4, finalize_4}, {init_5, set_net_attr_5, finalize_5}};

_Static_assert(sizeof(ncclNetAttr_v11_t) == sizeof(ncclNetAttr_v12_t),
               "v11 and v12 net attributes share one layout");

ncclResult_t net_shim_bind_v11(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v11_t* raw = rawp;
  if (raw->init == NULL) return net_shim_missing("init", why, whylen);
  pthread_mutex_lock(&lock);
  int i = slot_of(raw);
  for (int j = 0; i < 0 && j < V11_SLOTS; j++)
    if (slots[j].binds == 0) i = j;
  if (i >= 0) {
    slots[i].raw = raw;
    slots[i].binds++;
  }
  pthread_mutex_unlock(&lock);
  if (i < 0) {
    if (why && whylen)
      snprintf(why, whylen, "%d v11 plugins are in use already; at most %d at a time", V11_SLOTS,
               V11_SLOTS);
    return ncclInvalidUsage;
  }
  *out = (weft_net_view){
      .version = 11,
      .raw = raw,
      .api = {.name = raw->name, .init = calls[i].init,
              .finalize = raw->finalize ? calls[i].finalize : NULL}};
  return ncclSuccess;
}

void net_shim_v11_refresh_finalize(weft_net_view* view) {
  const ncclNet_v11_t* raw = view->raw;
  pthread_mutex_lock(&lock);
  int i = slot_of(raw);
  pthread_mutex_unlock(&lock);
  view->api.finalize = i >= 0 && raw->finalize ? calls[i].finalize : NULL;
}

ncclResult_t net_shim_adapt_v11(const void* rawp, weft_net_view* out, char* why, size_t whylen) {
  const ncclNet_v11_t* raw = rawp;
  const char* missing;
  NET_SHIM_MANDATORY(raw, missing);
  if (missing == NULL && raw->finalize == NULL) missing = "finalize";
  if (missing) return net_shim_missing(missing, why, whylen);
  pthread_mutex_lock(&lock);
  int i = slot_of(raw);
  pthread_mutex_unlock(&lock);
  if (i < 0) {
    if (why && whylen) snprintf(why, whylen, "v11 struct adapted without a bind");
    return ncclInvalidUsage;
  }
  *out = (weft_net_view){
      .version = 11,
      .raw = raw,
      .api =
          {
              .name = raw->name,
              .init = calls[i].init,
              .devices = raw->devices,
              .getProperties = entries[i].get_props,
              .listen = raw->listen,
              .connect = raw->connect,
              .accept = raw->accept,
              .regMr = raw->regMr,
              .regMrDmaBuf = raw->regMrDmaBuf ? raw->regMrDmaBuf : net_stub_regMrDmaBuf,
              .deregMr = raw->deregMr,
              .isend = raw->isend,
              .irecv = raw->irecv,
              .iflush = raw->iflush,
              .test = raw->test,
              .closeSend = raw->closeSend,
              .closeRecv = raw->closeRecv,
              .closeListen = raw->closeListen,
              .getDeviceMr = raw->getDeviceMr ? raw->getDeviceMr : net_stub_getDeviceMr,
              .irecvConsumed = raw->irecvConsumed ? raw->irecvConsumed : net_stub_irecvConsumed,
              .makeVDevice = raw->makeVDevice ? entries[i].make_vdevice : net_stub_makeVDevice,
              .finalize = calls[i].finalize,
              .setNetAttr = raw->setNetAttr ? calls[i].set_net_attr : net_stub_setNetAttr,
          },
  };
  return ncclSuccess;
}

void net_shim_release_v11(const void* raw) {
  pthread_mutex_lock(&lock);
  int i = slot_of(raw);
  if (i >= 0 && --slots[i].binds == 0) slots[i].raw = NULL;
  pthread_mutex_unlock(&lock);
}
