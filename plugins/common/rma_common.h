/* What the one-sided (RMA/GIN) tables of weft's net plugins share: the context createContext
 * hands out, the properties of a host-driven proxy device, and the exported tables built from
 * one set of calls named p##_init … p##_finalize (rma_socket_*, rma_ib_*, rma_ofi_*): v15 is the
 * implementation, v14 the same calls without option flags, v13 (and GIN v13, the same table) GIN's
 * config, with no device handle (a proxy device: nothing for GPU code) and every signal strong. */
#ifndef WEFT_RMA_COMMON_H
#define WEFT_RMA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_rma.h"

/* A context of a group: createContext's answer (one per communicator that uses the group). */
typedef struct {
  uint64_t magic;
  void* coll; /* the plugin's group */
  int ncontexts;
} weft_rma_ctx;

/* createContext: a context of coll with config's nContexts (≥ 1; else a WARN from who, e.g.
 * "RMA/IB", and ncclInvalidArgument). */
ncclResult_t weft_rma_ctx_new(void* coll, const ncclRmaConfig_v15_t* config, uint64_t magic,
                              ncclDebugLogger_t log, const char* who, void** ctx);
/* p as a context with that magic and context in range, else NULL and a WARN naming fn. */
weft_rma_ctx* weft_rma_ctx_check(void* p, int context, uint64_t magic, ncclDebugLogger_t log,
                                 const char* who, const char* fn);
ncclResult_t weft_rma_ctx_free(void* p, uint64_t magic, ncclDebugLogger_t log, const char* who);

/* A net device's v11 properties as an RMA device (v12 view): a GIN proxy device driven by the
 * host, host memory, one request at a time, no rail or plane. */
void weft_rma_props_from_v11(const ncclNetProperties_v11_t* p11, int dev,
                             ncclNetProperties_v12_t* props);

/* A put's or get's arguments that need no registration: rank within nranks, a request pointer.
 * ncclInvalidArgument and a WARN from who naming fn otherwise. */
ncclResult_t weft_rma_check_target(ncclDebugLogger_t log, const char* who, const char* fn,
                                   uint32_t rank, int nranks, void** req);
/* size bytes from loc_off must fit a local registration of loc_size bytes, and from rem_off the
 * peer's of rem_size; else ncclInvalidArgument and a WARN. */
ncclResult_t weft_rma_check_fit(ncclDebugLogger_t log, const char* who, const char* fn,
                                size_t size, uint64_t loc_off, uint64_t loc_size,
                                uint64_t rem_off, uint64_t rem_size);

/* ---- exported tables (in a plugin's exports file; WEFT_NET_EXPORT from net_export.h) ---- */

#define WEFT_RMA_CALLS_HEAD(p) p##_init, p##_devices, p##_get_properties, p##_listen, p##_connect
#define WEFT_RMA_CALLS_MID(p) p##_dereg, p##_destroy_context, p##_close_coll, p##_close_listen
#define WEFT_RMA_CALLS_TAIL(p) p##_iflush, p##_test, p##_progress, p##_last_error, p##_finalize

