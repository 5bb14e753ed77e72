/* Connection setup over the shared RDM endpoint. Nothing here blocks.
 *
 * listen: a listen comm (an id on the NIC's endpoint) posts OFI_LISTEN_BUFS receives for
 *   connect requests (tag CTRL | listen id | CONNECT); the handle carries the endpoint address,
 *   the listen id, a random secret and a hash of the provider.
 * connect: the first call creates the send comm, posts its accept-reply and probe receives and
 *   queues a connect request {its id, its endpoint address, the secret, its identity} to the
 *   listener; it keeps the unfinished comm under a stage number written into the caller's
 *   handle. Later calls progress it; it is returned once the accept reply named the receiver's
 *   comm id.
 * accept: takes the oldest arrived request whose secret matches, creates the recv comm, queues
 *   the accept reply {its id, its identity} and returns at once (data for it is matched by tag, so
 *   nothing needs to wait for the reply to arrive). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_ofi.h"

typedef struct ofi_pending {
  struct ofi_pending* next;
  uint64_t stage;
  ofi_comm* comm;
} ofi_pending;

uint32_t net_ofi_prov_hash(const ofi_nic* nic) {
  uint32_t h = 2166136261u;
  for (const char* p = net_ofi_provider(); *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  h = (h ^ nic->info->addr_format) * 16777619u;
  return h;
}

static void fmt_peer(ofi_comm* c, const void* addr, size_t len) {
  size_t alen = sizeof c->peer_str;
  if (net_ofi_fi.av_straddr(c->nic->av, addr, c->peer_str, &alen) == NULL) c->peer_str[0] = 0;
  c->peer_str[sizeof c->peer_str - 1] = 0;
  if (c->peer_str[0] == 0) snprintf(c->peer_str, sizeof c->peer_str, "a %zu-byte address", len);
}

static ofi_ctrl_msg* ctrl_msg_init(ofi_comm* c, int idx, int type, uint32_t dst_id,
                                   uint64_t secret) {
  ofi_ctrl_msg* m = &c->ctrl->msg[idx];
  memset(m, 0, sizeof *m);
  m->magic = OFI_CTRL_MAGIC;
  m->version = OFI_PROTO_VERSION;
  m->type = (uint16_t)type;
  m->src_id = c->id;
  m->dst_id = dst_id;
  m->secret = secret;
  net_ofi_ident_self(&m->ident);
  m->addrlen = (uint32_t)c->nic->addrlen;
  memcpy(m->addr, c->nic->addr, c->nic->addrlen);
  return m;
}

static void queue_ctrl_recv(ofi_comm* c, int idx, int kind, int ctrl_type) {
  ofi_op* op = &c->ctrl_op[idx];
  op->kind = (uint8_t)kind;
  op->buf = &c->ctrl->msg[idx];
  op->len = sizeof(ofi_ctrl_msg);
  op->addr = FI_ADDR_UNSPEC;
  op->tag = ofi_tag(c->nic, OFI_KIND_CTRL, c->id, (uint32_t)ctrl_type);
  op->ignore = 0;
  net_ofi_op_queue(c, op);
}

static void queue_probe_recv(ofi_comm* c) {
  ofi_op* op = &c->probe_rx_op;
  op->buf = c->ctrl->probe_rx;
  op->len = sizeof c->ctrl->probe_rx;
  op->addr = FI_ADDR_UNSPEC;
  op->tag = ofi_tag(c->nic, OFI_KIND_CTRL, c->id, OFI_CTRL_PROBE);
  net_ofi_op_queue(c, op);
}

static void queue_ctrl_send(ofi_comm* c, uint32_t dst_id, int ctrl_type) {
  ofi_op* op = &c->ctrl_op[0];
  op->kind = OFI_OP_CTRL_SEND;
  op->buf = &c->ctrl->msg[0];
  op->len = sizeof(ofi_ctrl_msg);
  op->addr = c->peer;
  op->tag = ofi_tag(c->nic, OFI_KIND_CTRL, dst_id, (uint32_t)ctrl_type);
  net_ofi_op_queue(c, op);
}

/* ---- listen ---- */

