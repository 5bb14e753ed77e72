/* Loading the verbs table (see net_ib_verbs.h). The library stays loaded for the life of the
 * process once it loaded: providers it pulls in may keep threads and handlers around. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "net_ib_verbs.h"
#include "util/param.h"

static pthread_mutex_t verbs_lock = PTHREAD_MUTEX_INITIALIZER;
static ib_verbs lib_table;
static const ib_verbs* active; /* atomic */
static const ib_verbs* overridden;
static int tried;
static char load_error[320];

static int data_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  return ibv_post_send(qp, wr, bad);
}

static int data_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
  return ibv_post_recv(qp, wr, bad);
}

static int data_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
  return ibv_poll_cq(cq, n, wc);
}

/* dlsym into a function-pointer member. */
#define IB_SYM(dl, member, name, required)                                              \
  do {                                                                                  \
    void* p_ = dlsym((dl), (name));                                                     \
    memcpy(&t.member, &p_, sizeof p_);                                                  \
    if (p_ == NULL && (required)) {                                                     \
      snprintf(load_error, sizeof load_error, "%s has no %s (not a verbs library?)", path, \
               (name));                                                                 \
      return -1;                                                                        \
    }                                                                                   \
  } while (0)

static int fill(void* dl, const char* path) {
  ib_verbs t;
  memset(&t, 0, sizeof t);
  IB_SYM(dl, get_device_list, "ibv_get_device_list", 1);
  IB_SYM(dl, free_device_list, "ibv_free_device_list", 1);
  IB_SYM(dl, get_device_name, "ibv_get_device_name", 1);
  IB_SYM(dl, get_device_guid, "ibv_get_device_guid", 1);
  IB_SYM(dl, open_device, "ibv_open_device", 1);
  IB_SYM(dl, close_device, "ibv_close_device", 1);
  IB_SYM(dl, query_device, "ibv_query_device", 1);
  IB_SYM(dl, query_port, "ibv_query_port", 1);
  IB_SYM(dl, query_gid, "ibv_query_gid", 1);
  IB_SYM(dl, query_gid_ex, "_ibv_query_gid_ex", 0);
  IB_SYM(dl, alloc_pd, "ibv_alloc_pd", 1);
  IB_SYM(dl, dealloc_pd, "ibv_dealloc_pd", 1);
  IB_SYM(dl, reg_mr, "ibv_reg_mr", 1);
  IB_SYM(dl, reg_dmabuf_mr, "ibv_reg_dmabuf_mr", 0);
  IB_SYM(dl, dereg_mr, "ibv_dereg_mr", 1);
  IB_SYM(dl, create_cq, "ibv_create_cq", 1);
  IB_SYM(dl, destroy_cq, "ibv_destroy_cq", 1);
  IB_SYM(dl, create_qp, "ibv_create_qp", 1);
  IB_SYM(dl, modify_qp, "ibv_modify_qp", 1);
  IB_SYM(dl, destroy_qp, "ibv_destroy_qp", 1);
  IB_SYM(dl, get_async_event, "ibv_get_async_event", 1);
  IB_SYM(dl, ack_async_event, "ibv_ack_async_event", 1);
  IB_SYM(dl, wc_status_str, "ibv_wc_status_str", 0);
  IB_SYM(dl, event_type_str, "ibv_event_type_str", 0);
  IB_SYM(dl, port_state_str, "ibv_port_state_str", 0);
  t.post_send = data_post_send;
  t.post_recv = data_post_recv;
  t.poll_cq = data_poll_cq;
  lib_table = t;
  return 0;
}

const ib_verbs* net_ib_verbs_load(char* why, size_t len) {
  pthread_mutex_lock(&verbs_lock);
  if (overridden) {
    pthread_mutex_unlock(&verbs_lock);
    return overridden;
  }
  if (!tried) {
    tried = 1;
    const char* path = param_str(WEFT_PARAM_IB_VERBS_LIB);
    void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
      const char* e = dlerror();
      snprintf(load_error, sizeof load_error, "cannot load %s (%s)", path, e ? e : "dlopen failed");
    } else if (fill(dl, path) != 0) {
      dlclose(dl);
    } else {
      __atomic_store_n(&active, &lib_table, __ATOMIC_RELEASE);
    }
  }
  const ib_verbs* t = active;
  if (t == NULL && why) snprintf(why, len, "%s", load_error);
  pthread_mutex_unlock(&verbs_lock);
  return t;
}

const ib_verbs* net_ib_verbs(void) {
  const ib_verbs* o = __atomic_load_n(&overridden, __ATOMIC_ACQUIRE);
  return o ? o : __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

void net_ib_verbs_override(const ib_verbs* table) {
  pthread_mutex_lock(&verbs_lock);
  __atomic_store_n(&overridden, table, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&verbs_lock);
}

const char* net_ib_wc_status_str(enum ibv_wc_status status) {
  const ib_verbs* v = net_ib_verbs();
  if (v && v->wc_status_str) return v->wc_status_str(status);
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "work request flushed";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    default: return "completion error";
  }
}

const char* net_ib_event_str(enum ibv_event_type event) {
  const ib_verbs* v = net_ib_verbs();
  if (v && v->event_type_str) return v->event_type_str(event);
  switch (event) {
    case IBV_EVENT_PORT_ERR: return "port error";
    case IBV_EVENT_PORT_ACTIVE: return "port active";
    case IBV_EVENT_DEVICE_FATAL: return "device fatal error";
    case IBV_EVENT_QP_FATAL: return "QP fatal error";
    case IBV_EVENT_CQ_ERR: return "CQ error";
    default: return "async event";
  }
}
