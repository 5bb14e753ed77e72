/* Devices of the socket plugin: the interfaces socket_find_interfaces picks (NCCL_SOCKET_IFNAME,
 * NCCL_SOCKET_FAMILY), found once per process, and their properties. Also the logger every file
 * of the plugin writes through. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_socket_internal.h"
#include "util/log.h"

#define NS_DEFAULT_SPEED 10000 /* Mb/s when sysfs does not say (lo, some virtual NICs) */

static ncclDebugLogger_t ns_log_fn;

void net_socket_set_logger(ncclDebugLogger_t logger) {
  if (logger) __atomic_store_n(&ns_log_fn, logger, __ATOMIC_RELEASE);
}

ncclDebugLogger_t net_socket_logger(void) {
  ncclDebugLogger_t l = __atomic_load_n(&ns_log_fn, __ATOMIC_ACQUIRE);
  return l ? l : (ncclDebugLogger_t)weft_log;
}

static pthread_mutex_t ns_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static ns_dev ns_devs[NS_MAX_DEVS];
static int ns_ndev = -1; /* -1: not looked yet */

/* /sys/class/net/<if>/speed in Mb/s; unknown (lo, "-1", unreadable) gives the default. */
static int read_speed(const char* ifname) {
  char path[320];
  snprintf(path, sizeof path, "/sys/class/net/%s/speed", ifname);
  FILE* f = fopen(path, "r");
  if (!f) return NS_DEFAULT_SPEED;
  long v = -1;
  if (fscanf(f, "%ld", &v) != 1) v = -1;
  fclose(f);
  return v > 0 && v < INT_MAX ? (int)v : NS_DEFAULT_SPEED;
}

ncclResult_t net_socket_devices_init(void) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&ns_dev_lock);
  if (__atomic_load_n(&ns_ndev, __ATOMIC_ACQUIRE) < 0) {
    char names[NS_MAX_DEVS][IF_NAMESIZE];
    weft_sockaddr addrs[NS_MAX_DEVS];
    int n = 0;
    res = socket_find_interfaces(names, addrs, NS_MAX_DEVS, &n);
    if (res == ncclSuccess) {
      char line[NS_MAX_DEVS * (IF_NAMESIZE + WEFT_SOCKADDR_STRLEN + 8)] = "";
      size_t used = 0;
      for (int i = 0; i < n; i++) {
        memcpy(ns_devs[i].name, names[i], IF_NAMESIZE);
        ns_devs[i].addr = addrs[i];
        ns_devs[i].speed = read_speed(names[i]);
        char link[300];
        snprintf(link, sizeof link, "/sys/class/net/%s/device", names[i]);
        if (realpath(link, ns_devs[i].pci_path) == NULL) ns_devs[i].pci_path[0] = '\0';
        char a[WEFT_SOCKADDR_STRLEN];
        int k = snprintf(line + used, sizeof line - used, " [%d]%s:%s", i, names[i],
                         socket_addr_str(&addrs[i], a, sizeof a));
        if (k > 0 && (size_t)k < sizeof line - used) used += (size_t)k;
      }
      __atomic_store_n(&ns_ndev, n, __ATOMIC_RELEASE);
      NS_INFO(NCCL_INIT | NCCL_NET, "NET/Socket: using%s", line);
    }
  }
  pthread_mutex_unlock(&ns_dev_lock);
  return res;
}

int net_socket_ndevs(void) {
  int n = __atomic_load_n(&ns_ndev, __ATOMIC_ACQUIRE);
  return n < 0 ? 0 : n;
}

const ns_dev* net_socket_dev_get(int dev) {
  if (dev < 0 || dev >= net_socket_ndevs()) {
    NS_WARN("NET/Socket: device %d out of range (%d devices)", dev, net_socket_ndevs());
    return NULL;
  }
  return &ns_devs[dev];
}

ncclResult_t net_socket_devices(int* ndev) {
  if (ndev == NULL) {
    NS_WARN("NET/Socket: devices: ndev is NULL");
    return ncclInternalError;
  }
  *ndev = net_socket_ndevs();
  return ncclSuccess;
}

ncclResult_t net_socket_get_properties(int dev, ncclNetProperties_v11_t* props) {
  const ns_dev* d = net_socket_dev_get(dev);
  if (d == NULL) return ncclInternalError;
  if (props == NULL) {
    NS_WARN("NET/Socket: getProperties: props is NULL");
    return ncclInternalError;
  }
  /* Host memory only, no global registration, 1 TiB messages: the defaults. */
  weft_net_props_default(props, dev);
  props->name = (char*)d->name;
  props->pciPath = d->pci_path[0] ? (char*)d->pci_path : NULL;
  props->speed = d->speed;
  return ncclSuccess;
}