ncclResult_t net_ofi_listen(void* ctx, int dev, void* handle, void** listen_comm) {
  ofi_ctx* x = net_ofi_ctx_check(ctx, "listen");
  if (x == NULL) return ncclInternalError;
  if (handle == NULL || listen_comm == NULL) {
    OFI_WARN("NET/OFI: listen: NULL handle or listen comm pointer");
    return ncclInternalError;
  }
  if (net_ofi_dev_get(dev, "listen") == NULL) return ncclInvalidArgument;
  ofi_nic* nic;
  ncclResult_t res = net_ofi_nic_acquire(dev, &nic);
  if (res != ncclSuccess) return res;
  ofi_handle* h = handle;
  if (nic->addrlen > sizeof h->addr) {
    OFI_WARN("NET/OFI: the %s endpoint address takes %zu bytes; a handle carries %zu",
             net_ofi_provider(), nic->addrlen, sizeof h->addr);
    net_ofi_nic_release(nic);
    return ncclSystemError;
  }
  pthread_mutex_lock(&nic->lock);
  ofi_comm* c = NULL;
  res = net_ofi_comm_create(nic, OFI_LISTEN, &c);
  if (res == ncclSuccess) {
    c->secret = weft_net_random64();
    c->prof = x->head.prof;
    snprintf(c->peer_str, sizeof c->peer_str, "any");
    for (int i = 0; i < OFI_LISTEN_BUFS; i++)
      queue_ctrl_recv(c, i, OFI_OP_CONNECT_RECV, OFI_CTRL_CONNECT);
    res = net_ofi_post_queued(c);
  }
  pthread_mutex_unlock(&nic->lock);
  if (res != ncclSuccess) {
    if (c) net_ofi_comm_close(c); /* releases the NIC */
    else net_ofi_nic_release(nic);
    return res;
  }
  memset(h, 0, sizeof *h);
  h->magic = OFI_HANDLE_MAGIC;
  h->version = OFI_PROTO_VERSION;
  h->addrlen = (uint16_t)nic->addrlen;
  h->listen_id = c->id;
  h->prov_hash = net_ofi_prov_hash(nic);
  h->secret = c->secret;
  h->stage = 0;
  memcpy(h->addr, nic->addr, nic->addrlen);
  *listen_comm = c;
  return ncclSuccess;
}

ncclResult_t net_ofi_close_listen(void* listen_comm) {
  ofi_comm* c = net_ofi_comm_check(listen_comm, OFI_LISTEN, "closeListen");
  if (c == NULL) return ncclInternalError;
  net_ofi_comm_close(c);
  return ncclSuccess;
}

/* A connect request landed in buffer op (from the completion dispatch). */
void net_ofi_connect_arrived(ofi_op* op) {
  ofi_comm* l = op->comm;
  int idx = (int)(op - l->ctrl_op);
  if (l->narrived < OFI_LISTEN_BUFS) l->arrived[l->narrived++] = idx;
}

static int request_valid(const ofi_comm* l, const ofi_ctrl_msg* m) {
  return m->magic == OFI_CTRL_MAGIC && m->version == OFI_PROTO_VERSION &&
         m->type == OFI_CTRL_CONNECT && m->dst_id == l->id && m->secret == l->secret &&
         m->addrlen > 0 && m->addrlen <= OFI_ADDR_MAX;
}

