/* Devices of the IB plugin: every active port (InfiniBand or Ethernet/RoCE link layer) of every
 * verbs device that NCCL_IB_HCA selects, in the order verbs lists them. Found when the first
 * context is initialised, released when the last is finalised. Also the logger every file of
 * the plugin writes through, and the device properties. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ib_internal.h"
#include "util/log.h"
#include "util/param.h"

static ncclDebugLogger_t ib_log_fn;

void net_ib_set_logger(ncclDebugLogger_t logger) {
  if (logger) __atomic_store_n(&ib_log_fn, logger, __ATOMIC_RELEASE);
}

ncclDebugLogger_t net_ib_logger(void) {
  ncclDebugLogger_t l = __atomic_load_n(&ib_log_fn, __ATOMIC_ACQUIRE);
  return l ? l : (ncclDebugLogger_t)weft_log;
}

static ib_dev ib_devs[IB_MAX_DEVS];
static ib_hw* ib_hws[IB_MAX_DEVS];
static int ib_nhw;
static int ib_found; /* devices found by the discovery under way (its thread only) */
static int ib_ndev;  /* atomic: devices published */

int net_ib_qps_per_conn(void) {
  int n = (int)param_int(WEFT_PARAM_IB_QPS_PER_CONN);
  if (n <= 0) n = (int)param_int(WEFT_PARAM_IB_QPS_PER_CONNECTION);
  return n < 1 ? 1 : n > IB_MAX_QPS ? IB_MAX_QPS : n;
}

/* Link speed in Mb/s from the port's width and per-lane speed codes. */
static int port_speed(const struct ibv_port_attr* a) {
  int lane;
  switch (a->active_speed) {
    case 1: lane = 2500; break;
    case 2: lane = 5000; break;
    case 4: case 8: lane = 10000; break;
    case 16: lane = 14000; break;
    case 32: lane = 25000; break;
    case 64: lane = 50000; break;
    case 128: lane = 100000; break;
    default: lane = 0; break;
  }
  int width;
  switch (a->active_width) {
    case 1: width = 1; break;
    case 2: width = 4; break;
    case 4: width = 8; break;
    case 8: width = 12; break;
    case 16: width = 2; break;
    default: width = 0; break;
  }
  return lane && width ? lane * width : 10000;
}

/* /sys/class/infiniband/<dev>/device, resolved; NULL for virtual or unknown devices. */
static char* pci_path(const char* name) {
  char p[PATH_MAX], real[PATH_MAX];
  snprintf(p, sizeof p, "/sys/class/infiniband/%s/device", name);
  if (realpath(p, real) == NULL) return NULL;
  return strdup(real);
}

