/* An opened device: fabric, domain, completion queue, address vector and the one RDM endpoint
 * every comm of the process on that device shares. Opened at the first listen/connect, closed
 * when no comm uses it and no context is alive (so a communicator's teardown leaves no fds).
 * Also the completion dispatch (net_ofi_progress), the address-vector cache and comm ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_ofi.h"
#include "util/shm_sweep.h"

static pthread_mutex_t ofi_global = PTHREAD_MUTEX_INITIALIZER;
void net_ofi_global_lock(void) { pthread_mutex_lock(&ofi_global); }
void net_ofi_global_unlock(void) { pthread_mutex_unlock(&ofi_global); }

#define OFI_WARN_CALL(nic, call, rc)                                                          \
  OFI_WARN("NET/OFI: %s on %s (%s) failed: %s", (call), (nic)->d->name, net_ofi_provider(), \
           net_ofi_strerror((int)(rc)))

static void close_fid(struct fid* f, const char* what, const ofi_nic* nic) {
  if (f == NULL) return;
  int rc = net_ofi_fi.close(f);
  if (rc == -FI_EBUSY)
    /* Seen with tcp;ofi_rxm after a transfer failed mid-way: the provider keeps internal
     * objects of that transfer. They stay until exit; nothing of ours is affected. */
    OFI_INFO(NCCL_NET, "NET/OFI: %s on %s (%s): %s (resources the provider kept after a failed "
             "transfer)", what, nic->d->name, net_ofi_provider(), net_ofi_strerror(rc));
  else if (rc)
    OFI_WARN_CALL(nic, what, rc);
}

static void nic_close(ofi_nic* nic) {
  /* The endpoint first: afterwards the provider writes into no buffer of ours. A provider that
   * wants endpoint-bound registrations closed first says -FI_EBUSY. */
  if (nic->ep) {
    int rc = net_ofi_fi.close(&nic->ep->fid);
    if (rc == -FI_EBUSY) {
      net_ofi_mr_close_all(nic, 0);
      rc = net_ofi_fi.close(&nic->ep->fid);
    }
    if (rc) OFI_WARN_CALL(nic, "fi_close(endpoint)", rc);
    nic->ep = NULL;
  }
  while (nic->comms) net_ofi_comm_free(nic->comms);
  net_ofi_mr_close_all(nic, 1);
  close_fid(nic->av ? &nic->av->fid : NULL, "fi_close(av)", nic);
  close_fid(nic->cq ? &nic->cq->fid : NULL, "fi_close(cq)", nic);
  close_fid(nic->domain ? &nic->domain->fid : NULL, "fi_close(domain)", nic);
  close_fid(nic->fabric ? &nic->fabric->fid : NULL, "fi_close(fabric)", nic);
  if (nic->info) net_ofi_fi.freeinfo(nic->info);
  free(nic->avs);
  pthread_mutex_destroy(&nic->lock);
  nic->d->nic = NULL;
  free(nic);
}

/* The pid in the name of a region of ours (/dev/shm/weft-ofi-<pid>-<8 hex>, to which the shm
 * provider appends ":<n>:<n>"), else 0. */
static int region_owner(const char* name) {
  int pid, used = 0;
  unsigned id;
  if (sscanf(name, "weft-ofi-%d-%8x%n", &pid, &id, &used) != 2) return 0;
  return name[used] == ':' || name[used] == '\0' ? pid : 0;
}

static void log_removed(const char* path, int pid, void* arg) {
  (void)arg;
  OFI_INFO(NCCL_INIT | NCCL_NET, "NET/OFI: removed /dev/shm%s, an shm region left by exited "
           "process %d", path, pid);
}

#define REGION_ORPHAN_AGE_S 10

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;
static void sweep_regions(void) {
  shm_sweep_orphans(region_owner, REGION_ORPHAN_AGE_S, log_removed, NULL);
}

