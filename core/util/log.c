/* The log sink: NCCL_DEBUG level, NCCL_DEBUG_SUBSYS mask, NCCL_DEBUG_FILE. Parsed once, guarded
 * by one mutex; a line is formatted on the caller's stack and written with one fwrite so lines
 * from several threads do not interleave. The last WARN is kept for ncclGetLastError. */
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/param.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_ready;          /* settings parsed (read racily first, then under the lock) */
static int log_level_value;    /* ncclDebugLogLevel */
static unsigned long log_mask; /* subsystems printed at INFO/TRACE */
static FILE* log_file;         /* NULL: stderr */
static int log_file_owned;
static char log_host[64];
static char last_error[1024];
/* Bad NCCL_DEBUG / NCCL_DEBUG_SUBSYS values found while parsing (under the lock), reported once
 * the lock is released: the first on stderr whatever the level (it is the level that is
 * wrong), the second as a WARN. */
static char bad_level[512], bad_subsys[512];

static __thread int thread_rank = -1;
static __thread int thread_dev = -1;

static const struct {
  const char* name;
  unsigned long flag;
} subsys_names[] = {
    {"INIT", NCCL_INIT},   {"COLL", NCCL_COLL},       {"P2P", NCCL_P2P},
    {"SHM", NCCL_SHM},     {"NET", NCCL_NET},         {"GRAPH", NCCL_GRAPH},
    {"TUNING", NCCL_TUNING}, {"ENV", NCCL_ENV},       {"ALLOC", NCCL_ALLOC},
    {"CALL", NCCL_CALL},   {"PROXY", NCCL_PROXY},     {"NVLS", NCCL_NVLS},
    {"BOOTSTRAP", NCCL_BOOTSTRAP}, {"REG", NCCL_REG}, {"PROFILE", NCCL_PROFILE},
    {"RAS", NCCL_RAS},     {"ALL", (unsigned long)NCCL_ALL},
};

static int parse_level(const char* s) {
  if (s == NULL || *s == '\0') return NCCL_LOG_NONE;
  if (!strcasecmp(s, "VERSION")) return NCCL_LOG_VERSION;
  if (!strcasecmp(s, "WARN")) return NCCL_LOG_WARN;
  if (!strcasecmp(s, "INFO")) return NCCL_LOG_INFO;
  if (!strcasecmp(s, "ABORT")) return NCCL_LOG_ABORT;
  if (!strcasecmp(s, "TRACE")) return NCCL_LOG_TRACE;
  return NCCL_LOG_NONE;
}

/* "INIT,NET" or "^COLL,P2P"; unknown names are ignored as NCCL does. */
static unsigned long parse_subsys(const char* s) {
  if (s == NULL) return NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV;
  int invert = 0;
  if (*s == '^') {
    invert = 1;
    s++;
  }
  unsigned long mask = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
      if (!strcasecmp(tok, subsys_names[i].name)) mask |= subsys_names[i].flag;
  return invert ? ~mask : mask;
}

/* NCCL_DEBUG_FILE: %h is the host name, %p the pid, %% a percent sign. */
static void open_file_sink(const char* pattern) {
  char path[4096];
  size_t o = 0;
  for (const char* p = pattern; *p && o + 1 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'h') {
      o += (size_t)snprintf(path + o, sizeof path - o, "%s", log_host);
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      path[o++] = '%';
      p++;
    } else {
      path[o++] = *p;
    }
    if (o >= sizeof path) o = sizeof path - 1;
  }
  path[o] = '\0';
  FILE* f = fopen(path, "w");
  if (f) {
    setvbuf(f, NULL, _IOLBF, 0);
    log_file = f;
    log_file_owned = 1;
  } else {
    fprintf(stderr, "weft: cannot open NCCL_DEBUG_FILE %s, logging to stderr\n", path);
  }
}

/* A value outside the setting's choices (params.def): the warning text in out, else "". */
static void check_choice(weft_param_id id, const char* value, const char* then, char* out,
                         size_t len) {
  char expected[256];
  out[0] = '\0';
  if (!param_value_allowed(param_info(id), value, expected, sizeof expected))
    snprintf(out, len, "%s=%.120s: expected %s; %s", param_info(id)->name, value, expected, then);
}

static void log_init_locked(void) {
  if (log_ready) return;
  gethostname(log_host, sizeof log_host - 1);
  char* dot = strchr(log_host, '.');
  if (dot) *dot = '\0';
  const char* level = getenv("NCCL_DEBUG");
  const char* subsys = getenv("NCCL_DEBUG_SUBSYS");
  check_choice(WEFT_PARAM_DEBUG, level, "using the default (unset: no log)", bad_level,
               sizeof bad_level);
  check_choice(WEFT_PARAM_DEBUG_SUBSYS, subsys,
               "the known names are used, the others ignored (the default is INIT,BOOTSTRAP,ENV)",
               bad_subsys, sizeof bad_subsys);
  log_level_value = parse_level(level);
  log_mask = parse_subsys(subsys);
  const char* file = getenv("NCCL_DEBUG_FILE");
  if (file && *file && log_level_value > NCCL_LOG_NONE) open_file_sink(file);
  __atomic_store_n(&log_ready, 1, __ATOMIC_RELEASE);
}

