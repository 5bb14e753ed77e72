/* Devices of the libfabric plugin: which provider, which domains, and their properties, found
 * once per process. Also the logger every file writes through.
 *
 * Provider choice: WEFT_OFI_PROVIDER (a comma list, tried in order), else whatever FI_PROVIDER
 * lets libfabric return, else the first of DEFAULT_ORDER that offers reliable-datagram (RDM)
 * endpoints with tagged messages and send-after-send ordering. One device per distinct domain
 * of that provider (a NIC for verbs/efa/cxi, an interface for tcp/udp, "shm" for shm), filtered
 * by WEFT_OFI_DOMAIN; without it loopback domains are dropped when another domain exists. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ofi.h"
#include "util/log.h"
#include "util/param.h"
#include "util/socket.h"

/* Hardware providers first, then the software ones that reach other hosts. shm (one host) and
 * udp;ofi_rxd are used only when asked for. */
static const char* const DEFAULT_ORDER[] = {"efa",           "cxi",         "opx",
                                            "psm3",          "psm2",        "verbs;ofi_rxm",
                                            "tcp;ofi_rxm",   "sockets"};
enum { NDEFAULT = sizeof DEFAULT_ORDER / sizeof DEFAULT_ORDER[0] };

/* Tag bits we need: kind (2) + payload (32) + at least 12 bits of comm id. */
#define OFI_MIN_TAG_BITS (2 + 32 + 12)
/* Mb/s reported when neither libfabric nor sysfs knows the link speed (an estimate). */
#define OFI_DEFAULT_SPEED 10000
#define OFI_SHM_SPEED 100000

ofi_settings net_ofi_cfg;

static ncclDebugLogger_t ofi_log_fn;

void net_ofi_set_logger(ncclDebugLogger_t logger) {
  if (logger) __atomic_store_n(&ofi_log_fn, logger, __ATOMIC_RELEASE);
}

ncclDebugLogger_t net_ofi_logger(void) {
  ncclDebugLogger_t l = __atomic_load_n(&ofi_log_fn, __ATOMIC_ACQUIRE);
  return l ? l : (ncclDebugLogger_t)weft_log;
}

static ofi_dev ofi_devs[OFI_MAX_DEVS];
static int ofi_ndev = -1; /* -1: not looked yet */
static char ofi_prov[64];

static struct fi_info* make_hints(const char* prov, int hmem) {
  struct fi_info* h = net_ofi_fi.dupinfo(NULL);
  if (h == NULL) return NULL;
  h->caps = FI_TAGGED | FI_SEND | FI_RECV | (hmem ? FI_HMEM : 0);
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->ep_attr->type = FI_EP_RDM;
  /* Every registration rule we honour (net_ofi_mr.c); the provider answers with those it needs. */
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                            FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
  /* All calls on a domain are serialised by the NIC's lock. */
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  /* Same-tag messages must match in send order (FIFO per connection). */
  h->tx_attr->msg_order = FI_ORDER_SAS;
  h->rx_attr->msg_order = FI_ORDER_SAS;
  if (prov && prov[0]) {
    h->fabric_attr->prov_name = strdup(prov);
    if (h->fabric_attr->prov_name == NULL) {
      net_ofi_fi.freeinfo(h);
      return NULL;
    }
  }
  return h;
}

/* fi_getinfo for one provider (NULL: any), with FI_HMEM first when wanted. *hmem_got says
 * whether the answer has it. 0 or a negative libfabric code. */
static int query(const char* prov, int want_hmem, struct fi_info** out, int* hmem_got) {
  int rc = -FI_ENODATA;
  *out = NULL;
  for (int hmem = want_hmem; hmem >= 0; hmem--) {
    struct fi_info* h = make_hints(prov, hmem);
    if (h == NULL) return -FI_ENOMEM;
    rc = net_ofi_fi.getinfo(OFI_API_VERSION, NULL, NULL, 0, h, out);
    net_ofi_fi.freeinfo(h);
    if (rc == 0 && *out) {
      *hmem_got = hmem;
      return 0;
    }
    *out = NULL;
  }
  return rc;
}

static int tag_bits_of(const struct fi_info* i) {
  uint64_t f = i->ep_attr ? i->ep_attr->mem_tag_format : 0;
  if (f == 0) return 64;
  int bits = 0;
  while (f) {
    bits++;
    f >>= 1;
  }
  return bits;
}

