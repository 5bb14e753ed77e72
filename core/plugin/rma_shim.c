/* RMA tables v13..v15 seen as v15 (kind_shim.h), the symbol names of all three kinds, and the
 * window flag mapping. v13 is the GIN v13 table: its regMrSym returns a ginHandle the view
 * drops, its iputSignal has no isStrongSignal (every v13 signal is strong), its createContext
 * takes a GIN config and returns a device handle. v14 lacks optFlags. The slots hold the one
 * adapted table per old version. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "plugin/kind_shim.h"

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static const ncclRma_v13_t* slot13;
static const ncclRma_v14_t* slot14;

const char* gin_shim_symbol(int version) {
  static const char* names[] = {"ncclGinPlugin_v11", "ncclGinPlugin_v12", "ncclGinPlugin_v13",
                                "ncclGinPlugin_v14", "ncclGinPlugin_v15"};
  if (version < WEFT_GIN_MIN_VERSION || version > WEFT_GIN_MAX_VERSION) return "ncclGinPlugin_v?";
  return names[version - WEFT_GIN_MIN_VERSION];
}

const char* rma_shim_symbol(int version) {
  static const char* names[] = {"ncclRmaPlugin_v13", "ncclRmaPlugin_v14", "ncclRmaPlugin_v15"};
  if (version < WEFT_RMA_MIN_VERSION || version > WEFT_RMA_MAX_VERSION) return "ncclRmaPlugin_v?";
  return names[version - WEFT_RMA_MIN_VERSION];
}

const char* collnet_shim_symbol(int version) {
  static const char* names[] = {"ncclCollNetPlugin_v6",  "ncclCollNetPlugin_v7",
                                "ncclCollNetPlugin_v8",  "ncclCollNetPlugin_v9",
                                "ncclCollNetPlugin_v10", "ncclCollNetPlugin_v11",
                                "ncclCollNetPlugin_v12"};
  if (version < WEFT_COLLNET_MIN_VERSION || version > WEFT_COLLNET_MAX_VERSION)
    return "ncclCollNetPlugin_v?";
  return names[version - WEFT_COLLNET_MIN_VERSION];
}

uint64_t kind_shim_win_mr_flags(int win_flags) {
  return (win_flags & NCCL_WIN_STRICT_ORDERING) ? NCCL_NET_MR_FLAG_FORCE_SO : 0;
}

/* ---- v13 ---- */

static ncclResult_t v13_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx) {
  if (config == NULL) return ncclInvalidArgument;
  ncclGinConfig_v13_t c = {.nSignals = 0, .nCounters = 0, .nContexts = config->nContexts,
                           .queueDepth = 0, .trafficClass = config->trafficClass};
  ncclNetDeviceHandle_v11_t* dev = NULL;
  return slot13->createContext(coll, &c, ctx, &dev);
}

static ncclResult_t v13_reg(void* coll, void* data, size_t size, int type, uint64_t flags,
                            void** mh) {
  void* gin_handle = NULL;
  return slot13->regMrSym(coll, data, size, type, flags, mh, &gin_handle);
}

static ncclResult_t v13_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t off,
                                   int fd, uint64_t flags, void** mh) {
  void* gin_handle = NULL;
  if (slot13->regMrSymDmaBuf == NULL) return ncclInvalidUsage;
  return slot13->regMrSymDmaBuf(coll, data, size, type, off, fd, flags, mh, &gin_handle);
}

static ncclResult_t v13_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt,
                             void** req) {
  (void)opt;
  return slot13->iput(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, req);
}

static ncclResult_t v13_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                    size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                    uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                    bool strong, uint32_t opt, void** req) {
  (void)strong;
  (void)opt;
  return slot13->iputSignal(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, sig_off,
                            sig_mh, value, op, req);
}

static ncclResult_t v13_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  return slot13->iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, req);
}

/* ---- v14 ---- */

static ncclResult_t v14_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt,
                             void** req) {
  (void)opt;
  return slot14->iput(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, req);
}

static ncclResult_t v14_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                    size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                    uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                    bool strong, uint32_t opt, void** req) {
  (void)opt;
  return slot14->iputSignal(ctx, context, src_off, src_mh, size, dst_off, dst_mh, rank, sig_off,
                            sig_mh, value, op, strong, req);
}

static ncclResult_t v14_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                             uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req) {
  (void)opt;
  return slot14->iget(ctx, context, r_off, r_mh, size, l_off, l_mh, rank, req);
}

/* The entries every version has, checked on the adapted view. */
static ncclResult_t check_rma(const ncclRma_v15_t* t, char* why, size_t len) {
#define NEED(f)                                           \
  if (t->f == NULL) {                                     \
    snprintf(why, len, "%s is NULL", #f);                 \
    return ncclInvalidUsage;                              \
  }
  if (t->name == NULL) {
    snprintf(why, len, "name is NULL");
    return ncclInvalidUsage;
  }
  NEED(init) NEED(devices) NEED(getProperties) NEED(listen) NEED(connect) NEED(createContext)
  NEED(regMrSym) NEED(deregMrSym) NEED(destroyContext) NEED(closeColl) NEED(closeListen)
  NEED(iput) NEED(iputSignal) NEED(test) NEED(finalize)
#undef NEED
  return ncclSuccess;
}

ncclResult_t rma_shim_adapt(const void* table, int version, ncclRma_v15_t* out, char* why,
                            size_t len) {
  memset(out, 0, sizeof *out);
  if (table == NULL) {
    snprintf(why, len, "no table");
    return ncclInvalidUsage;
  }
  if (version == 15) {
    *out = *(const ncclRma_v15_t*)table;
    return check_rma(out, why, len);
  }
  if (version == 14) {
    const ncclRma_v14_t* t = table;
    pthread_mutex_lock(&slot_lock);
    slot14 = t;
    pthread_mutex_unlock(&slot_lock);
    *out = (ncclRma_v15_t){t->name, t->init, t->devices, t->getProperties, t->listen, t->connect,
                           t->createContext, t->regMrSym, t->regMrSymDmaBuf, t->deregMrSym,
                           t->destroyContext, t->closeColl, t->closeListen,
                           t->iput ? v14_iput : NULL, t->iputSignal ? v14_iput_signal : NULL,
                           t->iget ? v14_iget : NULL, t->iflush, t->test, t->rmaProgress,
                           t->queryLastError, t->finalize};
    return check_rma(out, why, len);
  }
  if (version == 13) {
    const ncclRma_v13_t* t = table;
    pthread_mutex_lock(&slot_lock);
    slot13 = t;
    pthread_mutex_unlock(&slot_lock);
    *out = (ncclRma_v15_t){t->name, t->init, t->devices, t->getProperties, t->listen, t->connect,
                           t->createContext ? v13_create_context : NULL,
                           t->regMrSym ? v13_reg : NULL, v13_reg_dmabuf, t->deregMrSym,
                           t->destroyContext, t->closeColl, t->closeListen,
                           t->iput ? v13_iput : NULL, t->iputSignal ? v13_iput_signal : NULL,
                           t->iget ? v13_iget : NULL, t->iflush, t->test, t->ginProgress,
                           t->queryLastError, t->finalize};
    return check_rma(out, why, len);
  }
  snprintf(why, len, "RMA version %d is not one weft loads (v%d..v%d)", version,
           WEFT_RMA_MIN_VERSION, WEFT_RMA_MAX_VERSION);
  return ncclInvalidUsage;
}
