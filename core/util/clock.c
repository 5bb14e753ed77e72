/* Monotonic clock and polling back-off (see clock.h). */
#include "util/clock.h"

#include <sched.h>
#include <time.h>

uint64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void backoff_wait(weft_backoff* b) {
  unsigned n = b->polls++;
  if (n < 64) {
    __asm__ __volatile__("" ::: "memory");
  } else if (n < 256) {
    sched_yield();
  } else {
    /* 50 µs, growing to 1 ms: bounded latency once a peer is slow. */
    long us = n < 1024 ? 50 : 1000;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
  }
}