static int is_loopback(const struct fi_info* i) {
  if (i->domain_attr && i->domain_attr->name && strcmp(i->domain_attr->name, "lo") == 0) return 1;
  if (i->src_addr == NULL) return 0;
  if (i->addr_format == FI_SOCKADDR_IN && i->src_addrlen >= sizeof(struct sockaddr_in)) {
    const struct sockaddr_in* s = i->src_addr;
    return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
  }
  if (i->addr_format == FI_SOCKADDR_IN6 && i->src_addrlen >= sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6* s = i->src_addr;
    return IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
  }
  return 0;
}

static int read_sys_int(const char* path, long* v) {
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  int ok = fscanf(f, "%ld", v) == 1;
  fclose(f);
  return ok;
}

/* PCI path: the bus attribute libfabric reports, else the network interface's device in sysfs
 * (tcp/udp domains are interfaces). Empty when neither resolves (a virtual device). */
static void find_pci(ofi_dev* d, const struct fi_info* i) {
  char p[PATH_MAX];
  d->has_pci = 0;
  if (i->nic && i->nic->bus_attr && i->nic->bus_attr->bus_type == FI_BUS_PCI) {
    const struct fi_pci_attr* a = &i->nic->bus_attr->attr.pci;
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%04x:%02x:%02x.%x", a->domain_id, a->bus_id,
             a->device_id, a->function_id);
    if (realpath(p, d->pci_path)) d->has_pci = 1;
  }
  if (!d->has_pci) {
    snprintf(p, sizeof p, "/sys/class/net/%s/device", d->name);
    if (realpath(p, d->pci_path) && strstr(d->pci_path, "/pci")) d->has_pci = 1;
  }
  if (!d->has_pci) d->pci_path[0] = 0;
}

static int find_speed(const ofi_dev* d, const struct fi_info* i, const char* prov) {
  if (i->nic && i->nic->link_attr && i->nic->link_attr->speed > 0) {
    uint64_t mbps = (uint64_t)i->nic->link_attr->speed / 1000000u;
    if (mbps > 0 && mbps < INT_MAX) return (int)mbps;
  }
  char p[PATH_MAX];
  long v = -1;
  snprintf(p, sizeof p, "/sys/class/net/%s/speed", d->name);
  if (read_sys_int(p, &v) && v > 0 && v < INT_MAX) return (int)v;
  return strcmp(prov, "shm") == 0 ? OFI_SHM_SPEED : OFI_DEFAULT_SPEED;
}

static const char* prov_of(const struct fi_info* i) {
  return i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
}

/* Every provider fi_getinfo offers for our hints, for the message when none fits. */
static void list_available(char* buf, size_t len) {
  struct fi_info* all = NULL;
  int hmem = 0;
  buf[0] = 0;
  if (query(NULL, 0, &all, &hmem) != 0) {
    snprintf(buf, len, "none");
    return;
  }
  size_t used = 0;
  for (struct fi_info* i = all; i; i = i->next) {
    const char* p = prov_of(i);
    if (strstr(buf, p)) continue;
    int k = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", p);
    if (k < 0 || (size_t)k >= len - used) break;
    used += (size_t)k;
  }
  net_ofi_fi.freeinfo(all);
}

/* Keep one entry per domain of the chosen provider. */
static void take_devices(struct fi_info* list, int hmem) {
  const char* spec = param_str(WEFT_PARAM_OFI_DOMAIN);
  int n = 0, nonloop = 0;
  const char* prov = prov_of(list);
  for (struct fi_info* i = list; i && n < OFI_MAX_DEVS; i = i->next) {
    if (strcmp(prov_of(i), prov) != 0) continue;
    const char* dom = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "?";
    int seen = 0;
    for (int k = 0; k < n; k++) seen |= strcmp(ofi_devs[k].name, dom) == 0;
    if (seen) continue;
    if (spec[0] && !socket_ifname_match(spec, dom)) continue;
    int bits = tag_bits_of(i);
    if (bits < OFI_MIN_TAG_BITS) {
      OFI_INFO(NCCL_INIT | NCCL_NET, "NET/OFI: %s domain %s skipped: %d tag bits, %d needed",
               prov, dom, bits, OFI_MIN_TAG_BITS);
      continue;
    }
    ofi_dev* d = &ofi_devs[n];
    memset(d, 0, sizeof *d);
    d->info = net_ofi_fi.dupinfo(i);
    if (d->info == NULL) continue;
    snprintf(d->name, sizeof d->name, "%s", dom);
    d->tag_bits = bits;
    d->hmem = hmem && (i->caps & FI_HMEM);
    d->loopback = is_loopback(i);
    d->pid = getpid();
    find_pci(d, i);
    d->speed = find_speed(d, i, prov);
    nonloop += !d->loopback;
    n++;
  }
  if (!spec[0] && nonloop > 0) {
    /* Loopback only when nothing else is there (or WEFT_OFI_DOMAIN names it). */
    int k = 0;
    for (int j = 0; j < n; j++) {
      if (ofi_devs[j].loopback) {
        net_ofi_fi.freeinfo(ofi_devs[j].info);
        continue;
      }
      if (k != j) ofi_devs[k] = ofi_devs[j];
      k++;
    }
    n = k;
  }
  __atomic_store_n(&ofi_ndev, n, __ATOMIC_RELEASE);
}

