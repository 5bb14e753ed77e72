/* The proxy's life cycle (gin_proxy.h): checking the configuration, registering the inline
 * buffers, the thread, teardown; and the per-context structs kernels read. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gin/gin_proxy_internal.h"
#include "util/check.h"
#include "util/log.h"

size_t gin_proxy_queues_bytes(int ncontexts, int nranks, uint32_t queue_size) {
  return (size_t)ncontexts * (size_t)nranks * queue_size * sizeof(ncclGinProxyGfd_v2_30_t);
}

size_t gin_proxy_cis_bytes(int ncontexts, int nranks) {
  return (size_t)ncontexts * (size_t)nranks * sizeof(uint32_t);
}

void gin_proxy_fill_gpu_ctx(ncclGinProxyGpuCtx_v2_30_t* out, int ncontexts, int nranks,
                            uint32_t queue_size, int nsignals, int ncounters,
                            const gin_proxy_kernel_addrs* a) {
  for (int x = 0; x < ncontexts; x++) {
    size_t per_rank = (size_t)x * (size_t)nranks;
    out[x] = (ncclGinProxyGpuCtx_v2_30_t){
      .nranks = nranks,
      .queueSize = queue_size,
      .queues = a->queues + per_rank * queue_size * sizeof(ncclGinProxyGfd_v2_30_t),
      .pis = a->pis + per_rank * sizeof(uint32_t),
      .cis = a->cis + per_rank * sizeof(uint32_t),
      .counters = ncounters ? a->counters + (size_t)x * ncounters * sizeof(uint64_t) : 0,
      .signals = nsignals ? a->signals + (size_t)x * nsignals * sizeof(uint64_t) : 0,
      .signalOffsets = nsignals ? a->signal_offsets + (size_t)x * nsignals * sizeof(uint64_t) : 0,
      .lastIssuedGet = a->last_issued_get + per_rank * sizeof(uint32_t),
      .lastVisibleGet = a->last_visible_get + per_rank * sizeof(uint32_t),
    };
  }
}

static ncclResult_t check_config(const gin_proxy_config* c) {
  const char* bad = NULL;
  long long value = 0;
  if (c->nranks < 1 || c->rank < 0 || c->rank >= c->nranks) bad = "rank", value = c->rank;
  else if (c->ncontexts < 1) bad = "ncontexts", value = c->ncontexts;
  else if (c->nsignals < 0 || c->nsignals >= (1 << 24)) bad = "nsignals", value = c->nsignals;
  else if (c->ncounters < 0 || c->ncounters >= (1 << 23)) bad = "ncounters", value = c->ncounters;
  else if (c->queue_size == 0 || (c->queue_size & (c->queue_size - 1)) != 0)
    bad = "queue_size (a power of two)", value = c->queue_size;
  else if (c->rma == NULL || c->coll == NULL || c->ctx == NULL) bad = "backend", value = 0;
  else if (c->queues == NULL || c->cis == NULL) bad = "queues/cis", value = 0;
  else if (c->ncounters > 0 && c->counters == NULL) bad = "counters", value = 0;
  else if (!c->staged && c->nsignals > 0 && c->signals_mh == NULL) bad = "signals_mh", value = 0;
  if (bad) {
    WARN("GIN proxy: rank %d: bad configuration: %s = %lld", c->rank, bad, value);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static void free_contexts(gin_proxy* p) {
  for (int x = 0; p->contexts && x < p->cfg.ncontexts; x++) {
    gin_context* g = &p->contexts[x];
    if (g->inlines_mh) {
      ncclResult_t r = p->cfg.rma->deregMrSym(p->cfg.coll, g->inlines_mh);
      if (r != ncclSuccess)
        WARN("GIN proxy: rank %d: deregistering context %d's inline buffer failed (%d)",
             p->cfg.rank, x, (int)r);
    }
    free(g->seen);
    free(g->completed);
    free(g->slots);
    free(g->inlines);
  }
  free(p->contexts);
}

ncclResult_t gin_proxy_create(const gin_proxy_config* cfg, gin_proxy** out) {
  WEFT_ARG_NONNULL("gin_proxy_create", cfg);
  WEFT_ARG_NONNULL("gin_proxy_create", out);
  WEFT_CHECK(check_config(cfg));
  gin_proxy* p = calloc(1, sizeof *p);
  if (p == NULL) return ncclSystemError;
  p->cfg = *cfg;
  p->contexts = calloc((size_t)cfg->ncontexts, sizeof *p->contexts);
  ncclResult_t res = ncclSuccess;
  if (p->contexts == NULL) {
    res = ncclSystemError;
    goto fail;
  }
  size_t n = (size_t)cfg->nranks;
  size_t slots = n * cfg->queue_size;
  for (int x = 0; x < cfg->ncontexts; x++) {
    gin_context* g = &p->contexts[x];
    g->seen = calloc(n, sizeof *g->seen);
    g->completed = calloc(n, sizeof *g->completed);
    g->slots = calloc(slots, sizeof *g->slots);
    g->inlines = calloc(slots, sizeof *g->inlines);
    if (!g->seen || !g->completed || !g->slots || !g->inlines) {
      WARN("GIN proxy: rank %d: out of memory for context %d (%zu slots)", cfg->rank, x, slots);
      res = ncclSystemError;
      goto fail;
    }
    res = cfg->rma->regMrSym(cfg->coll, g->inlines, slots * sizeof *g->inlines, NCCL_PTR_HOST, 0,
                             &g->inlines_mh);
    if (res != ncclSuccess) {
      WARN("GIN proxy: rank %d: %s regMrSym of context %d's inline buffer failed (%d)",
           cfg->rank, cfg->rma->name ? cfg->rma->name : "backend", x, (int)res);
      g->inlines_mh = NULL;
      goto fail;
    }
  }
  if (cfg->staged) {
    res = gin_stage_create(p);
    if (res != ncclSuccess) goto fail;
  }
  INFO(NCCL_NET, "GIN proxy: rank %d of %d: %d context(s), %u GFDs per queue, %d signals and "
       "%d counters per context, backend %s%s", cfg->rank, cfg->nranks, cfg->ncontexts,
       cfg->queue_size, cfg->nsignals, cfg->ncounters, cfg->rma->name ? cfg->rma->name : "?",
       cfg->staged ? ", staged through host memory" : "");
  *out = p;
  return ncclSuccess;
fail:
  gin_stage_destroy(p);
  free_contexts(p);
  free(p);
  return res;
}

ncclResult_t gin_proxy_error(gin_proxy* p) {
  return p ? (ncclResult_t)__atomic_load_n(&p->error, __ATOMIC_ACQUIRE) : ncclInvalidArgument;
}

void gin_proxy_fail(gin_proxy* p, ncclResult_t why) {
  ncclResult_t none = ncclSuccess;
  if (__atomic_compare_exchange_n(&p->error, &none, why, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
      p->cfg.on_error)
    p->cfg.on_error(p->cfg.on_error_arg, why);
}

ncclResult_t gin_proxy_progress(gin_proxy* p, int* busy) {
  ncclResult_t e = gin_proxy_error(p);
  if (e != ncclSuccess) return e;
  return gin_proxy_pass(p, busy);
}

/* Spin while work comes, then yield, then sleep briefly: a kernel's GFD waits at most ~50 us. */
static void* proxy_main(void* arg) {
  gin_proxy* p = arg;
  weft_log_set_thread_rank(p->cfg.rank, -1);
  unsigned idle = 0;
  while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    int busy = 0;
    if (gin_proxy_progress(p, &busy) != ncclSuccess) break;
    if (busy) {
      idle = 0;
    } else if (++idle > 2048) {
      struct timespec ts = {0, 50 * 1000};
      nanosleep(&ts, NULL);
    } else if (idle > 64) {
      sched_yield();
    }
  }
  return NULL;
}

