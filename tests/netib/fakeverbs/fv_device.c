/* fakeverbs devices: the device list, contexts, device/port/GID queries, async events and the
 * *_str helpers. Port and device attributes are those of a typical EDR-class HCA. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fv.h"

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static fv_context* open_ctxs;

FV_EXPORT struct ibv_device** ibv_get_device_list(int* num) {
  int n = fv_ndevs();
  struct ibv_device** list = calloc((size_t)n + 1, sizeof *list);
  if (!list) {
    errno = ENOMEM;
    return NULL;
  }
  for (int i = 0; i < n; i++) list[i] = &fv_dev(i)->dev;
  if (num) *num = n;
  return list;
}

FV_EXPORT void ibv_free_device_list(struct ibv_device** list) { free(list); }

FV_EXPORT const char* ibv_get_device_name(struct ibv_device* device) {
  return device ? device->name : NULL;
}

static fv_device* dev_of(struct ibv_device* device) {
  for (int i = 0; i < fv_ndevs(); i++)
    if (&fv_dev(i)->dev == device) return fv_dev(i);
  return NULL;
}

FV_EXPORT __be64 ibv_get_device_guid(struct ibv_device* device) {
  fv_device* d = dev_of(device);
  return d ? htobe64(d->guid) : 0;
}

FV_EXPORT struct ibv_context* ibv_open_device(struct ibv_device* device) {
  fv_device* d = dev_of(device);
  if (!d) {
    errno = ENODEV;
    return NULL;
  }
  fv_context* c = calloc(1, sizeof *c);
  int p[2];
  if (!c || pipe2(p, O_CLOEXEC) != 0) {
    free(c);
    errno = ENOMEM;
    return NULL;
  }
  c->dev = d;
  c->ctx.device = device;
  c->ctx.cmd_fd = -1;
  c->ctx.async_fd = p[0];
  c->pipe_w = p[1];
  c->ctx.num_comp_vectors = 1;
  c->ctx.abi_compat = NULL; /* not an extended context: inline verbs use the exported calls */
  c->ctx.ops.poll_cq = fv_poll_cq;
  c->ctx.ops.post_send = fv_post_send;
  c->ctx.ops.post_recv = fv_post_recv;
  pthread_mutex_init(&c->ctx.mutex, NULL);
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_lock(&ctx_lock);
  c->next = open_ctxs;
  open_ctxs = c;
  pthread_mutex_unlock(&ctx_lock);
  fv_trace("open %s", d->dev.name);
  return &c->ctx;
}

FV_EXPORT int ibv_close_device(struct ibv_context* context) {
  fv_context* c = (fv_context*)context;
  pthread_mutex_lock(&ctx_lock);
  for (fv_context** pp = &open_ctxs; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&ctx_lock);
  close(c->ctx.async_fd);
  close(c->pipe_w);
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->ctx.mutex);
  free(c);
  return 0;
}

FV_EXPORT int ibv_query_device(struct ibv_context* context, struct ibv_device_attr* a) {
  fv_context* c = (fv_context*)context;
  if (!c || !a) return EINVAL;
  memset(a, 0, sizeof *a);
  snprintf(a->fw_ver, sizeof a->fw_ver, "fakeverbs-1.0");
  a->node_guid = htobe64(c->dev->guid);
  a->sys_image_guid = htobe64(c->dev->guid);
  a->max_mr_size = 1ull << 40;
  a->page_size_cap = 4096;
  a->vendor_id = 0x15b3;
  a->vendor_part_id = 0xfa4e;
  a->max_qp = 1 << 16;
  a->max_qp_wr = FV_MAX_QP_WR;
  a->max_sge = FV_MAX_SGE;
  a->max_sge_rd = FV_MAX_SGE;
  a->max_cq = 1 << 16;
  a->max_cqe = FV_MAX_CQE;
  a->max_mr = 1 << 16;
  a->max_pd = 1 << 12;
  a->max_qp_rd_atom = 16;
  a->max_qp_init_rd_atom = 16;
  a->max_res_rd_atom = 1 << 20;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_pkeys = 1;
  a->phys_port_cnt = (uint8_t)c->dev->nports;
  return 0;
}

/* The exported (non-inline) ibv_query_port fills the compat layout, a prefix of
 * struct ibv_port_attr; this fills every field of that prefix. */
FV_EXPORT int ibv_query_port(struct ibv_context* context, uint8_t port_num,
                             struct _compat_ibv_port_attr* attr) {
  fv_context* c = (fv_context*)context;
  if (!c || !attr) return EINVAL;
  if (port_num < 1 || port_num > c->dev->nports) return EINVAL;
  const fv_port* p = &c->dev->port[port_num];
  struct ibv_port_attr a;
  memset(&a, 0, sizeof a);
  a.state = fv_port_is_up(c->dev, port_num) ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = p->mtu;
  a.gid_tbl_len = FV_GID_TBL;
  a.port_cap_flags = c->dev->eth ? 0x04010000u : 0x02514868u;
  a.max_msg_sz = FV_MAX_MSG;
  a.pkey_tbl_len = 1;
  a.lid = p->lid;
  a.sm_lid = c->dev->eth ? 0 : 1;
  a.max_vl_num = 4;
  a.subnet_timeout = 18;
  a.active_width = 2;  /* 4x */
  a.active_speed = 32; /* EDR: 25 Gb/s per lane */
  a.phys_state = a.state == IBV_PORT_ACTIVE ? 5 : 3;
  a.link_layer = c->dev->eth ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  memcpy(attr, &a, sizeof a);
  return 0;
}