/* shm names an endpoint's shared-memory region after the source address, by default the pid; a
 * region left behind by a killed process makes fi_enable fail with -FI_EBUSY for the next process
 * that gets that pid. A name of our own, unique per open, avoids it; and since the provider never
 * removes the regions of a process that died (16 MiB of RAM each), the first open of a process
 * removes those of exited processes. */
static int unique_shm_name(struct fi_info* info) {
  static const char prefix[] = "fi_shm://";
  if (info->addr_format != FI_ADDR_STR || info->src_addr == NULL ||
      strncmp(info->src_addr, prefix, sizeof prefix - 1) != 0)
    return 1;
  pthread_once(&sweep_once, sweep_regions);
  char name[64];
  int n = snprintf(name, sizeof name, "%sweft-ofi-%d-%08llx", prefix, (int)getpid(),
                   (unsigned long long)(weft_net_random64() & 0xffffffffull));
  char* copy = strdup(name);
  if (copy == NULL) return 0;
  free(info->src_addr);
  info->src_addr = copy;
  info->src_addrlen = (size_t)n + 1;
  return 1;
}

static ncclResult_t nic_open(int dev, ofi_dev* d, ofi_nic** out) {
  ofi_nic* nic = calloc(1, sizeof *nic);
  if (nic == NULL) {
    OFI_WARN("NET/OFI: out of memory opening device %d", dev);
    return ncclSystemError;
  }
  nic->dev = dev;
  nic->d = d;
  nic->pid = getpid();
  pthread_mutex_init(&nic->lock, NULL);
  d->nic = nic;
  ncclResult_t res = ncclSystemError;
  int rc;
  struct fi_info* info = NULL;
  if (net_ofi_dev_refresh(d) != ncclSuccess) goto fail;
  info = nic->info = net_ofi_fi.dupinfo(d->info);
  if (info == NULL || !unique_shm_name(info)) {
    OFI_WARN("NET/OFI: out of memory copying the fi_info of %s", d->name);
    goto fail;
  }
  nic->mr_mode = (uint64_t)info->domain_attr->mr_mode;
  if (net_ofi_cfg.mr_strict)
    nic->mr_mode |= FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_ALLOCATED;
  nic->mr_access = FI_SEND | FI_RECV;
  if ((rc = net_ofi_fi.fabric(info->fabric_attr, &nic->fabric, NULL)) != 0) {
    OFI_WARN_CALL(nic, "fi_fabric", rc);
    goto fail;
  }
  if ((rc = net_ofi_fi.domain(nic->fabric, info, &nic->domain, NULL)) != 0) {
    OFI_WARN_CALL(nic, "fi_domain", rc);
    goto fail;
  }
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  if ((rc = net_ofi_fi.cq_open(nic->domain, &cq_attr, &nic->cq, NULL)) != 0) {
    OFI_WARN_CALL(nic, "fi_cq_open", rc);
    goto fail;
  }
  struct fi_av_attr av_attr = {.type = info->domain_attr->av_type != FI_AV_UNSPEC
                                           ? info->domain_attr->av_type
                                           : FI_AV_TABLE};
  if ((rc = net_ofi_fi.av_open(nic->domain, &av_attr, &nic->av, NULL)) != 0) {
    OFI_WARN_CALL(nic, "fi_av_open", rc);
    goto fail;
  }
  if ((rc = net_ofi_fi.endpoint(nic->domain, info, &nic->ep, NULL)) != 0) {
    OFI_WARN_CALL(nic, "fi_endpoint", rc);
    goto fail;
  }
  if ((rc = net_ofi_fi.ep_bind(nic->ep, &nic->cq->fid, FI_TRANSMIT | FI_RECV)) != 0) {
    OFI_WARN_CALL(nic, "fi_ep_bind(cq)", rc);
    goto fail;
  }
  if ((rc = net_ofi_fi.ep_bind(nic->ep, &nic->av->fid, 0)) != 0) {
    OFI_WARN_CALL(nic, "fi_ep_bind(av)", rc);
    goto fail;
  }
  if ((rc = net_ofi_fi.enable(nic->ep)) != 0) {
    OFI_WARN_CALL(nic, "fi_enable", rc);
    goto fail;
  }
  nic->addrlen = sizeof nic->addr;
  if ((rc = net_ofi_fi.getname(&nic->ep->fid, nic->addr, &nic->addrlen)) != 0) {
    if (rc == -FI_ETOOSMALL)
      OFI_WARN("NET/OFI: the endpoint address of %s (%s) takes %zu bytes, more than the %d a "
               "handle carries",
               d->name, net_ofi_provider(), nic->addrlen, OFI_ADDR_MAX);
    else
      OFI_WARN_CALL(nic, "fi_getname", rc);
    goto fail;
  }
  nic->tag_bits = d->tag_bits;
  nic->id_bits = nic->tag_bits - 2 - 32;
  if (nic->id_bits > 30) nic->id_bits = 30;
  nic->next_id = (uint32_t)(weft_net_random64() & ((1u << nic->id_bits) - 1));
  nic->next_key = 1;
  int tx = (int)(info->tx_attr->size ? info->tx_attr->size : 256);
  int rx = (int)(info->rx_attr->size ? info->rx_attr->size : 256);
  net_ofi_mr_hmem_check(nic);
  nic->tx_limit = tx > 2 * OFI_QUEUE_RESERVE ? tx - OFI_QUEUE_RESERVE : tx / 2;
  nic->rx_limit = rx > 2 * OFI_QUEUE_RESERVE ? rx - OFI_QUEUE_RESERVE : rx / 2;
  OFI_INFO(NCCL_NET, "NET/OFI: opened %s (%s): %zu-byte address, tx/rx queues %d/%d, mr_mode 0x%llx",
           d->name, net_ofi_provider(), nic->addrlen, tx, rx, (unsigned long long)nic->mr_mode);
  *out = nic;
  return ncclSuccess;
fail:
  nic_close(nic);
  return res;
}

