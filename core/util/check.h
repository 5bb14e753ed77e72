/* One checked path for every call that can fail. The callee logs (once, where it knows the
 * rank, peer and what it was doing); these macros only propagate. */
#ifndef WEFT_UTIL_CHECK_H
#define WEFT_UTIL_CHECK_H

#include <errno.h>
#include <string.h>
#include "nccl.h"
#include "util/log.h"

#define WEFT_CHECK(call)                                                               \
  do {                                                                                 \
    ncclResult_t res_ = (call);                                                        \
    if (res_ != ncclSuccess && res_ != ncclInProgress) return res_;                    \
  } while (0)

#define WEFT_CHECK_GOTO(call, res, label)                                              \
  do {                                                                                 \
    (res) = (call);                                                                    \
    if ((res) != ncclSuccess && (res) != ncclInProgress) goto label;                   \
  } while (0)

/* A syscall returning -1 on failure: WARN with errno text, return ncclSystemError. */
#define WEFT_SYSCHECK(call, what)                                                      \
  do {                                                                                 \
    if ((call) == -1) {                                                                \
      WARN("%s failed: %s", (what), strerror(errno));                                  \
      return ncclSystemError;                                                          \
    }                                                                                  \
  } while (0)

/* Argument checks at the API boundary: WARN naming the argument and value. */
#define WEFT_ARG_NONNULL(fn, ptr)                                                      \
  do {                                                                                 \
    if ((ptr) == NULL) {                                                               \
      WARN("%s: argument %s is NULL", (fn), #ptr);                                     \
      return ncclInvalidArgument;                                                      \
    }                                                                                  \
  } while (0)

#endif
