/* Deliberately broken GIN/RMA plugins: weft's socket plugin (WEFT_SOCKET_PLUGIN, opened by a
 * constructor) with one defect in iputSignal, exported as ncclRmaPlugin_v15 and
 * ncclGinPlugin_v13 (copies of the socket plugin's tables with that one entry replaced).
 *   BREAK_SIGNAL_FIRST: the signal is sent first, alone, and the data after it, so the target
 *     can see the signal before the data has landed (weft-conformance: *_put_lands_before_its_signal).
 *   BREAK_LOST_SIGNAL: every 37th iputSignal moves the data but drops the signal
 *     (*_signal_counts_add_up_under_concurrency).
 *   neither: a faithful wrapper, every call forwarded (a fixture RMA plugin that moves the data
 *     right: tests/rma drives weft's one-sided calls through it). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl_gin.h"
#include "nccl_rma.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT ncclRma_v15_t ncclRmaPlugin_v15;
EXPORT ncclGin_v13_t ncclGinPlugin_v13;

static const ncclRma_v15_t* real15;
static const ncclGin_v13_t* real13;
#ifdef BREAK_LOST_SIGNAL
static int calls; /* atomic */
#endif

#ifdef BREAK_LOST_SIGNAL
static int drop_this(void) { return __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) % 37 == 0; }
#elif !defined(BREAK_SIGNAL_FIRST)
static int drop_this(void) { return 0; }
#endif

static ncclResult_t put_signal15(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                 uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                 void* sig_mh, uint64_t value, uint32_t op, bool strong,
                                 uint32_t opt, void** req) {
#ifdef BREAK_SIGNAL_FIRST
  void* first = NULL;
  if (size == 0) /* a bare signal has no data to overtake */
    return real15->iputSignal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                              op, strong, opt, req);
  ncclResult_t r = real15->iputSignal(ctx, context, 0, NULL, 0, 0, NULL, rank, sig_off, sig_mh,
                                      value, op, strong, opt, &first);
  if (r != ncclSuccess) return r;
  return real15->iput(ctx, context, so, smh, size, dof, dmh, rank, opt, req);
#else
  if (drop_this()) return real15->iput(ctx, context, so, smh, size, dof, dmh, rank, opt, req);
  return real15->iputSignal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                            op, strong, opt, req);
#endif
}

static ncclResult_t put_signal13(void* ctx, int context, uint64_t so, void* smh, size_t size,
                                 uint64_t dof, void* dmh, uint32_t rank, uint64_t sig_off,
                                 void* sig_mh, uint64_t value, uint32_t op, void** req) {
#ifdef BREAK_SIGNAL_FIRST
  void* first = NULL;
  if (size == 0)
    return real13->iputSignal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                              op, req);
  ncclResult_t r = real13->iputSignal(ctx, context, 0, NULL, 0, 0, NULL, rank, sig_off, sig_mh,
                                      value, op, &first);
  if (r != ncclSuccess) return r;
  return real13->iput(ctx, context, so, smh, size, dof, dmh, rank, req);
#else
  if (drop_this()) return real13->iput(ctx, context, so, smh, size, dof, dmh, rank, req);
  return real13->iputSignal(ctx, context, so, smh, size, dof, dmh, rank, sig_off, sig_mh, value,
                            op, req);
#endif
}

__attribute__((constructor)) static void wrap_socket_plugin(void) {
  void* dl = dlopen(WEFT_SOCKET_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    fprintf(stderr, "onesided_wrap: cannot open %s: %s\n", WEFT_SOCKET_PLUGIN, dlerror());
    return; /* the tables stay empty: the suite reports a NULL name */
  }
  real15 = dlsym(dl, "ncclRmaPlugin_v15");
  real13 = dlsym(dl, "ncclGinPlugin_v13");
  if (real15) {
    ncclRmaPlugin_v15 = *real15;
    ncclRmaPlugin_v15.name = BROKEN_NAME;
    ncclRmaPlugin_v15.iputSignal = put_signal15;
  }
  if (real13) {
    ncclGinPlugin_v13 = *real13;
    ncclGinPlugin_v13.name = BROKEN_NAME;
    ncclGinPlugin_v13.iputSignal = put_signal13;
  }
}