FV_EXPORT int ibv_query_gid(struct ibv_context* context, uint8_t port_num, int index,
                            union ibv_gid* gid) {
  fv_context* c = (fv_context*)context;
  if (!c || !gid || port_num < 1 || port_num > c->dev->nports || index < 0 || index >= FV_GID_TBL)
    return -1;
  const fv_port* p = &c->dev->port[port_num];
  if (index < p->ngid)
    *gid = p->gid[index];
  else
    memset(gid, 0, sizeof *gid);
  return 0;
}

FV_EXPORT int _ibv_query_gid_ex(struct ibv_context* context, uint32_t port_num,
                                uint32_t gid_index, struct ibv_gid_entry* entry, uint32_t flags,
                                size_t entry_size) {
  fv_context* c = (fv_context*)context;
  if (!c || !entry || flags != 0 || entry_size < sizeof *entry) return EINVAL;
  if (port_num < 1 || port_num > (uint32_t)c->dev->nports || gid_index >= FV_GID_TBL) return EINVAL;
  const fv_port* p = &c->dev->port[port_num];
  if (gid_index >= (uint32_t)p->ngid) return ENODATA;
  memset(entry, 0, sizeof *entry);
  entry->gid = p->gid[gid_index];
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = p->gid_type[gid_index];
  entry->ndev_ifindex = c->dev->eth ? 1 : 0;
  return 0;
}

/* ---- async events ---- */

int fv_async_post(fv_context* c, struct ibv_async_event ev) {
  pthread_mutex_lock(&c->lock);
  if (c->ev_tail - c->ev_head >= FV_MAX_EVENTS) {
    pthread_mutex_unlock(&c->lock);
    return -1;
  }
  c->events[c->ev_tail++ % FV_MAX_EVENTS] = ev;
  if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_REQ_ERR ||
      ev.event_type == IBV_EVENT_QP_ACCESS_ERR || ev.event_type == IBV_EVENT_COMM_EST ||
      ev.event_type == IBV_EVENT_SQ_DRAINED || ev.event_type == IBV_EVENT_PATH_MIG ||
      ev.event_type == IBV_EVENT_PATH_MIG_ERR || ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED)
    __atomic_add_fetch(&((fv_qp*)ev.element.qp)->events_unacked, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&c->lock);
  char b = 1;
  ssize_t w = write(c->pipe_w, &b, 1);
  (void)w;
  fv_trace("async event %s", ibv_event_type_str(ev.event_type));
  return 0;
}

void fv_async_post_device(fv_device* dev, struct ibv_async_event ev) {
  pthread_mutex_lock(&ctx_lock);
  for (fv_context* c = open_ctxs; c; c = c->next)
    if (c->dev == dev) fv_async_post(c, ev);
  pthread_mutex_unlock(&ctx_lock);
}

/* Blocks on async_fd (honouring O_NONBLOCK the caller may have set on it). */
FV_EXPORT int ibv_get_async_event(struct ibv_context* context, struct ibv_async_event* event) {
  fv_context* c = (fv_context*)context;
  char b;
  for (;;) {
    ssize_t r = read(c->ctx.async_fd, &b, 1);
    if (r == 1) break;
    if (r < 0 && errno == EINTR) continue;
    return -1; /* errno from read (EAGAIN when non-blocking) */
  }
  pthread_mutex_lock(&c->lock);
  if (c->ev_head == c->ev_tail) {
    pthread_mutex_unlock(&c->lock);
    errno = EAGAIN;
    return -1;
  }
  *event = c->events[c->ev_head++ % FV_MAX_EVENTS];
  pthread_mutex_unlock(&c->lock);
  return 0;
}

FV_EXPORT void ibv_ack_async_event(struct ibv_async_event* event) {
  switch (event->event_type) {
    case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR: case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST: case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED: {
      fv_qp* q = (fv_qp*)event->element.qp;
      pthread_mutex_lock(&q->lock);
      __atomic_sub_fetch(&q->events_unacked, 1, __ATOMIC_ACQ_REL);
      pthread_cond_broadcast(&q->cond);
      pthread_mutex_unlock(&q->lock);
      break;
    }
    default:
      break;
  }
}

/* ---- strings ---- */

FV_EXPORT const char* ibv_wc_status_str(enum ibv_wc_status status) {
  static const char* const s[] = {
      "success", "local length error", "local QP operation error", "local EEC operation error",
      "local protection error", "work request flushed (QP in error)", "memory window bind error",
      "bad response", "local access error", "remote invalid request",
      "remote access error (R_Key, rights or bounds)", "remote operation error",
      "transport retry count exceeded", "RNR retry count exceeded", "local RDD violation",
      "remote invalid RD request", "aborted", "invalid EE context number",
      "invalid EE context state", "fatal error", "response timeout", "general error",
      "tag matching error", "tag matching rendezvous incomplete"};
  return (unsigned)status < sizeof s / sizeof s[0] ? s[status] : "unknown status";
}

FV_EXPORT const char* ibv_event_type_str(enum ibv_event_type event) {
  static const char* const s[] = {
      "CQ overrun", "QP fatal error", "QP invalid request error", "QP access violation",
      "communication established", "send queue drained", "path migrated",
      "path migration failed", "device fatal error", "port active", "port down", "LID changed",
      "P_Key changed", "subnet manager changed", "SRQ fatal error", "SRQ limit reached",
      "last WQE reached", "client reregister", "GID table changed", "WQ fatal error"};
  return (unsigned)event < sizeof s / sizeof s[0] ? s[event] : "unknown event";
}

FV_EXPORT const char* ibv_port_state_str(enum ibv_port_state state) {
  static const char* const s[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return (unsigned)state < sizeof s / sizeof s[0] ? s[state] : "unknown state";
}