/* After log_init_locked, with the lock released: report what it found wrong, once. */
static void log_report_bad_settings(void) {
  char level[sizeof bad_level], subsys[sizeof bad_subsys];
  pthread_mutex_lock(&log_lock);
  memcpy(level, bad_level, sizeof level);
  memcpy(subsys, bad_subsys, sizeof subsys);
  bad_level[0] = bad_subsys[0] = '\0';
  pthread_mutex_unlock(&log_lock);
  if (level[0]) {
    fprintf(stderr, "%s:%d:%d NCCL WARN %s\n", log_host, (int)getpid(), (int)syscall(SYS_gettid),
            level);
    pthread_mutex_lock(&log_lock);
    snprintf(last_error, sizeof last_error, "%s", level);
    pthread_mutex_unlock(&log_lock);
  }
  if (subsys[0]) WARN("%s", subsys);
}

static void log_init(void) {
  if (__atomic_load_n(&log_ready, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&log_lock);
  int first = !log_ready;
  log_init_locked();
  pthread_mutex_unlock(&log_lock);
  if (first) log_report_bad_settings();
}

ncclDebugLogLevel weft_log_level(void) {
  log_init();
  return (ncclDebugLogLevel)log_level_value;
}

int weft_log_enabled(ncclDebugLogLevel level, unsigned long subsys) {
  log_init();
  if ((int)level > log_level_value || level == NCCL_LOG_NONE) return 0;
  if (level >= NCCL_LOG_INFO && level != NCCL_LOG_ABORT && !(subsys & log_mask)) return 0;
  return 1;
}

void weft_log_reset(void) {
  pthread_mutex_lock(&log_lock);
  if (log_file_owned) fclose(log_file);
  log_file = NULL;
  log_file_owned = 0;
  log_ready = 0;
  log_init_locked();
  pthread_mutex_unlock(&log_lock);
  log_report_bad_settings();
}

void weft_log_set_thread_rank(int rank, int dev) {
  thread_rank = rank;
  thread_dev = dev;
}

void weft_log_last_error(char* buf, size_t len) {
  if (len == 0) return;
  pthread_mutex_lock(&log_lock);
  snprintf(buf, len, "%s", last_error);
  pthread_mutex_unlock(&log_lock);
}

void weft_log(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line,
              const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  /* WARN text is kept for ncclGetLastError even when logging is off. */
  if (level == NCCL_LOG_WARN) {
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    snprintf(last_error, sizeof last_error, "%s", msg);
    pthread_mutex_unlock(&log_lock);
  }
  if (!weft_log_enabled(level, subsys)) return;
  if (level != NCCL_LOG_WARN) {
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
  }
  char out[1400];
  int tid = (int)syscall(SYS_gettid);
  const char* what = level == NCCL_LOG_WARN    ? "WARN"
                     : level == NCCL_LOG_INFO  ? "INFO"
                     : level == NCCL_LOG_TRACE ? "TRACE"
                     : level == NCCL_LOG_ABORT ? "ABORT"
                                               : "VERSION";
  char where[32] = "";
  if (thread_rank >= 0) snprintf(where, sizeof where, " [r%d d%d]", thread_rank, thread_dev);
  int n;
  if (level == NCCL_LOG_WARN) {
    const char* base = strrchr(file, '/');
    n = snprintf(out, sizeof out, "%s:%d:%d%s NCCL WARN %s:%d %s\n", log_host, (int)getpid(),
                 tid, where, base ? base + 1 : file, line, msg);
  } else if (level == NCCL_LOG_VERSION) {
    n = snprintf(out, sizeof out, "%s\n", msg);
  } else {
    n = snprintf(out, sizeof out, "%s:%d:%d%s NCCL %s %s\n", log_host, (int)getpid(), tid, where,
                 what, msg);
  }
  if (n < 0) return;
  if ((size_t)n >= sizeof out) n = sizeof out - 1;
  pthread_mutex_lock(&log_lock);
  FILE* f = log_file ? log_file : stderr;
  fwrite(out, 1, (size_t)n, f);
  fflush(f);
  pthread_mutex_unlock(&log_lock);
}

void weft_log_report(const char* file, int line, const char* fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  (void)weft_log_level(); /* the sink is opened on first use */
  char out[4400];
  int tid = (int)syscall(SYS_gettid);
  char where[32] = "";
  if (thread_rank >= 0) snprintf(where, sizeof where, " [r%d d%d]", thread_rank, thread_dev);
  const char* base = strrchr(file, '/');
  int n = snprintf(out, sizeof out, "%s:%d:%d%s NCCL WARN %s:%d %s\n", log_host, (int)getpid(),
                   tid, where, base ? base + 1 : file, line, msg);
  if (n < 0) return;
  if ((size_t)n >= sizeof out) n = sizeof out - 1;
  pthread_mutex_lock(&log_lock);
  FILE* f = log_file ? log_file : stderr;
  fwrite(out, 1, (size_t)n, f);
  fflush(f);
  pthread_mutex_unlock(&log_lock);
}

const char* weft_sys_error(int err, char* buf, size_t len) {
  if (err == EMFILE) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
      snprintf(buf, len, "%s (EMFILE: this process may have %llu open files, RLIMIT_NOFILE; "
               "raise it with ulimit -n)", strerror(err), (unsigned long long)rl.rlim_cur);
    else
      snprintf(buf, len, "%s (EMFILE: this process's RLIMIT_NOFILE)", strerror(err));
  } else if (err == ENFILE) {
    long long max = -1;
    FILE* f = fopen("/proc/sys/fs/file-max", "r");
    if (f) {
      if (fscanf(f, "%lld", &max) != 1) max = -1;
      fclose(f);
    }
    snprintf(buf, len, "%s (ENFILE: the system's open-file table is full, fs.file-max %lld)",
             strerror(err), max);
  } else {
    snprintf(buf, len, "%s (errno %d)", strerror(err), err);
  }
  return buf;
}