static void read_settings(void) {
  net_ofi_cfg.probe_ms = (int)param_int(WEFT_PARAM_OFI_PROBE_MS);
  net_ofi_cfg.peer_timeout_ms = (int)param_int(WEFT_PARAM_OFI_PEER_TIMEOUT_MS);
  net_ofi_cfg.mr_strict = (int)param_int(WEFT_PARAM_OFI_MR_STRICT);
  net_ofi_cfg.mr_cache = (int)param_int(WEFT_PARAM_OFI_MR_CACHE);
  net_ofi_cfg.pid_check = (int)param_int(WEFT_PARAM_OFI_PEER_PID_CHECK);
}

static void log_devices(void) {
  char line[OFI_MAX_DEVS * 96] = "";
  size_t used = 0;
  for (int i = 0; i < ofi_ndev; i++) {
    const ofi_dev* d = &ofi_devs[i];
    int mr = d->info->domain_attr->mr_mode;
    int k = snprintf(line + used, sizeof line - used, " [%d]%s (%s%s%s, %d Mb/s, %d tag bits%s)",
                     i, d->name, d->info->fabric_attr->name ? d->info->fabric_attr->name : "",
                     mr ? ", mr_mode " : "", mr ? fi_tostr(&mr, FI_TYPE_MR_MODE) : "", d->speed,
                     d->tag_bits, d->hmem ? ", CUDA via FI_HMEM" : "");
    if (k < 0 || (size_t)k >= sizeof line - used) break;
    used += (size_t)k;
  }
  uint32_t v = fi_version();
  OFI_INFO(NCCL_INIT | NCCL_NET, "NET/OFI: libfabric %u.%u, provider %s, tagged protocol%s; %d "
           "device(s):%s",
           FI_MAJOR(v), FI_MINOR(v), ofi_prov,
           net_ofi_cfg.mr_strict ? ", strict memory registration (WEFT_OFI_MR_STRICT)" : "",
           ofi_ndev, line);
}

static ncclResult_t discover(void) {
  read_settings();
  int hmem_param = (int)param_int(WEFT_PARAM_OFI_HMEM);
  int want_hmem = hmem_param != 0 && net_ofi_cuda_devices() > 0;
  const char* names = param_str(WEFT_PARAM_OFI_PROVIDER);
  const char* fi_env = getenv("FI_PROVIDER");
  struct fi_info* list = NULL;
  int hmem = 0, rc = -FI_ENODATA;
  char tried[512] = "";

  if (names[0]) {
    char copy[512];
    snprintf(copy, sizeof copy, "%s", names);
    char* save = NULL;
    for (char* tok = strtok_r(copy, ",", &save); tok && !list; tok = strtok_r(NULL, ",", &save)) {
      while (*tok == ' ') tok++;
      rc = query(tok, want_hmem, &list, &hmem);
    }
    snprintf(tried, sizeof tried, "WEFT_OFI_PROVIDER=%s", names);
  } else if (fi_env && fi_env[0]) {
    rc = query(NULL, want_hmem, &list, &hmem);
    snprintf(tried, sizeof tried, "FI_PROVIDER=%s", fi_env);
  } else {
    for (int i = 0; i < NDEFAULT && !list; i++) rc = query(DEFAULT_ORDER[i], want_hmem, &list, &hmem);
    snprintf(tried, sizeof tried, "the default order efa, cxi, opx, psm3, psm2, verbs;ofi_rxm, "
             "tcp;ofi_rxm, sockets");
  }
  if (list == NULL) {
    char avail[256];
    list_available(avail, sizeof avail);
    OFI_WARN("NET/OFI: no libfabric provider from %s offers RDM endpoints with tagged messages "
             "and FI_ORDER_SAS (fi_getinfo: %s); providers that do: %s",
             tried, net_ofi_strerror(rc), avail);
    return ncclSystemError;
  }
  snprintf(ofi_prov, sizeof ofi_prov, "%s", prov_of(list));
  if (hmem_param == 1 && !hmem)
    OFI_WARN("NET/OFI: WEFT_OFI_HMEM=1 but %s offers no FI_HMEM%s; CUDA buffers are not supported",
             ofi_prov, want_hmem ? "" : " (no CUDA device found)");
  take_devices(list, hmem);
  net_ofi_fi.freeinfo(list);
  if (ofi_ndev == 0) {
    const char* spec = param_str(WEFT_PARAM_OFI_DOMAIN);
    OFI_WARN("NET/OFI: provider %s has no usable domain%s%s", ofi_prov,
             spec[0] ? " matching WEFT_OFI_DOMAIN=" : "", spec);
    return ncclSystemError;
  }
  log_devices();
  return ncclSuccess;
}

