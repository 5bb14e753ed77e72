/* Random 64-bit ids for every layer and plugin: connection ids, tag-space starts, per-process
 * ids. Not for secrets: bootstrap's secrets need entropy and fail without it (bs_random). */
#ifndef WEFT_UTIL_RANDOM_H
#define WEFT_UTIL_RANDOM_H

#include <stdint.h>

/* A non-zero random value: getrandom, or without entropy (early boot, a seccomp filter) time,
 * pid and a counter through splitmix64. Tells things apart; not for cryptography. */
uint64_t weft_random64(void);

#endif