/* With the global lock held: the device's NIC, opened if needed. A NIC inherited through fork()
 * belongs to the parent (its endpoint, its connections): it is left alone and a new one opened. */
static ncclResult_t nic_get(int dev, ofi_dev* d) {
  if (d->nic && d->nic->pid != getpid()) d->nic = NULL;
  return d->nic ? ncclSuccess : nic_open(dev, d, &d->nic);
}

ncclResult_t net_ofi_nics_open(void) {
  ncclResult_t res = ncclSuccess;
  net_ofi_global_lock();
  for (int i = 0; i < net_ofi_ndevs() && res == ncclSuccess; i++)
    res = nic_get(i, net_ofi_dev_get(i, "init"));
  net_ofi_global_unlock();
  return res;
}

ncclResult_t net_ofi_nic_acquire(int dev, ofi_nic** out) {
  ofi_dev* d = net_ofi_dev_get(dev, "listen/connect");
  if (d == NULL) return ncclInvalidArgument;
  net_ofi_global_lock();
  ncclResult_t res = nic_get(dev, d);
  if (res == ncclSuccess) {
    __atomic_add_fetch(&d->nic->refs, 1, __ATOMIC_ACQ_REL);
    *out = d->nic;
  }
  net_ofi_global_unlock();
  return res;
}

void net_ofi_nic_release(ofi_nic* nic) {
  net_ofi_global_lock();
  if (__atomic_sub_fetch(&nic->refs, 1, __ATOMIC_ACQ_REL) == 0 && net_ofi_live_contexts() == 0)
    nic_close(nic);
  net_ofi_global_unlock();
}

