/* The libfabric RMA group (rma_ofi.h): init, devices and properties (the net plugin's devices,
 * as GIN proxy devices), listen (an RMA endpoint and its directory), connect, the progress
 * thread, and close. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net_export.h"
#include "rma_ofi.h"

#define RO_CTX_MAGIC 0x726f637478000001ull
#define RO_LISTEN_MAGIC 0x726f6c7374000001ull
#define RO_GROUP_MAGIC 0x726f677270000001ull
#define RO_HANDLE_MAGIC 0x7765667452446d61ull

typedef struct {
  uint64_t magic;
  uint64_t dir_base, dir_key;
  ofi_ident ident;
  uint32_t addrlen, pad;
  uint8_t addr[RO_ADDR_MAX];
} ro_handle;
_Static_assert(sizeof(ro_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

typedef struct {
  uint64_t magic;
  ro_ep* e; /* NULL once connect took it */
} ro_listen;

typedef struct {
  uint64_t magic;
} ro_init_ctx;

ncclResult_t rma_ofi_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger) {
  (void)comm_id;
  if (ctx == NULL) return ncclInvalidArgument;
  net_ofi_set_logger(logger);
  ncclResult_t r = net_ofi_devices_init();
  if (r != ncclSuccess) return r;
  ro_init_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  c->magic = RO_CTX_MAGIC;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t rma_ofi_finalize(void* ctx) {
  ro_init_ctx* c = ctx;
  if (c == NULL || c->magic != RO_CTX_MAGIC) {
    OFI_WARN("RMA/OFI: finalize: %p is not a context init returned", ctx);
    return ncclInvalidArgument;
  }
  c->magic = 0;
  free(c);
  return ncclSuccess;
}

ncclResult_t rma_ofi_devices(int* ndev) {
  if (ndev == NULL) return ncclInvalidArgument;
  return net_ofi_devices(ndev);
}

/* The net side's properties (its exported v12 view), as a host-driven one-sided device. */
ncclResult_t rma_ofi_get_properties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL) return ncclInvalidArgument;
  ncclResult_t r = ncclNetPlugin_v12.getProperties(dev, props);
  if (r != ncclSuccess) return r;
  props->ptrSupport = NCCL_PTR_HOST; /* CUDA memory: not wired here (the net side has it) */
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

uint64_t ro_entry_check(const ro_entry* e) {
  return (e->base * 31 + e->key) * 31 + e->size * 7 + e->seq + 0x5a5a5a5a5a5a5a5aull;
}

static void ep_close(ro_ep* e) {
  if (e == NULL) return;
  if (e->ep) fi_close(&e->ep->fid);
  if (e->dir_mr) fi_close(&e->dir_mr->fid);
  if (e->av) fi_close(&e->av->fid);
  if (e->cq) fi_close(&e->cq->fid);
  if (e->domain) fi_close(&e->domain->fid);
  if (e->fabric) fi_close(&e->fabric->fid);
  if (e->info) fi_freeinfo(e->info);
  free(e->dir);
  free(e);
}

/* Register [base, base+len) for local and remote access on e (binding it to the endpoint where
 * the provider asks). */