ncclResult_t gin_proxy_start(gin_proxy* p) {
  WEFT_ARG_NONNULL("gin_proxy_start", p);
  if (p->thread_started) return ncclSuccess;
  int rc = pthread_create(&p->thread, NULL, proxy_main, p);
  if (rc != 0) {
    WARN("GIN proxy: rank %d: starting the proxy thread failed: %s", p->cfg.rank, strerror(rc));
    return ncclSystemError;
  }
  p->thread_started = 1;
  return ncclSuccess;
}

ncclResult_t gin_proxy_destroy(gin_proxy* p) {
  if (p == NULL) return ncclSuccess;
  __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
  if (p->thread_started) pthread_join(p->thread, NULL);
  /* Requests still out keep the inline buffers in use: let them finish, boundedly, reading
   * no new GFD. */
  p->draining = 1;
  for (int i = 0; i < 1000 && p->outstanding > 0 && gin_proxy_error(p) == ncclSuccess; i++) {
    int busy = 0;
    if (gin_proxy_pass(p, &busy) != ncclSuccess) break;
    struct timespec ts = {0, 1000 * 1000};
    if (p->outstanding > 0) nanosleep(&ts, NULL);
  }
  if (p->outstanding > 0)
    INFO(NCCL_NET, "GIN proxy: rank %d: %d GFD(s) still outstanding at destroy", p->cfg.rank,
         p->outstanding);
  gin_stage_destroy(p);
  free_contexts(p);
  free(p);
  return ncclSuccess;
}
