/* Inside the cost model: the two parameter sets fill weft_tune_model's tables at init and turn
 * wire bytes into microseconds. */
#ifndef WEFT_TUNE_MODEL_IMPL_H
#define WEFT_TUNE_MODEL_IMPL_H

#include "tune/tune_model.h"

void tune_model_init_host(weft_tune_model* m);
void tune_model_init_device(weft_tune_model* m);
/* OneShot/TwoShot rows for either parameter set, from the Ring rows already derived. */
void tune_model_init_direct(weft_tune_model* m);
/* RecDoubling, Rabenseifner, PAT (log-step AllGather/ReduceScatter), Binomial, for either
 * parameter set (tune_model_log.c; the device rows an unmeasured estimate). */
void tune_model_init_log(weft_tune_model* m);
/* CollNetChain AllReduce on the host where facts say CollNet is usable (tune_model_collnet.c). */
void tune_model_init_collnet(weft_tune_model* m);
double tune_host_xfer_us(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                         double bytes, int nch);
double tune_device_xfer_us(const weft_tune_model* m, ncclFunc_t func, int algo, int proto,
                           double bytes, int nch);

/* floor(log2(n)) for n >= 1; 0 for n <= 1. */
static inline int tune_log2i(int n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    l++;
  }
  return l;
}

/* Ring steps of func over n ranks: 2(n-1) for AllReduce, n-1 otherwise (pipelined chains). */
static inline int tune_ring_steps(ncclFunc_t func, int n) {
  return func == ncclFuncAllReduce ? 2 * (n - 1) : n - 1;
}

static inline int tune_is_direct(int algo) {
  return algo == WEFT_ALGO_ONESHOT_ID || algo == WEFT_ALGO_TWOSHOT_ID;
}

static inline int tune_is_log(int algo) {
  return algo == WEFT_ALGO_RECDOUBLING_ID || algo == WEFT_ALGO_RABENSEIFNER_ID ||
         algo == WEFT_ALGO_BINOMIAL_ID || algo == WEFT_ALGO_PAT_ID;
}

#endif
