/* CHECK for the devcomm unit tests: counts a failure and says where, without stopping (each
 * test prints its seed and exits 1 when `failures` is nonzero). */
#ifndef WEFT_TEST_DEVCOMM_CHECK_H
#define WEFT_TEST_DEVCOMM_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      failures++;                                                                              \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                     \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fprintf(stderr, "\n");                                                                   \
    }                                                                                          \
  } while (0)

#endif