/* With the global lock held. In a process forked after discovery, an fi_info may carry the
 * parent's source address (shm names endpoints after the pid, and two endpoints of one name
 * collide): ask libfabric again for this device's domain. */
ncclResult_t net_ofi_dev_refresh(ofi_dev* d) {
  if (getpid() == d->pid) return ncclSuccess;
  struct fi_info* list = NULL;
  int hmem = 0;
  int rc = query(ofi_prov, d->hmem, &list, &hmem);
  struct fi_info* found = NULL;
  for (struct fi_info* i = list; i && !found; i = i->next)
    if (strcmp(prov_of(i), ofi_prov) == 0 && i->domain_attr && i->domain_attr->name &&
        strcmp(i->domain_attr->name, d->name) == 0)
      found = i;
  struct fi_info* fresh = found ? net_ofi_fi.dupinfo(found) : NULL;
  if (list) net_ofi_fi.freeinfo(list);
  if (fresh == NULL) {
    OFI_WARN("NET/OFI: %s domain %s is gone in this process (fi_getinfo: %s)", ofi_prov, d->name,
             rc ? net_ofi_strerror(rc) : "no such domain");
    return ncclSystemError;
  }
  net_ofi_fi.freeinfo(d->info);
  d->info = fresh;
  d->pid = getpid();
  return ncclSuccess;
}

ncclResult_t net_ofi_devices_init(void) {
  ncclResult_t res = ncclSuccess;
  net_ofi_global_lock();
  if (ofi_ndev < 0) {
    res = discover();
    if (res != ncclSuccess) ofi_ndev = -1; /* try again at the next init */
  }
  net_ofi_global_unlock();
  return res;
}

int net_ofi_ndevs(void) {
  int n = __atomic_load_n(&ofi_ndev, __ATOMIC_ACQUIRE);
  return n < 0 ? 0 : n;
}

const char* net_ofi_provider(void) { return ofi_prov; }

ofi_dev* net_ofi_dev_get(int dev, const char* fn) {
  if (dev < 0 || dev >= net_ofi_ndevs()) {
    OFI_WARN("NET/OFI: %s: device %d out of range (%d devices)", fn, dev, net_ofi_ndevs());
    return NULL;
  }
  return &ofi_devs[dev];
}

ncclResult_t net_ofi_devices(int* ndev) {
  if (ndev == NULL) {
    OFI_WARN("NET/OFI: devices: ndev is NULL");
    return ncclInternalError;
  }
  *ndev = net_ofi_ndevs();
  return ncclSuccess;
}

/* speed from libfabric's link attributes or sysfs (else an estimate, see OFI_DEFAULT_SPEED);
 * latency unknown (0: the core's default); maxComms bounded by the comm id space. */
ncclResult_t net_ofi_get_properties(int dev, ncclNetProperties_v11_t* props) {
  ofi_dev* d = net_ofi_dev_get(dev, "getProperties");
  if (d == NULL) return ncclInvalidArgument;
  if (props == NULL) {
    OFI_WARN("NET/OFI: getProperties: props is NULL");
    return ncclInternalError;
  }
  weft_net_props_default(props, dev);
  props->name = d->name;
  props->pciPath = d->has_pci ? d->pci_path : NULL;
  /* Distinct domains are distinct ports. */
  uint64_t h = 1469598103934665603ull;
  for (const char* c = d->name; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  props->guid = h ^ (uint64_t)dev;
  props->ptrSupport = NCCL_PTR_HOST | (d->hmem ? NCCL_PTR_CUDA : 0);
  props->regIsGlobal = 1;
  props->speed = d->speed;
  int id_bits = d->tag_bits - 2 - 32;
  if (id_bits > 30) id_bits = 30;
  long comms = 1L << (id_bits - 1);
  props->maxComms = comms > 65536 ? 65536 : (int)comms;
  size_t maxmsg = d->info->ep_attr ? d->info->ep_attr->max_msg_size : 0;
  props->maxP2pBytes = maxmsg && maxmsg < (size_t)NCCL_MAX_NET_SIZE_BYTES
                           ? maxmsg
                           : (size_t)NCCL_MAX_NET_SIZE_BYTES;
  return ncclSuccess;
}
