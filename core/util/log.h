/* Logging with NCCL's grammar: NCCL_DEBUG picks the level, NCCL_DEBUG_SUBSYS the subsystems
 * (comma list, '^' inverts), NCCL_DEBUG_FILE the sink (%h host, %p pid). The sink and the parsed
 * settings are the one guarded global of this file; everything else is per call. */
#ifndef WEFT_UTIL_LOG_H
#define WEFT_UTIL_LOG_H

#include "nccl_common.h"

/* Called by every macro below; also the ncclDebugLogger_t handed to plugins. */
void weft_log(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line,
              const char* fmt, ...) __attribute__((format(printf, 5, 6)));

/* Current level, parsed from NCCL_DEBUG on first use. */
ncclDebugLogLevel weft_log_level(void);
/* True when a message at this level and subsystem would be printed. */
int weft_log_enabled(ncclDebugLogLevel level, unsigned long subsys);
/* Re-read NCCL_DEBUG* (ncclResetDebugInit, tests). Closes a file sink it opened. */
void weft_log_reset(void);
/* The rank and device shown in each line's prefix for this thread (-1 hides them). */
void weft_log_set_thread_rank(int rank, int dev);
/* Record the last WARN text (ncclGetLastError reads it). Returns a copy in buf. */
void weft_log_last_error(char* buf, size_t len);
/* strerror(err) for a failed system call, with the errno's name and, for running out of file
 * descriptors, the limit that was hit: EMFILE names this process's RLIMIT_NOFILE (ulimit -n),
 * ENFILE the system's fs.file-max. Returns buf. */
const char* weft_sys_error(int err, char* buf, size_t len);

#define WARN(...) weft_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define INFO(subsys, ...)                                                              \
  do {                                                                                 \
    if ((int)weft_log_level() >= NCCL_LOG_INFO)                                           \
      weft_log(NCCL_LOG_INFO, (subsys), __FILE__, __LINE__, __VA_ARGS__);              \
  } while (0)
#define VERSION_LOG(...) weft_log(NCCL_LOG_VERSION, NCCL_INIT, __FILE__, __LINE__, __VA_ARGS__)
#ifdef WEFT_TRACE
#define TRACE(subsys, ...)                                                             \
  do {                                                                                 \
    if ((int)weft_log_level() >= NCCL_LOG_TRACE)                                           \
      weft_log(NCCL_LOG_TRACE, (subsys), __FILE__, __LINE__, __VA_ARGS__);             \
  } while (0)
#else
#define TRACE(subsys, ...) do { } while (0)
#endif

/* A diagnostic the user asked for (the hang report): printed like a WARN whatever NCCL_DEBUG
 * says, and not recorded as the last error. */
void weft_log_report(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Hot paths: warn the first time only. */
#define WARN_ONCE(...)                                                                 \
  do {                                                                                 \
    static int warned_;                                                                \
    if (!__atomic_exchange_n(&warned_, 1, __ATOMIC_RELAXED)) WARN(__VA_ARGS__);        \
  } while (0)

#endif