ncclResult_t net_ofi_accept(void* listen_comm, void** recv_comm,
                            ncclNetDeviceHandle_v11_t** dev_comm) {
  ofi_comm* l = net_ofi_comm_check(listen_comm, OFI_LISTEN, "accept");
  if (l == NULL || recv_comm == NULL) return ncclInternalError;
  if (dev_comm) *dev_comm = NULL;
  *recv_comm = NULL;
  ofi_nic* nic = l->nic;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&nic->lock);
  res = net_ofi_progress(nic);
  if (res == ncclSuccess) res = net_ofi_post_queued(l);
  while (res == ncclSuccess && l->narrived > 0) {
    int idx = l->arrived[0];
    memmove(l->arrived, l->arrived + 1, (size_t)(l->narrived - 1) * sizeof l->arrived[0]);
    l->narrived--;
    ofi_ctrl_msg m = l->ctrl->msg[idx];
    queue_ctrl_recv(l, idx, OFI_OP_CONNECT_RECV, OFI_CTRL_CONNECT);
    if (!request_valid(l, &m)) {
      OFI_WARN("NET/OFI: accept on %s: dropped a connect request that is not for this listen "
               "comm (magic 0x%x, version %u, type %u, wrong secret or address)",
               nic->d->name, m.magic, m.version, m.type);
      res = net_ofi_post_queued(l);
      continue;
    }
    __atomic_add_fetch(&nic->refs, 1, __ATOMIC_ACQ_REL); /* the listen comm holds one already */
    ofi_comm* c;
    res = net_ofi_comm_create(nic, OFI_RECV, &c);
    if (res != ncclSuccess) {
      __atomic_sub_fetch(&nic->refs, 1, __ATOMIC_ACQ_REL);
      break;
    }
    res = net_ofi_av_lookup(nic, m.addr, m.addrlen, &c->peer);
    fmt_peer(c, m.addr, m.addrlen);
    c->peer_id = m.src_id;
    c->peer_ident = m.ident;
    c->secret = m.secret;
    c->connected = 1;
    c->prof = l->prof;
    if (res == ncclSuccess) {
      ctrl_msg_init(c, 0, OFI_CTRL_ACCEPT, m.src_id, m.secret);
      queue_probe_recv(c);
      queue_ctrl_send(c, m.src_id, OFI_CTRL_ACCEPT);
      res = net_ofi_post_queued(c);
    }
    if (res != ncclSuccess) {
      pthread_mutex_unlock(&nic->lock);
      net_ofi_comm_close(c);
      pthread_mutex_lock(&nic->lock);
      break;
    }
    OFI_INFO(NCCL_NET, "NET/OFI: accepted a connection from %s on %s (comm %u <- %u)",
             c->peer_str, nic->d->name, c->id, c->peer_id);
    *recv_comm = c;
    break;
  }
  if (res == ncclSuccess) res = net_ofi_post_queued(l);
  pthread_mutex_unlock(&nic->lock);
  return res;
}

/* ---- connect ---- */

/* An accept reply landed (from the completion dispatch). */
void net_ofi_accept_arrived(ofi_op* op) {
  ofi_comm* c = op->comm;
  const ofi_ctrl_msg* m = &c->ctrl->msg[1];
  if (m->magic != OFI_CTRL_MAGIC || m->version != OFI_PROTO_VERSION ||
      m->type != OFI_CTRL_ACCEPT || m->dst_id != c->id || m->secret != c->secret) {
    OFI_WARN("NET/OFI: connect on %s: dropped a malformed accept reply", c->nic->d->name);
    queue_ctrl_recv(c, 1, OFI_OP_ACCEPT_RECV, OFI_CTRL_ACCEPT);
    return;
  }
  c->peer_id = m->src_id;
  c->peer_ident = m->ident;
  c->connected = 1;
}

