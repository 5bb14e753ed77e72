/* Helpers shared by the bootstrap tests: deterministic payloads, the last WARN, waiting for
 * root threads and thread counts to settle. */
#ifndef WEFT_BS_TESTUTIL_H
#define WEFT_BS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap_internal.h"
#include "testutil.h"

/* Bytes that depend on (seed, a, b) and their position; bs_check says whether buf holds them. */
void bs_fill(void* buf, size_t len, uint64_t seed, uint64_t a, uint64_t b);
int bs_check(const void* buf, size_t len, uint64_t seed, uint64_t a, uint64_t b);
uint64_t bs_now_ms(void);
void bs_sleep_ms(int ms);
/* Prints the last WARN with a label and returns 1 when it contains every needle (NULL-ended). */
int bs_last_error_has(const char* label, ...);
/* Wait up to ms for this process's root threads to finish and its thread count to reach want
 * (want < 0: any). Returns 1 on success. */
int bs_wait_settled(int want_threads, int ms);
/* The thread count to come back to: taken after one thread has come and gone, so that helper
 * threads a sanitizer starts on first use are already counted. */
int bs_baseline_threads(void);
/* 1 when a socket can be bound to [::1]. */
int bs_have_ipv6_loopback(void);

#endif
