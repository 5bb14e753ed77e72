/* libnccl-tuner-weft.so: the plugin around the rules. One context per communicator holds the
 * rules read at its init and the communicator's shape; getCollInfo only reads it (no
 * allocation, no lock, no I/O), so it is thread-safe and fast.
 *
 * Which file (read at each init, through getenv so stock NCCL's environment works as is):
 *   WEFT_TUNER_CONFIG (set by the policy's tuner.config too): YAML, or CSV when the name ends
 *     in .csv or .conf;
 *   else NCCL_TUNER_CONFIG_FILE: NCCL's CSV (YAML when the name ends in .yaml or .yml);
 *   else ./nccl_tuner.conf when it exists (the example tuner's default);
 *   else no rules: the plugin leaves every decision to the core.
 * A file that is named but cannot be read, or YAML with any error, fails init with each error
 * logged (the core then decides alone and says so). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner_plugin.h"

enum { CONFIG_MAX_BYTES = 1 << 20 };

typedef struct {
  tuner_rules rules;
  size_t nranks, nnodes;
} weft_tuner_ctx;

static ncclDebugLogger_t logger;

static void tlog(ncclDebugLogLevel level, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tlog(ncclDebugLogLevel level, int line, const char* fmt, ...) {
  ncclDebugLogger_t log = __atomic_load_n(&logger, __ATOMIC_RELAXED);
  if (log == NULL) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log(level, NCCL_TUNING, __FILE__, line, "TUNER/weft: %s", msg);
}

static int ends_with(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The file to read and its format; 0 when there is none. */
static int find_config(char* path, size_t len, int* csv) {
  const char* w = getenv("WEFT_TUNER_CONFIG");
  const char* n = getenv("NCCL_TUNER_CONFIG_FILE");
  if (w && *w) {
    snprintf(path, len, "%s", w);
    *csv = ends_with(w, ".csv") || ends_with(w, ".conf");
  } else if (n && *n) {
    snprintf(path, len, "%s", n);
    *csv = !(ends_with(n, ".yaml") || ends_with(n, ".yml"));
  } else if (access("nccl_tuner.conf", R_OK) == 0) {
    snprintf(path, len, "nccl_tuner.conf");
    *csv = 1;
  } else {
    return 0;
  }
  return 1;
}