static int gpu_present(void) {
  return access("/proc/driver/nvidia/gpus", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
}

static int peermem_loaded(void) {
  return access("/sys/module/nvidia_peermem", F_OK) == 0 ||
         access("/sys/module/nv_peer_mem", F_OK) == 0 ||
         access("/sys/kernel/mm/memory_peers/nv_mem/version", F_OK) == 0;
}

/* dma-buf registration is supported when the call exists and rejects a bad fd as a bad fd
 * (rather than as an unsupported operation). */
static int probe_dmabuf(const ib_verbs* v, ib_hw* hw) {
  if (v->reg_dmabuf_mr == NULL) return 0;
  errno = 0;
  struct ibv_mr* mr = v->reg_dmabuf_mr(hw->pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  if (mr) {
    v->dereg_mr(mr);
    return 1;
  }
  return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT && errno != ENOSYS;
}

static int ptr_support(const ib_hw* hw) {
  int gdr = (int)param_int(WEFT_PARAM_IB_GDR);
  int cuda = gdr == 1 || (gdr < 0 && gpu_present() && (peermem_loaded() || hw->dmabuf));
  int p = NCCL_PTR_HOST;
  if (cuda) p |= NCCL_PTR_CUDA;
  if (cuda && hw->dmabuf) p |= NCCL_PTR_DMABUF;
  return p;
}

static void hw_release(const ib_verbs* v, ib_hw* hw) {
  net_ib_async_stop(hw);
  if (hw->pd) {
    int e = v->dealloc_pd(hw->pd);
    if (e) {
      /* Something still lives on it (a comm not closed): keep the device open. */
      IB_WARN("NET/IB: %s: ibv_dealloc_pd failed: %s (a connection was not closed?)", hw->name,
              strerror(e));
      return;
    }
  }
  if (hw->ctx) v->close_device(hw->ctx);
  free(hw);
}

/* Ports of one verbs device; the device is kept open when one of them is used. */
static void open_device(const ib_verbs* v, struct ibv_device* device, const ib_hca_spec* spec,
                        char* line, size_t line_len, size_t* used) {
  const char* name = v->get_device_name(device);
  if (name == NULL || ib_found >= IB_MAX_DEVS) return;
  int wanted = 0;
  for (int p = 1; p < 256 && !wanted; p++) wanted = net_ib_hca_match(spec, name, p);
  if (!wanted) {
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s: excluded by NCCL_IB_HCA", name);
    return;
  }
  ib_hw* hw = calloc(1, sizeof *hw);
  if (hw == NULL) return;
  snprintf(hw->name, sizeof hw->name, "%s", name);
  hw->stop_fd = -1;
  hw->ctx = v->open_device(device);
  if (hw->ctx == NULL) {
    IB_WARN("NET/IB: %s: ibv_open_device failed: %s", name, strerror(errno));
    free(hw);
    return;
  }
  int e = v->query_device(hw->ctx, &hw->attr);
  if (e) {
    IB_WARN("NET/IB: %s: ibv_query_device failed: %s", name, strerror(e));
    v->close_device(hw->ctx);
    free(hw);
    return;
  }
  int first = ib_found;
  for (int port = 1; port <= hw->attr.phys_port_cnt && ib_found < IB_MAX_DEVS; port++) {
    struct ibv_port_attr pa;
    memset(&pa, 0, sizeof pa);
    e = v->query_port(hw->ctx, (uint8_t)port, &pa);
    if (e) {
      IB_WARN("NET/IB: %s:%d: ibv_query_port failed: %s", name, port, strerror(e));
      continue;
    }
    if (!net_ib_hca_match(spec, name, port)) continue;
    if (pa.state != IBV_PORT_ACTIVE) {
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s:%d: port is %s, skipped", name, port,
              v->port_state_str ? v->port_state_str(pa.state) : "not active");
      continue;
    }
    if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND && pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: %s:%d: link layer %d unsupported, skipped", name,
              port, pa.link_layer);
      continue;
    }
    ib_dev* d = &ib_devs[ib_found];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->hw = hw;
    d->port = port;
    d->link_layer = pa.link_layer;
    d->lid = pa.lid;
    d->mtu = pa.active_mtu;
    d->max_msg = pa.max_msg_sz ? pa.max_msg_sz : (1u << 30);
    d->speed = port_speed(&pa);
    d->guid = be64toh(v->get_device_guid(device));
    if (net_ib_gid_select(d, pa.gid_tbl_len) != ncclSuccess) continue;
    ib_found++;
  }
  if (ib_found == first) {
    v->close_device(hw->ctx);
    free(hw);
    return;
  }
  hw->pd = v->alloc_pd(hw->ctx);
  if (hw->pd == NULL) {
    IB_WARN("NET/IB: %s: ibv_alloc_pd failed: %s", name, strerror(errno));
    ib_found = first;
    v->close_device(hw->ctx);
    free(hw);
    return;
  }
  hw->dmabuf = probe_dmabuf(v, hw);
  if (net_ib_async_start(hw) != ncclSuccess) {
    ib_found = first;
    hw_release(v, hw);
    return;
  }
  ib_hws[ib_nhw++] = hw;
  char* path = pci_path(name);
  for (int i = first; i < ib_found; i++) {
    ib_dev* d = &ib_devs[i];
    d->pci_path = path ? strdup(path) : NULL;
    d->ptr_support = ptr_support(hw);
    char g[64];
    int k = snprintf(line + *used, line_len - *used, " [%d]%s:%d/%s%s%s", i, d->name, d->port,
                     d->link_layer == IBV_LINK_LAYER_INFINIBAND ? "IB" : "RoCE",
                     d->link_layer == IBV_LINK_LAYER_ETHERNET ? "/GID " : "",
                     d->link_layer == IBV_LINK_LAYER_ETHERNET
                         ? net_ib_gid_str(&d->gid, g, sizeof g)
                         : "");
    if (k > 0 && (size_t)k < line_len - *used) *used += (size_t)k;
  }
  free(path);
}

