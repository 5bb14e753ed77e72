/* Monotonic time and the back-off every polling loop uses: spin a little, then yield, then
 * sleep (tests run 8 ranks on 2 cores, so pure spinning starves the peers). */
#ifndef WEFT_UTIL_CLOCK_H
#define WEFT_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

uint64_t clock_ns(void);
static inline uint64_t clock_ms(void) { return clock_ns() / 1000000ull; }
/* The time ms milliseconds from now on clock clk: an absolute timeout for
 * pthread_cond_timedwait (CLOCK_REALTIME unless the condition was made for another clock). */
struct timespec clock_deadline(clockid_t clk, int ms);

typedef struct {
  unsigned polls;    /* misses since the last progress; 0 restarts the back-off */
  uint64_t since_ns; /* when this run of misses began (set by backoff_wait) */
} weft_backoff;

/* One step of waiting; call in a loop, reset with backoff->polls = 0 after progress. By the
 * time since the first miss: spin (64 polls), then yield the CPU for up to 1 ms (a peer on this
 * host that is running answers within that; one that is descheduled gets the core), then sleep
 * 50 µs a turn up to 10 ms, then 1 ms. */
void backoff_wait(weft_backoff* b);

#endif