/* With the global lock held (the last context went away). */
void net_ofi_nics_idle_close(void) {
  for (int i = 0; i < net_ofi_ndevs(); i++) {
    ofi_dev* d = net_ofi_dev_get(i, "finalize");
    if (d && d->nic && d->nic->pid == getpid() &&
        __atomic_load_n(&d->nic->refs, __ATOMIC_ACQUIRE) == 0)
      nic_close(d->nic);
  }
}

uint32_t net_ofi_nic_new_id(ofi_nic* nic) {
  uint32_t mask = (1u << nic->id_bits) - 1;
  for (;;) {
    uint32_t id = nic->next_id++ & mask;
    if (id == 0) {
      nic->id_wrapped = 1;
      continue;
    }
    if (!nic->id_wrapped) return id;
    int used = 0;
    for (ofi_comm* c = nic->comms; c && !used; c = c->next) used = c->id == id;
    if (!used) return id;
  }
}

ncclResult_t net_ofi_av_lookup(ofi_nic* nic, const void* addr, size_t len, fi_addr_t* out) {
  for (int i = 0; i < nic->nav; i++) {
    if (nic->avs[i].len == len && memcmp(nic->avs[i].addr, addr, len) == 0) {
      *out = nic->avs[i].fi;
      return ncclSuccess;
    }
  }
  if (len > OFI_ADDR_MAX) {
    OFI_WARN("NET/OFI: peer address of %zu bytes is too long", len);
    return ncclInternalError;
  }
  if (nic->nav == nic->avcap) {
    int cap = nic->avcap ? 2 * nic->avcap : 16;
    ofi_av_entry* n = realloc(nic->avs, (size_t)cap * sizeof *n);
    if (n == NULL) {
      OFI_WARN("NET/OFI: out of memory growing the address cache");
      return ncclSystemError;
    }
    nic->avs = n;
    nic->avcap = cap;
  }
  fi_addr_t fa = FI_ADDR_NOTAVAIL;
  int rc = net_ofi_fi.av_insert(nic->av, addr, 1, &fa, 0, NULL);
  if (rc != 1) {
    OFI_WARN("NET/OFI: fi_av_insert of a peer address on %s (%s) failed: %s", nic->d->name,
             net_ofi_provider(), rc < 0 ? net_ofi_strerror(rc) : "address not inserted");
    return ncclSystemError;
  }
  ofi_av_entry* e = &nic->avs[nic->nav++];
  memcpy(e->addr, addr, len);
  e->len = len;
  e->fi = fa;
  *out = fa;
  return ncclSuccess;
}

enum { CQ_BATCH = 16, CQ_ROUNDS = 8 };

ncclResult_t net_ofi_progress(ofi_nic* nic) {
  if (nic->cq_error) return ncclSystemError;
  struct fi_cq_tagged_entry e[CQ_BATCH];
  for (int round = 0; round < CQ_ROUNDS; round++) {
    ssize_t n = net_ofi_fi.cq_read(nic->cq, e, CQ_BATCH);
    if (n > 0) {
      for (ssize_t i = 0; i < n; i++)
        if (e[i].op_context) net_ofi_op_complete(e[i].op_context, e[i].len, NULL);
      if (n < CQ_BATCH) break;
      continue;
    }
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry err;
      memset(&err, 0, sizeof err);
      ssize_t r = net_ofi_fi.cq_readerr(nic->cq, &err, 0);
      if (r == 1) {
        if (err.op_context) {
          net_ofi_op_complete(err.op_context, err.len, &err);
        } else {
          OFI_WARN("NET/OFI: completion error without an operation on %s (%s): %s", nic->d->name,
                   net_ofi_provider(), net_ofi_strerror(err.err));
        }
        continue;
      }
      if (r == -FI_EAGAIN) break;
      n = r;
    }
    nic->cq_error = (int)n;
    OFI_WARN("NET/OFI: fi_cq_read on %s (%s) failed: %s", nic->d->name, net_ofi_provider(),
             net_ofi_strerror((int)n));
    return ncclSystemError;
  }
  return ncclSuccess;
}
