/* One checked path for every call that can fail. The callee logs (once, where it knows the
 * rank, peer and what it was doing); these macros only propagate.
 *
 * The rule for ncclInProgress: it is not a failure, but it is not "done" either, so WEFT_CHECK
 * propagates it like any result other than ncclSuccess: no caller carries on as if a
 * non-blocking step had finished (nor past a plugin that answers ncclInProgress where NCCL's
 * ABI has no such answer). The one call where ncclInProgress is an expected outcome to continue
 * past — starting a non-blocking init, lifecycle's comm_init_start — is tested by hand at its
 * callers (api_init.c, comm_split.c), which return it to the user as NCCL does. Every other
 * result is checked with these macros; there is no second dialect. */
#ifndef WEFT_UTIL_CHECK_H
#define WEFT_UTIL_CHECK_H

#include <errno.h>
#include <string.h>
#include "nccl.h"
#include "util/log.h"

#define WEFT_CHECK(call)                                                               \
  do {                                                                                 \
    ncclResult_t res_ = (call);                                                        \
    if (res_ != ncclSuccess) return res_;                                              \
  } while (0)

#define WEFT_CHECK_GOTO(call, res, label)                                              \
  do {                                                                                 \
    (res) = (call);                                                                    \
    if ((res) != ncclSuccess) goto label;                                              \
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
