/* Devices, properties, init/finalize and the logger of the example plugin. A device is an IPv4
 * interface (its pciPath: the PCI device behind it, NULL when virtual): those NCCL_SOCKET_IFNAME names (prefixes; "=" for exact names, "^" to exclude),
 * else every interface that is up except loopback, else loopback. Found once, at the first
 * init, and kept for the life of the process; the contexts init returns only count users. */
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_net.h"

static pthread_mutex_t ex_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclDebugLogger_t ex_logger_fn; /* under ex_lock */
static struct ex_device ex_devs[EX_MAX_DEVS];
static int ex_ndevs = -1; /* -1 until the first init */

static void ex_no_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                      const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

void ex_set_logger(ncclDebugLogger_t logger) {
  pthread_mutex_lock(&ex_lock);
  if (logger) ex_logger_fn = logger;
  pthread_mutex_unlock(&ex_lock);
}

ncclDebugLogger_t ex_logger(void) {
  pthread_mutex_lock(&ex_lock);
  ncclDebugLogger_t l = ex_logger_fn ? ex_logger_fn : ex_no_log;
  pthread_mutex_unlock(&ex_lock);
  return l;
}

void ex_log(ncclDebugLogLevel level, const char* file, int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ex_logger()(level, NCCL_NET, file, line, "NET/" EX_NAME ": %s", msg);
}

/* Does NCCL_SOCKET_IFNAME (NULL or empty: no filter) select the interface `name`? */
static int ex_if_selected(const char* filter, const char* name, int loopback) {
  if (!filter || !*filter) return !loopback;
  int exclude = filter[0] == '^', exact = filter[exclude] == '=';
  const char* list = filter + exclude + exact;
  int match = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (exact ? strcmp(name, tok) == 0 : strncmp(name, tok, strlen(tok)) == 0) match = 1;
  return exclude ? !match : match;
}

static void ex_find_devices(void) {
  struct ifaddrs* ifs = NULL;
  ex_ndevs = 0;
  if (getifaddrs(&ifs) != 0) return;
  const char* filter = getenv("NCCL_SOCKET_IFNAME");
  for (int pass = 0; pass < 2 && ex_ndevs == 0; pass++) {
    for (struct ifaddrs* i = ifs; i && ex_ndevs < EX_MAX_DEVS; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      int loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
      /* Second pass, only without a filter: loopback when nothing else is up. */
      if (pass == 0 ? !ex_if_selected(filter, i->ifa_name, loopback)
                    : (filter && *filter) || !loopback)
        continue;
      struct ex_device* d = &ex_devs[ex_ndevs++];
      snprintf(d->name, sizeof d->name, "%s", i->ifa_name);
      memcpy(&d->addr, i->ifa_addr, sizeof d->addr);
      d->addr.sin_port = 0;
      /* The PCI device behind the interface, as NCCL's own socket net reports it (NCCL places
       * the NIC against the GPUs from this path); a virtual interface (lo, bridges, veth) has
       * no /sys/class/net/<if>/device and reports NULL. */
      char link[128];
      snprintf(link, sizeof link, "/sys/class/net/%s/device", d->name);
      if (realpath(link, d->pci_path) == NULL) d->pci_path[0] = '\0';
    }
  }
  freeifaddrs(ifs);
}

const struct ex_device* ex_device_get(int dev) {
  pthread_mutex_lock(&ex_lock);
  int n = ex_ndevs;
  pthread_mutex_unlock(&ex_lock);
  if (dev < 0 || dev >= n) {
    EX_WARN("device %d out of range (%d devices)", dev, n < 0 ? 0 : n);
    return NULL;
  }
  return &ex_devs[dev];
}

/* A context is only a token: everything a comm needs lives in the comm. */
struct ex_context {
  uint64_t comm_id;
};

ncclResult_t ex_init(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                     ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) {
  (void)config, (void)profiler;
  if (!ctx) return ncclInvalidArgument;
  ex_set_logger(logger);
  pthread_mutex_lock(&ex_lock);
  if (ex_ndevs < 0) ex_find_devices();
  int n = ex_ndevs;
  pthread_mutex_unlock(&ex_lock);
  if (n == 0) {
    EX_WARN("no usable IPv4 interface (NCCL_SOCKET_IFNAME=%s)",
            getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "");
    return ncclSystemError;
  }
  struct ex_context* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->comm_id = comm_id;
  *ctx = c;
  EX_INFO("%d device(s), first %s", n, ex_devs[0].name);
  return ncclSuccess;
}

ncclResult_t ex_finalize(void* ctx) {
  free(ctx);
  return ncclSuccess;
}

ncclResult_t ex_devices(int* ndev) {
  pthread_mutex_lock(&ex_lock);
  *ndev = ex_ndevs < 0 ? 0 : ex_ndevs;
  pthread_mutex_unlock(&ex_lock);
  return ncclSuccess;
}

ncclResult_t ex_get_properties(int dev, ncclNetProperties_v11_t* props) {
  const struct ex_device* d = ex_device_get(dev);
  if (!d) return ncclInvalidArgument;
  memset(props, 0, sizeof *props);
  props->name = (char*)d->name;
  /* NULL for a virtual interface: NCCL places it far from every GPU. */
  props->pciPath = d->pci_path[0] ? (char*)d->pci_path : NULL;
  props->guid = (uint64_t)dev;
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->speed = 10000; /* Mb/s; a real NIC reports its link speed */
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1; /* no grouped receives; raise it to group up to 8 per irecv */
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t ex_set_net_attr(void* ctx, ncclNetAttr_v11_t* attr) {
  (void)ctx, (void)attr; /* usage hints; a NIC with traffic classes or QP counts would use them */
  return ncclSuccess;
}