/* ncclRmaPlugin_v15 and _v14. */
#define WEFT_RMA_EXPORT_V15_V14(p, nm)                                                          \
  WEFT_NET_EXPORT const ncclRma_v15_t ncclRmaPlugin_v15 = {                                     \
      nm, WEFT_RMA_CALLS_HEAD(p), p##_create_context, p##_reg, p##_reg_dmabuf,                  \
      WEFT_RMA_CALLS_MID(p), p##_iput, p##_iput_signal, p##_iget, WEFT_RMA_CALLS_TAIL(p)};      \
  static ncclResult_t p##_v14_iput(void* ctx, int context, uint64_t so, void* smh, size_t size, \
                                   uint64_t dof, void* dmh, uint32_t rank, void** req) {        \
    return p##_iput(ctx, context, so, smh, size, dof, dmh, rank, 0, req);                       \
  }                                                                                             \
  static ncclResult_t p##_v14_iput_signal(void* ctx, int context, uint64_t so, void* smh,       \
                                          size_t size, uint64_t dof, void* dmh, uint32_t rank,  \
                                          uint64_t sig_off, void* sig_mh, uint64_t value,       \
                                          uint32_t op, bool strong, void** req) {               \
    return p##_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, \
                           op, strong, 0, req);                                                 \
  }                                                                                             \
  static ncclResult_t p##_v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh,          \
                                   size_t size, uint64_t l_off, void* l_mh, uint32_t rank,      \
                                   void** req) {                                                \
    return p##_iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, 0, req);                \
  }                                                                                             \
  WEFT_NET_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {                                     \
      nm, WEFT_RMA_CALLS_HEAD(p), p##_create_context, p##_reg, p##_reg_dmabuf,                  \
      WEFT_RMA_CALLS_MID(p), p##_v14_iput, p##_v14_iput_signal, p##_v14_iget,                   \
      WEFT_RMA_CALLS_TAIL(p)}

/* ncclRmaPlugin_v13 and ncclGinPlugin_v13 (after WEFT_RMA_EXPORT_V15_V14, whose v14 puts and
 * gets they share). */
#define WEFT_RMA_EXPORT_V13_GIN13(p, nm)                                                        \
  static ncclResult_t p##_v13_create_context(void* coll, ncclGinConfig_v13_t* config,           \
                                             void** ctx, ncclNetDeviceHandle_v11_t** dev) {     \
    ncclRmaConfig_v15_t c = {.nContexts = config ? config->nContexts : 0,                       \
                             .trafficClass = config ? config->trafficClass : 0};                \
    if (dev) *dev = NULL; /* a proxy device: nothing for GPU code */                            \
    return p##_create_context(coll, &c, ctx);                                                   \
  }                                                                                             \
  static ncclResult_t p##_v13_reg(void* coll, void* data, size_t size, int type,                \
                                  uint64_t flags, void** mh, void** gin_handle) {               \
    ncclResult_t r = p##_reg(coll, data, size, type, flags, mh);                                \
    if (r == ncclSuccess && gin_handle) *gin_handle = NULL;                                     \
    return r;                                                                                   \
  }                                                                                             \
  static ncclResult_t p##_v13_reg_dmabuf(void* coll, void* data, size_t size, int type,         \
                                         uint64_t off, int fd, uint64_t flags, void** mh,       \
                                         void** gin_handle) {                                   \
    ncclResult_t r = p##_reg_dmabuf(coll, data, size, type, off, fd, flags, mh);                \
    if (r == ncclSuccess && gin_handle) *gin_handle = NULL;                                     \
    return r;                                                                                   \
  }                                                                                             \
  static ncclResult_t p##_v13_iput_signal(void* ctx, int context, uint64_t so, void* smh,       \
                                          size_t size, uint64_t dof, void* dmh, uint32_t rank,  \
                                          uint64_t sig_off, void* sig_mh, uint64_t value,       \
                                          uint32_t op, void** req) {                            \
    return p##_iput_signal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value, \
                           op, true, 0, req);                                                   \
  }                                                                                             \
  WEFT_NET_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {                                     \
      nm, WEFT_RMA_CALLS_HEAD(p), p##_v13_create_context, p##_v13_reg, p##_v13_reg_dmabuf,      \
      WEFT_RMA_CALLS_MID(p), p##_v14_iput, p##_v13_iput_signal, p##_v14_iget,                   \
      WEFT_RMA_CALLS_TAIL(p)};                                                                  \
  WEFT_NET_EXPORT const ncclGin_v13_t ncclGinPlugin_v13 = {                                     \
      nm, WEFT_RMA_CALLS_HEAD(p), p##_v13_create_context, p##_v13_reg, p##_v13_reg_dmabuf,      \
      WEFT_RMA_CALLS_MID(p), p##_v14_iput, p##_v13_iput_signal, p##_v14_iget,                   \
      WEFT_RMA_CALLS_TAIL(p)}

#endif