/* The whole file into a NUL-terminated buffer (bounded). NULL with why on failure. */
static char* read_file(const char* path, size_t* len, char* why, size_t wlen) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(why, wlen, "cannot open: %s", strerror(errno));
    return NULL;
  }
  char* buf = malloc(CONFIG_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES + 1, f) : 0;
  int err = ferror(f);
  fclose(f);
  if (buf == NULL || err || n > CONFIG_MAX_BYTES) {
    snprintf(why, wlen, "%s", buf == NULL ? "out of memory"
                              : err       ? "read error"
                                          : "larger than 1 MiB");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static void log_errors(ncclDebugLogLevel level, const policy_errors* e) {
  for (int i = 0; i < e->n; i++) tlog(level, __LINE__, "%s", e->msg[i]);
  if (e->dropped) tlog(level, __LINE__, "... and %d more", e->dropped);
}

ncclResult_t weft_tuner_init(size_t nranks, size_t nnodes, ncclDebugLogger_t log, void** ctx) {
  if (ctx == NULL) return ncclInvalidArgument;
  if (log) __atomic_store_n(&logger, log, __ATOMIC_RELAXED);
  weft_tuner_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return ncclSystemError;
  c->nranks = nranks;
  c->nnodes = nnodes;
  char path[4096];
  int csv = 0;
  if (!find_config(path, sizeof path, &csv)) {
    tlog(NCCL_LOG_INFO, __LINE__,
         "no rules (WEFT_TUNER_CONFIG, NCCL_TUNER_CONFIG_FILE and ./nccl_tuner.conf unset or "
         "absent): every decision is the core's");
    *ctx = c;
    return ncclSuccess;
  }
  char why[256];
  size_t len = 0;
  char* buf = read_file(path, &len, why, sizeof why);
  if (buf == NULL) {
    tlog(NCCL_LOG_WARN, __LINE__, "%s: %s", path, why);
    free(c);
    return ncclInvalidUsage;
  }
  policy_errors* errs = calloc(1, sizeof *errs);
  int n = -1, skipped = 0;
  if (errs)
    n = csv ? tuner_rules_load_csv(path, buf, len, &c->rules, errs, &skipped)
            : tuner_rules_load_yaml(path, buf, len, &c->rules, errs);
  free(buf);
  if (errs == NULL || n < 0) {
    if (errs) log_errors(NCCL_LOG_WARN, errs);
    tlog(NCCL_LOG_WARN, __LINE__, "%s: not used (%s)", path,
         errs ? "fix the errors above" : "out of memory");
    free(errs);
    free(c);
    return ncclInvalidUsage;
  }
  if (skipped) log_errors(NCCL_LOG_WARN, errs);
  free(errs);
  tlog(NCCL_LOG_INFO, __LINE__, "%s: %d rule(s)%s%s (%zu ranks, %zu nodes)", path, n,
       csv ? " in NCCL's CSV format" : "", skipped ? ", bad lines skipped" : "", nranks, nnodes);
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t weft_tuner_init_v5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                                ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                                ncclTunerConstants_v5_t* constants) {
  (void)comm_id, (void)nvl, (void)constants; /* the core's constants are left as they are */
  return weft_tuner_init(nranks, nnodes, log, ctx);
}

ncclResult_t weft_tuner_get_v4(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops,
                               float** table, int nalgo, int nproto, int reg_buff, int* nch) {
  const weft_tuner_ctx* c = ctx;
  if (c == NULL || table == NULL || nch == NULL) return ncclInvalidArgument;
  /* NCCL's table is float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]; weft's, for a tuner that
   * exports weftTunerAlgorithms (this one), has WEFT_NUM_ALGORITHMS rows; another shape: no
   * opinion. */
  if ((nalgo != NCCL_NUM_ALGORITHMS && nalgo != WEFT_NUM_ALGORITHMS) ||
      nproto != NCCL_NUM_PROTOCOLS)
    return ncclSuccess;
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])(void*)table;
  tuner_rules_apply_rows(&c->rules, (int)coll, nbytes, c->nranks, c->nnodes, pipe_ops, reg_buff,
                         cost, nalgo, nch);
  return ncclSuccess;
}

ncclResult_t weft_tuner_get_v3(void* ctx, ncclFunc_t coll, size_t nbytes, int pipe_ops,
                               float** table, int nalgo, int nproto, int* nch) {
  return weft_tuner_get_v4(ctx, coll, nbytes, pipe_ops, table, nalgo, nproto, 0, nch);
}

ncclResult_t weft_tuner_get_v2(void* ctx, ncclFunc_t coll, size_t nbytes, int collnet, int nvls,
                               int pipe_ops, int* algo, int* proto, int* nch) {
  const weft_tuner_ctx* c = ctx;
  if (c == NULL || algo == NULL || proto == NULL || nch == NULL) return ncclInvalidArgument;
  unsigned ok = (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_PAT);
  if (collnet) ok |= (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_COLLNET_CHAIN);
  if (nvls) ok |= (1u << NCCL_ALGO_NVLS) | (1u << NCCL_ALGO_NVLS_TREE);
  tuner_rules_pick(&c->rules, (int)coll, nbytes, c->nranks, c->nnodes, pipe_ops, ok, algo, proto,
                   nch);
  return ncclSuccess;
}

ncclResult_t weft_tuner_chunk(void* ctx, ncclFunc_t coll, size_t nbytes, int algo, int proto,
                              int nchannels, size_t* chunk) {
  const weft_tuner_ctx* c = ctx;
  (void)nchannels;
  if (c == NULL || chunk == NULL) return ncclInvalidArgument;
  uint64_t bytes = 0;
  if (tuner_rules_chunk(&c->rules, (int)coll, nbytes, c->nranks, c->nnodes, algo, proto, &bytes))
    *chunk = (size_t)bytes;
  return ncclSuccess;
}

ncclResult_t weft_tuner_fini(void* ctx) {
  weft_tuner_ctx* c = ctx;
  if (c == NULL) return ncclSuccess;
  tuner_rules_free(&c->rules);
  free(c);
  return ncclSuccess;
}
