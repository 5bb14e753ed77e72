/* Monotonic clock and polling back-off (see clock.h). */
#include "util/clock.h"

#include <sched.h>
#include <time.h>

struct timespec clock_deadline(clockid_t clk, int ms) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  return ts;
}

uint64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define BACKOFF_SPIN_POLLS 64
#define BACKOFF_YIELD_NS 1000000ull     /* yield this long after the first miss */
#define BACKOFF_SHORT_SLEEP_NS 10000000ull /* then 50 µs sleeps up to here, then 1 ms */

void backoff_wait(weft_backoff* b) {
  unsigned n = b->polls++;
  if (n == 0) b->since_ns = clock_ns();
  if (n < BACKOFF_SPIN_POLLS) {
    __asm__ __volatile__("" ::: "memory");
    return;
  }
  uint64_t waited = clock_ns() - b->since_ns;
  if (waited < BACKOFF_YIELD_NS) {
    sched_yield();
    return;
  }
  long us = waited < BACKOFF_SHORT_SLEEP_NS ? 50 : 1000;
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}