ncclResult_t ro_mr_reg(ro_ep* e, void* base, size_t len, struct fid_mr** out) {
  struct iovec iov = {base, len};
  struct fi_mr_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  attr.requested_key = (e->mr_mode & FI_MR_PROV_KEY) ? 0 : e->next_key++;
  struct fid_mr* mr = NULL;
  int rc = fi_mr_regattr(e->domain, &attr, 0, &mr);
  if (rc == 0 && (e->mr_mode & FI_MR_ENDPOINT)) {
    rc = fi_mr_bind(mr, &e->ep->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
  }
  if (rc != 0) {
    OFI_WARN("RMA/OFI: registering %zu bytes at %p: %s", len, base, fi_strerror(-rc));
    if (mr) fi_close(&mr->fid);
    return ncclSystemError;
  }
  *out = mr;
  return ncclSuccess;
}

uint64_t ro_remote_base(const ro_ep* e, const void* p) {
  return (e->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)p : 0;
}

#define RO_TRY(call, what)                                                          \
  do {                                                                              \
    int rc_ = (call);                                                               \
    if (rc_ != 0) {                                                                 \
      OFI_WARN("RMA/OFI: %s on %s (%s): %s", what, d->name, prov, fi_strerror(-rc_)); \
      goto fail;                                                                    \
    }                                                                               \
  } while (0)

static ncclResult_t ep_open(int dev, ro_ep** out) {
  ofi_dev* d = net_ofi_dev_get(dev, "RMA listen");
  if (d == NULL) return ncclInvalidArgument;
  const char* prov = d->info->fabric_attr->prov_name;
  ro_ep* e = calloc(1, sizeof *e);
  struct fi_info* h = fi_allocinfo();
  if (e == NULL || h == NULL) {
    free(e);
    if (h) fi_freeinfo(h);
    return ncclSystemError;
  }
  h->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                            FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_SAFE;
  h->fabric_attr->prov_name = strdup(prov);
  h->domain_attr->name = strdup(d->info->domain_attr->name);
  int rc = fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, h, &e->info);
  fi_freeinfo(h);
  if (rc != 0) {
    OFI_WARN("RMA/OFI: %s (%s) offers no RDM endpoint with FI_RMA and FI_ATOMIC (%s): this "
             "provider cannot carry one-sided operations", d->name, prov, fi_strerror(-rc));
    free(e);
    return ncclSystemError;
  }
  e->mr_mode = (uint64_t)e->info->domain_attr->mr_mode;
  e->next_key = 1;
  if (e->info->tx_attr->inject_size < sizeof(ro_entry)) {
    OFI_WARN("RMA/OFI: %s (%s) injects only %zu bytes", d->name, prov,
             e->info->tx_attr->inject_size);
    goto fail;
  }
  RO_TRY(fi_fabric(e->info->fabric_attr, &e->fabric, NULL), "fi_fabric");
  RO_TRY(fi_domain(e->fabric, e->info, &e->domain, NULL), "fi_domain");
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
  RO_TRY(fi_cq_open(e->domain, &cq_attr, &e->cq, NULL), "fi_cq_open");
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  RO_TRY(fi_av_open(e->domain, &av_attr, &e->av, NULL), "fi_av_open");
  RO_TRY(fi_endpoint(e->domain, e->info, &e->ep, NULL), "fi_endpoint");
  RO_TRY(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  RO_TRY(fi_ep_bind(e->ep, &e->av->fid, 0), "fi_ep_bind(av)");
  RO_TRY(fi_enable(e->ep), "fi_enable");
  e->addrlen = RO_ADDR_MAX;
  RO_TRY(fi_getname(&e->ep->fid, e->addr, &e->addrlen), "fi_getname");
  e->dir = calloc(RO_MAX_RANKS * RO_DIR_SLOTS, sizeof(ro_entry));
  if (e->dir == NULL) goto fail;
  if (ro_mr_reg(e, e->dir, RO_MAX_RANKS * RO_DIR_SLOTS * sizeof(ro_entry), &e->dir_mr) !=
      ncclSuccess)
    goto fail;
  *out = e;
  return ncclSuccess;
fail:
  ep_close(e);
  return ncclSystemError;
}

ncclResult_t rma_ofi_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  ro_init_ctx* c = ctx;
  if (c == NULL || c->magic != RO_CTX_MAGIC || handle == NULL || listen_comm == NULL) {
    OFI_WARN("RMA/OFI: listen: bad argument (ctx %p, handle %p, listenComm %p)", ctx, handle,
             (void*)listen_comm);
    return ncclInvalidArgument;
  }
  ro_listen* l = calloc(1, sizeof *l);
  if (l == NULL) return ncclSystemError;
  ncclResult_t r = ep_open(dev, &l->e);
  if (r != ncclSuccess) {
    free(l);
    return r;
  }
  ro_handle h = {.magic = RO_HANDLE_MAGIC, .addrlen = (uint32_t)l->e->addrlen,
                 .dir_base = ro_remote_base(l->e, l->e->dir), .dir_key = fi_mr_key(l->e->dir_mr)};
  memcpy(h.addr, l->e->addr, l->e->addrlen);
  net_ofi_ident_self(&h.ident);
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof h);
  l->magic = RO_LISTEN_MAGIC;
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t rma_ofi_close_listen(void* listen_comm) {
  ro_listen* l = listen_comm;
  if (l == NULL || l->magic != RO_LISTEN_MAGIC) {
    OFI_WARN("RMA/OFI: closeListen: %p is not a listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  ep_close(l->e);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}

ro_group* ro_group_check(void* p, const char* fn) {
  ro_group* g = p;
  if (g == NULL || g->magic != RO_GROUP_MAGIC) {
    OFI_WARN("RMA/OFI: %s: %p is not a group connect returned", fn, p);
    return NULL;
  }
  return g;
}

void ro_progress_locked(ro_group* g) {
  struct fi_cq_entry ents[16];
  for (;;) {
    ssize_t n = fi_cq_read(g->e->cq, ents, 16);
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry err;
      memset(&err, 0, sizeof err);
      if (fi_cq_readerr(g->e->cq, &err, 0) <= 0) break;
      ro_req* q = err.op_context;
      OFI_WARN("RMA/OFI: rank %d: a %s to rank %d failed: %s", g->rank,
               q ? (q->kind == RO_GET ? "get" : "put") : "transfer", q ? q->peer : -1,
               fi_strerror(err.err));
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
      if (q) {
        if (q->kind != RO_GET && g->outstanding[q->peer] > 0) g->outstanding[q->peer]--;
        q->in_fabric = 0;
        q->waiting = 0;
        q->error = ncclRemoteError;
        __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
      }
      continue;
    }
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) {
      ro_req* q = ents[i].op_context;
      if (q == NULL) continue;
      q->in_fabric = 0;
      if (q->kind != RO_GET && g->outstanding[q->peer] > 0) g->outstanding[q->peer]--;
      if (!q->waiting) __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
    }
  }
  ro_finish_waiting(g);
}

/* Lock held: every 200 ms, fail what waits on a peer whose process ended on this host. */
static void check_peers(ro_group* g) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  if (!net_ofi_cfg.pid_check || now < g->next_check) return;
  g->next_check = now + 0.2;
  for (ro_req* q = g->reqs; q; q = q->next) {
    int p = q->peer;
    if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) || p == g->rank) continue;
    if (!g->dead[p] && !net_ofi_ident_gone(&g->ident[p])) continue;
    if (!g->dead[p]) {
      OFI_WARN("RMA/OFI: rank %d: rank %d's process ended; what waits on it fails", g->rank, p);
      g->dead[p] = 1;
      g->outstanding[p] = 0;
      __atomic_store_n(&g->error, 1, __ATOMIC_RELEASE);
    }
    q->waiting = 0;
    q->error = ncclRemoteError;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
  }
}

