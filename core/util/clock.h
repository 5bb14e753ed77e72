/* Monotonic time and the back-off every polling loop uses: spin a little, then yield, then
 * sleep (tests run 8 ranks on 2 cores, so pure spinning starves the peers). */
#ifndef WEFT_UTIL_CLOCK_H
#define WEFT_UTIL_CLOCK_H

#include <stdint.h>

uint64_t clock_ns(void);
static inline uint64_t clock_ms(void) { return clock_ns() / 1000000ull; }

typedef struct {
  unsigned polls;
} weft_backoff;

/* One step of waiting; call in a loop, reset with backoff->polls = 0 after progress. */
void backoff_wait(weft_backoff* b);

#endif