void net_ib_devices_open(void) {
  ib_found = 0;
  ib_nhw = 0;
  if (param_int(WEFT_PARAM_IB_DISABLE)) {
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: 0 devices: disabled by NCCL_IB_DISABLE=1");
    return;
  }
  char why[384];
  const ib_verbs* v = net_ib_verbs_load(why, sizeof why);
  if (v == NULL) {
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: 0 devices: %s", why);
    return;
  }
  int n = 0;
  struct ibv_device** list = v->get_device_list(&n);
  if (list == NULL || n <= 0) {
    if (list == NULL)
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: 0 devices: no RDMA device on this host "
              "(ibv_get_device_list: %s)", strerror(errno));
    else
      IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: 0 devices: no RDMA device on this host");
    if (list) v->free_device_list(list);
    return;
  }
  const char* hca = param_str(WEFT_PARAM_IB_HCA);
  ib_hca_spec spec;
  net_ib_hca_parse(hca, &spec);
  char line[IB_MAX_DEVS * 96] = "";
  size_t used = 0;
  for (int i = 0; i < n; i++) open_device(v, list[i], &spec, line, sizeof line, &used);
  v->free_device_list(list);
  if (ib_found == 0) {
    IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: 0 devices: no active port%s%s among %d RDMA device%s",
            *hca ? " selected by NCCL_IB_HCA=" : "", hca, n, n == 1 ? "" : "s");
    return;
  }
  __atomic_store_n(&ib_ndev, ib_found, __ATOMIC_RELEASE);
  IB_INFO(NCCL_INIT | NCCL_NET, "NET/IB: using%s; %d QP%s per connection", line,
          net_ib_qps_per_conn(), net_ib_qps_per_conn() == 1 ? "" : "s");
}

void net_ib_devices_close(void) {
  const ib_verbs* v = net_ib_verbs();
  __atomic_store_n(&ib_ndev, 0, __ATOMIC_RELEASE);
  for (int i = 0; i < ib_found; i++) {
    free(ib_devs[i].pci_path);
    ib_devs[i].pci_path = NULL;
  }
  ib_found = 0;
  for (int i = 0; i < ib_nhw; i++)
    if (v) hw_release(v, ib_hws[i]);
  ib_nhw = 0;
}

int net_ib_ndevs(void) { return __atomic_load_n(&ib_ndev, __ATOMIC_ACQUIRE); }

ib_dev* net_ib_dev_get(int dev) {
  if (dev < 0 || dev >= net_ib_ndevs()) {
    IB_WARN("NET/IB: device %d out of range (%d devices)", dev, net_ib_ndevs());
    return NULL;
  }
  return &ib_devs[dev];
}

ncclResult_t net_ib_devices(int* ndev) {
  if (ndev == NULL) {
    IB_WARN("NET/IB: devices: ndev is NULL");
    return ncclInternalError;
  }
  *ndev = net_ib_ndevs();
  return ncclSuccess;
}

ncclResult_t net_ib_get_properties(int dev, ncclNetProperties_v11_t* props) {
  ib_dev* d = net_ib_dev_get(dev);
  if (d == NULL) return ncclInternalError;
  if (props == NULL) {
    IB_WARN("NET/IB: getProperties: props is NULL");
    return ncclInternalError;
  }
  int nqps = net_ib_qps_per_conn();
  weft_net_props_default(props, dev);
  props->name = d->name;
  props->pciPath = d->pci_path;
  props->guid = d->guid;
  props->ptrSupport = d->ptr_support;
  props->speed = d->speed;
  props->port = d->port;
  int per_comm = nqps + 1;
  int max_qp = d->hw->attr.max_qp > 0 ? d->hw->attr.max_qp : 65536;
  props->maxComms = max_qp / per_comm > 0 ? max_qp / per_comm : 1;
  /* One RDMA write per QP per message: the port's message limit times the QPs, at most 1 GiB. */
  uint64_t maxp2p = (uint64_t)d->max_msg * (uint64_t)nqps;
  props->maxP2pBytes = maxp2p < (uint64_t)MAX_NET_SIZE ? (size_t)maxp2p : (size_t)MAX_NET_SIZE;
  return ncclSuccess;
}
