/* The one table through which net-ib reaches verbs. It is filled at the first init by
 * dlopen of libibverbs.so.1 (WEFT_IB_VERBS_LIB names another library: tests point it at a fake),
 * so the plugin loads on hosts without rdma-core and reports 0 devices with the reason. Only
 * <infiniband/verbs.h> types are used from rdma-core at build time; no symbol is linked.
 *
 * Entries are the exported libibverbs functions, except the data path (post_send, post_recv,
 * poll_cq), which verbs.h defines inline through the provider's ops in ibv_context: the table
 * holds small functions calling those, so a replacement table can intercept them too.
 * Member names drop the ibv_ prefix: verbs.h defines some ibv_* names as function-like macros. */
#ifndef WEFT_NET_IB_VERBS_H
#define WEFT_NET_IB_VERBS_H

#include <infiniband/verbs.h>
#include <stddef.h>

typedef struct {
  struct ibv_device** (*get_device_list)(int* num);
  void (*free_device_list)(struct ibv_device** list);
  const char* (*get_device_name)(struct ibv_device* device);
  __be64 (*get_device_guid)(struct ibv_device* device);
  struct ibv_context* (*open_device)(struct ibv_device* device);
  int (*close_device)(struct ibv_context* context);
  int (*query_device)(struct ibv_context* context, struct ibv_device_attr* attr);
  /* The exported ibv_query_port: fills the leading, long-stable part of ibv_port_attr. */
  int (*query_port)(struct ibv_context* context, uint8_t port, struct ibv_port_attr* attr);
  int (*query_gid)(struct ibv_context* context, uint8_t port, int index, union ibv_gid* gid);
  /* Optional (rdma-core 35+): NULL when absent; the GID type then comes from sysfs. */
  int (*query_gid_ex)(struct ibv_context* context, uint32_t port, uint32_t index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size);
  struct ibv_pd* (*alloc_pd)(struct ibv_context* context);
  int (*dealloc_pd)(struct ibv_pd* pd);
  struct ibv_mr* (*reg_mr)(struct ibv_pd* pd, void* addr, size_t length, int access);
  /* Optional (rdma-core 34+): NULL when absent. */
  struct ibv_mr* (*reg_dmabuf_mr)(struct ibv_pd* pd, uint64_t offset, size_t length,
                                  uint64_t iova, int fd, int access);
  int (*dereg_mr)(struct ibv_mr* mr);
  struct ibv_cq* (*create_cq)(struct ibv_context* context, int cqe, void* cq_context,
                              struct ibv_comp_channel* channel, int comp_vector);
  int (*destroy_cq)(struct ibv_cq* cq);
  struct ibv_qp* (*create_qp)(struct ibv_pd* pd, struct ibv_qp_init_attr* attr);
  int (*modify_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask);
  int (*destroy_qp)(struct ibv_qp* qp);
  int (*get_async_event)(struct ibv_context* context, struct ibv_async_event* event);
  void (*ack_async_event)(struct ibv_async_event* event);
  /* Optional: the plugin has its own wording when absent. */
  const char* (*wc_status_str)(enum ibv_wc_status status);
  const char* (*event_type_str)(enum ibv_event_type event);
  const char* (*port_state_str)(enum ibv_port_state state);
  /* Data path. */
  int (*post_send)(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad);
  int (*post_recv)(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad);
  int (*poll_cq)(struct ibv_cq* cq, int n, struct ibv_wc* wc);
} ib_verbs;

/* Load the table once per process (thread-safe). NULL when verbs are not usable here; why then
 * says so in one sentence ("cannot load libibverbs.so.1: …"). */
const ib_verbs* net_ib_verbs_load(char* why, size_t len);
/* The loaded table (only after a successful load). */
const ib_verbs* net_ib_verbs(void);
/* Tests: use this table instead of the library's (NULL goes back to the library). */
void net_ib_verbs_override(const ib_verbs* table);

/* Text for completion statuses and events, with or without the library's helpers. */
const char* net_ib_wc_status_str(enum ibv_wc_status status);
const char* net_ib_event_str(enum ibv_event_type event);

#endif