static void* progress_main(void* arg) {
  ro_group* g = arg;
  while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g->lock);
    ro_progress_locked(g);
    check_peers(g);
    pthread_mutex_unlock(&g->lock);
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void group_free(ro_group* g) {
  if (g->e && g->e->ep) { /* first: nothing the provider still holds may be freed under it */
    fi_close(&g->e->ep->fid);
    g->e->ep = NULL;
  }
  for (uint32_t i = 0; i < g->nmrs; i++)
    if (g->mrs[i]) {
      fi_close(&g->mrs[i]->mr->fid);
      free(g->mrs[i]->remote);
      free(g->mrs[i]);
    }
  while (g->reqs) {
    ro_req* q = g->reqs;
    g->reqs = q->next;
    free(q);
  }
  ep_close(g->e);
  pthread_mutex_destroy(&g->lock);
  free(g->mrs);
  free(g->peers);
  free(g->dir_base);
  free(g->dir_key);
  free(g->outstanding);
  free(g->dead);
  free(g->ident);
  g->magic = 0;
  free(g);
}

ncclResult_t rma_ofi_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                             void** coll) {
  ro_init_ctx* c = ctx;
  ro_listen* l = listen_comm;
  if (c == NULL || c->magic != RO_CTX_MAGIC || l == NULL || l->magic != RO_LISTEN_MAGIC ||
      l->e == NULL || handles == NULL || coll == NULL || nranks < 1 || nranks > RO_MAX_RANKS ||
      rank < 0 || rank >= nranks) {
    OFI_WARN("RMA/OFI: connect: bad argument (ctx %p, listenComm %p%s, handles %p, nranks %d "
             "(at most %d), rank %d)", ctx, listen_comm, l && l->magic == RO_LISTEN_MAGIC &&
             l->e == NULL ? " already connected" : "", (void*)handles, nranks, RO_MAX_RANKS, rank);
    return ncclInvalidArgument;
  }
  for (int p = 0; p < nranks; p++) {
    const ro_handle* h = handles[p];
    if (h == NULL || h->magic != RO_HANDLE_MAGIC || h->addrlen > RO_ADDR_MAX) {
      OFI_WARN("RMA/OFI: connect: the handle of rank %d is not one listen wrote", p);
      return ncclInvalidArgument;
    }
  }
  ro_group* g = calloc(1, sizeof *g);
  if (g == NULL) return ncclSystemError;
  g->magic = RO_GROUP_MAGIC;
  g->nranks = nranks;
  g->rank = rank;
  g->peers = calloc((size_t)nranks, sizeof *g->peers);
  g->dir_base = calloc((size_t)nranks, sizeof(uint64_t));
  g->dir_key = calloc((size_t)nranks, sizeof(uint64_t));
  g->outstanding = calloc((size_t)nranks, sizeof(int));
  g->dead = calloc((size_t)nranks, sizeof(int));
  g->ident = calloc((size_t)nranks, sizeof(ofi_ident));
  pthread_mutex_init(&g->lock, NULL);
  g->e = l->e;
  l->e = NULL; /* the group owns the endpoint now */
  if (g->peers == NULL || g->dir_base == NULL || g->dir_key == NULL || g->outstanding == NULL ||
      g->dead == NULL || g->ident == NULL) {
    group_free(g);
    return ncclSystemError;
  }
  for (int p = 0; p < nranks; p++) {
    const ro_handle* h = handles[p];
    g->dir_base[p] = h->dir_base;
    g->dir_key[p] = h->dir_key;
    g->ident[p] = h->ident;
    int n = fi_av_insert(g->e->av, h->addr, 1, &g->peers[p], 0, NULL);
    if (n != 1) {
      OFI_WARN("RMA/OFI: connect: rank %d: the address of rank %d was not accepted (%s)", rank,
               p, n < 0 ? fi_strerror(-n) : "fi_av_insert");
      group_free(g);
      return ncclSystemError;
    }
  }
  if (pthread_create(&g->progress, NULL, progress_main, g) != 0) {
    group_free(g);
    return ncclSystemError;
  }
  g->thread = 1;
  *coll = g;
  return ncclSuccess;
}

ncclResult_t rma_ofi_close_coll(void* coll) {
  ro_group* g = ro_group_check(coll, "closeColl");
  if (g == NULL) return ncclInvalidArgument;
  /* Let what is in flight finish for a moment (peers may still be reading from us). */
  for (int i = 0; i < 5000; i++) {
    pthread_mutex_lock(&g->lock);
    int busy = 0;
    for (int p = 0; p < g->nranks; p++) busy += g->outstanding[p] > 0;
    pthread_mutex_unlock(&g->lock);
    if (!busy) break;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
  if (g->thread) pthread_join(g->progress, NULL);
  group_free(g);
  return ncclSuccess;
}