static ncclResult_t handle_check(const ofi_handle* h, const ofi_nic* nic) {
  if (h->magic != OFI_HANDLE_MAGIC || h->version != OFI_PROTO_VERSION) {
    OFI_WARN("NET/OFI: connect: not a net-ofi handle (magic 0x%x, version %u)", h->magic,
             h->version);
    return ncclInvalidArgument;
  }
  if (h->addrlen == 0 || h->addrlen > sizeof h->addr) {
    OFI_WARN("NET/OFI: connect: handle address length %u is invalid", h->addrlen);
    return ncclInvalidArgument;
  }
  if (h->prov_hash != net_ofi_prov_hash(nic)) {
    OFI_WARN("NET/OFI: connect: the handle comes from another provider or address format than "
             "%s on %s (WEFT_OFI_PROVIDER / FI_PROVIDER must agree on all ranks)",
             net_ofi_provider(), nic->d->name);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static ofi_pending* pending_take(ofi_ctx* x, uint64_t stage, int remove) {
  pthread_mutex_lock(&x->head.lock);
  ofi_pending** pp = &x->pending;
  while (*pp && (*pp)->stage != stage) pp = &(*pp)->next;
  ofi_pending* p = *pp;
  if (p && remove) *pp = p->next;
  pthread_mutex_unlock(&x->head.lock);
  return p;
}

static ncclResult_t connect_start(ofi_ctx* x, int dev, ofi_handle* h) {
  ofi_nic* nic;
  ncclResult_t res = net_ofi_nic_acquire(dev, &nic);
  if (res != ncclSuccess) return res;
  res = handle_check(h, nic);
  if (res != ncclSuccess) {
    net_ofi_nic_release(nic);
    return res;
  }
  ofi_pending* p = calloc(1, sizeof *p);
  if (p == NULL) {
    OFI_WARN("NET/OFI: out of memory starting a connect");
    net_ofi_nic_release(nic);
    return ncclSystemError;
  }
  ofi_comm* c = NULL;
  pthread_mutex_lock(&nic->lock);
  res = net_ofi_comm_create(nic, OFI_SEND, &c);
  if (res == ncclSuccess) {
    c->secret = h->secret;
    c->prof = x->head.prof;
    res = net_ofi_av_lookup(nic, h->addr, h->addrlen, &c->peer);
    fmt_peer(c, h->addr, h->addrlen);
  }
  if (res == ncclSuccess) {
    ctrl_msg_init(c, 0, OFI_CTRL_CONNECT, h->listen_id, h->secret);
    queue_ctrl_recv(c, 1, OFI_OP_ACCEPT_RECV, OFI_CTRL_ACCEPT);
    queue_probe_recv(c);
    queue_ctrl_send(c, h->listen_id, OFI_CTRL_CONNECT);
    res = net_ofi_post_queued(c);
  }
  pthread_mutex_unlock(&nic->lock);
  if (res != ncclSuccess) {
    free(p);
    if (c) net_ofi_comm_close(c);
    else net_ofi_nic_release(nic);
    return res;
  }
  pthread_mutex_lock(&x->head.lock);
  p->stage = ++x->next_stage;
  p->comm = c;
  p->next = x->pending;
  x->pending = p;
  pthread_mutex_unlock(&x->head.lock);
  h->stage = p->stage;
  return ncclSuccess;
}

ncclResult_t net_ofi_connect(void* ctx, int dev, void* handle, void** send_comm,
                             ncclNetDeviceHandle_v11_t** dev_comm) {
  ofi_ctx* x = net_ofi_ctx_check(ctx, "connect");
  if (x == NULL || handle == NULL || send_comm == NULL) return ncclInternalError;
  if (dev_comm) *dev_comm = NULL;
  *send_comm = NULL;
  if (net_ofi_dev_get(dev, "connect") == NULL) return ncclInvalidArgument;
  ofi_handle* h = handle;
  ofi_pending* p = h->stage ? pending_take(x, h->stage, 0) : NULL;
  if (p == NULL) return connect_start(x, dev, h);
  ofi_comm* c = p->comm;
  ofi_nic* nic = c->nic;
  pthread_mutex_lock(&nic->lock);
  ncclResult_t res = net_ofi_progress(nic);
  if (res == ncclSuccess) res = net_ofi_post_queued(c);
  if (res == ncclSuccess && c->error != ncclSuccess) res = c->error;
  int done = res == ncclSuccess && c->connected;
  pthread_mutex_unlock(&nic->lock);
  if (res != ncclSuccess || done) {
    pending_take(x, p->stage, 1);
    free(p);
    h->stage = 0;
  }
  if (res != ncclSuccess) {
    net_ofi_comm_close(c);
    return res;
  }
  if (done) {
    OFI_INFO(NCCL_NET, "NET/OFI: connected to %s on %s (comm %u -> %u)", c->peer_str,
             nic->d->name, c->id, c->peer_id);
    *send_comm = c;
  }
  return ncclSuccess;
}

void net_ofi_pending_free_all(ofi_ctx* x) {
  pthread_mutex_lock(&x->head.lock);
  ofi_pending* p = x->pending;
  x->pending = NULL;
  pthread_mutex_unlock(&x->head.lock);
  while (p) {
    ofi_pending* next = p->next;
    net_ofi_comm_close(p->comm);
    free(p);
    p = next;
  }
}
