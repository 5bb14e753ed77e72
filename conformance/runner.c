/* Runs each test in a child process of its own (see runner.h). The child is the leader of a new
 * process group, so the peers a two-process test forks die with it on a timeout. The child
 * reports its result and reason through a pipe; a child that dies by a signal or runs out of
 * time is a FAIL naming the signal or the timeout, and the plugin call it was inside when the
 * runner last heard of it (a shared page the child writes before each plugin call). */
#include "runner.h"

#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stage.h"

int conf_verbose;
const char* conf_current_test = "";

/* What the child sends back: result and reason. Below PIPE_BUF, so one write is atomic. */
#define CONF_LOG_KEEP 6      /* plugin log lines kept per test */
#define CONF_LOG_LINE 200    /* characters kept of each */

typedef struct {
  int result;
  char reason[1024];
  char log[CONF_LOG_KEEP][CONF_LOG_LINE]; /* oldest first; "" unused */
} conf_record;

static pthread_mutex_t reason_lock = PTHREAD_MUTEX_INITIALIZER;
static char reason_buf[1024];
static int reason_set;

static void set_reason_v(const char* fmt, va_list ap) {
  pthread_mutex_lock(&reason_lock);
  if (!reason_set) {
    vsnprintf(reason_buf, sizeof reason_buf, fmt, ap);
    reason_set = 1;
  }
  pthread_mutex_unlock(&reason_lock);
}

conf_result conf_fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_reason_v(fmt, ap);
  va_end(ap);
  return CONF_FAIL;
}

conf_result conf_inconclusive(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_reason_v(fmt, ap);
  va_end(ap);
  return CONF_INCONCLUSIVE;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_ring[CONF_LOG_KEEP][CONF_LOG_LINE];
static unsigned log_count;

static FILE* log_echo;
static const char* log_echo_prefix = "";

void conf_log_to(FILE* f, const char* prefix) {
  log_echo = f;
  log_echo_prefix = prefix ? prefix : "";
}

void conf_log_line(const char* line) {
  pthread_mutex_lock(&log_lock);
  if (log_echo) fprintf(log_echo, "%s%s\n", log_echo_prefix, line);
  snprintf(log_ring[log_count % CONF_LOG_KEEP], CONF_LOG_LINE, "%s", line);
  log_count++;
  pthread_mutex_unlock(&log_lock);
}

int conf_log_find(const char* want, char* buf, size_t len) {
  int found = 0;
  pthread_mutex_lock(&log_lock);
  unsigned n = log_count < CONF_LOG_KEEP ? log_count : CONF_LOG_KEEP;
  for (unsigned i = 0; i < n && !found; i++) {
    const char* line = log_ring[(log_count - 1 - i) % CONF_LOG_KEEP];
    if (want == NULL || strstr(line, want)) {
      snprintf(buf, len, "%s", line);
      found = 1;
    }
  }
  pthread_mutex_unlock(&log_lock);
  return found;
}

static void log_copy(conf_record* rec) {
  pthread_mutex_lock(&log_lock);
  unsigned n = log_count < CONF_LOG_KEEP ? log_count : CONF_LOG_KEEP;
  for (unsigned i = 0; i < n; i++)
    memcpy(rec->log[i], log_ring[(log_count - n + i) % CONF_LOG_KEEP], CONF_LOG_LINE);
  pthread_mutex_unlock(&log_lock);
}

conf_result conf_skip(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_reason_v(fmt, ap);
  va_end(ap);
  return CONF_SKIP;
}

const char* conf_reason(void) { return reason_buf; }

void conf_set_reason(const char* text) {
  pthread_mutex_lock(&reason_lock);
  snprintf(reason_buf, sizeof reason_buf, "%s", text);
  reason_set = 1;
  pthread_mutex_unlock(&reason_lock);
}

void conf_clear_reason(void) {
  pthread_mutex_lock(&reason_lock);
  reason_buf[0] = '\0';
  reason_set = 0;
  pthread_mutex_unlock(&reason_lock);
}

void conf_note(const char* fmt, ...) {
  if (!conf_verbose) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "  [%s] %s\n", conf_current_test, line);
}

const char* conf_signal_name(int sig, char* buf, size_t len) {
  static const struct {
    int sig;
    const char* name;
  } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGABRT, "SIGABRT"},
               {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
               {SIGPIPE, "SIGPIPE"}, {SIGTERM, "SIGTERM"}, {SIGALRM, "SIGALRM"},
               {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGINT, "SIGINT"},
               {SIGHUP, "SIGHUP"},   {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}};
  const char* abbrev = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) abbrev = names[i].name;
  if (abbrev)
    snprintf(buf, len, "%s (%s)", abbrev, strsignal(sig));
  else
    snprintf(buf, len, "signal %d (%s)", sig, strsignal(sig));
  return buf;
}

static int glob_match(const char* glob, size_t n, const char* name) {
  char pat[256];
  if (n >= sizeof pat) n = sizeof pat - 1;
  memcpy(pat, glob, n);
  pat[n] = '\0';
  return fnmatch(pat, name, 0) == 0;
}

int conf_filter_match(const char* filter, const char* name) {
  if (!filter || !*filter) return 1;
  int have_include = 0, included = 0;
  const char* p = filter;
  while (*p) {
    const char* end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0) {
      if (p[0] == '!') {
        if (glob_match(p + 1, n - 1, name)) return 0;
      } else {
        have_include = 1;
        if (glob_match(p, n, name)) included = 1;
      }
    }
    p += n;
    if (*p == ',') p++;
  }
  return have_include ? included : 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

typedef struct {
  const char* name;
  conf_result result;
  char reason[1100];
  char log[CONF_LOG_KEEP][CONF_LOG_LINE];
  double seconds;
} conf_outcome;

/* Runs one test in a child; fills out. */
static void run_one(const conf_test* t, void* ctx, double timeout_s, conf_outcome* out) {
  int fds[2];
  out->name = t->name;
  out->result = CONF_FAIL;
  out->reason[0] = '\0';
  if (pipe(fds) != 0) {
    snprintf(out->reason, sizeof out->reason, "runner: pipe failed: %s", strerror(errno));
    return;
  }
  conf_stage_reset();
  fflush(stdout);
  fflush(stderr);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(out->reason, sizeof out->reason, "runner: fork failed: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    setpgid(0, 0);
    close(fds[0]);
    /* Only the runner's lines go to stdout; whatever the plugin prints goes to stderr. */
    dup2(2, 1);
    signal(SIGPIPE, SIG_DFL);
    conf_current_test = t->name;
    conf_result_fd = fds[1];
    conf_record rec;
    memset(&rec, 0, sizeof rec);
    rec.result = t->fn(ctx);
    snprintf(rec.reason, sizeof rec.reason, "%s", conf_reason());
    log_copy(&rec);
    ssize_t w = write(fds[1], &rec, sizeof rec);
    (void)w;
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  setpgid(pid, pid); /* also done by the child; whichever runs first */
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);

  conf_record rec;
  size_t got = 0;
  int status = 0, exited = 0, timed_out = 0;
  double deadline = t0 + timeout_s;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = 1;
      break;
    }
    if (now_s() > deadline) {
      timed_out = 1;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    if (poll(&p, 1, 20) > 0 && got < sizeof rec) {
      ssize_t n = read(fds[0], (char*)&rec + got, sizeof rec - got);
      if (n > 0) got += (size_t)n;
    }
  }
  while (got < sizeof rec) {
    ssize_t n = read(fds[0], (char*)&rec + got, sizeof rec - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fds[0]);
  /* Peers a test forked live in the child's group: end whatever is left of it. */
  kill(-pid, SIGKILL);
  out->seconds = now_s() - t0;

  char stage[160];
  conf_stage_describe(stage, sizeof stage);
  if (timed_out) {
    snprintf(out->reason, sizeof out->reason, "timed out after %.0f s%s", timeout_s, stage);
    return;
  }
  (void)exited;
  if (WIFSIGNALED(status)) {
    char sig[96];
    snprintf(out->reason, sizeof out->reason, "killed by %s%s",
             conf_signal_name(WTERMSIG(status), sig, sizeof sig), stage);
    return;
  }
  if (got < sizeof rec) {
    snprintf(out->reason, sizeof out->reason, "exited with status %d without reporting a result%s",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, stage);
    return;
  }
  rec.reason[sizeof rec.reason - 1] = '\0';
  out->result = (rec.result == CONF_PASS || rec.result == CONF_SKIP ||
                 rec.result == CONF_INCONCLUSIVE)
                    ? (conf_result)rec.result
                    : CONF_FAIL;
  snprintf(out->reason, sizeof out->reason, "%s", rec.reason);
  for (int i = 0; i < CONF_LOG_KEEP; i++) {
    rec.log[i][CONF_LOG_LINE - 1] = '\0';
    memcpy(out->log[i], rec.log[i], CONF_LOG_LINE);
  }
  if (out->result != CONF_PASS && out->reason[0] == '\0')
    snprintf(out->reason, sizeof out->reason, "no reason given");
}

static void write_json(const char* path, const char* suite, const char* plugin,
                       const conf_outcome* outs, int n, int np, int nf, int ns, int ni,
                       const char* extra) {
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "weft-conformance: cannot write %s: %s\n", path, strerror(errno));
    return;
  }
  static const char* names[] = {"pass", "fail", "skip", "inconclusive"};
  fprintf(f, "{\n  \"suite\": ");
  json_string(f, suite);
  fprintf(f, ",\n  \"plugin\": ");
  json_string(f, plugin);
  if (extra && *extra) fprintf(f, ",\n  %s", extra);
  fprintf(f,
          ",\n  \"passed\": %d,\n  \"failed\": %d,\n  \"inconclusive\": %d,\n  \"skipped\": %d,"
          "\n  \"tests\": [",
          np, nf, ni, ns);
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    json_string(f, outs[i].name);
    fprintf(f, ", \"result\": \"%s\", \"seconds\": %.3f, \"reason\": ", names[outs[i].result],
            outs[i].seconds);
    json_string(f, outs[i].reason);
    fprintf(f, ", \"plugin_log\": [");
    for (int k = 0, first = 1; k < CONF_LOG_KEEP; k++) {
      if (!outs[i].log[k][0]) continue;
      if (!first) fputs(", ", f);
      json_string(f, outs[i].log[k]);
      first = 0;
    }
    fputs("]}", f);
  }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
}

static void print_log(const conf_outcome* o) {
  for (int k = 0; k < CONF_LOG_KEEP; k++)
    if (o->log[k][0]) printf("    plugin: %s\n", o->log[k]);
}

/* The closing lines: the count, then what to fix first — failures by the stage of their cause
 * (opt->hint: loading, connections, data, …, teardown), suite order within a stage, so a root
 * cause comes before the failures that may follow from it — then what could not be checked. */
static void print_summary(const conf_outcome* outs, int n, int np, int nf, int ns, int ni,
                          const conf_options* opt) {
  printf("%d passed, %d failed, %d inconclusive, %d skipped\n", np, nf, ni, ns);
  if (nf) {
    printf("summary: %d contract(s) broken; fix in this order:\n", nf);
    int* stage = calloc((size_t)n, sizeof *stage);
    const char** cause = calloc((size_t)n, sizeof *cause);
    int lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
      if (outs[i].result != CONF_FAIL) continue;
      int st = 0;
      const char* h = opt->hint ? opt->hint(outs[i].name, outs[i].reason, &st) : NULL;
      if (stage) stage[i] = st;
      if (cause) cause[i] = h;
      if (st < lo) lo = st;
      if (st > hi) hi = st;
    }
    if (!stage || !cause) lo = hi = 0; /* out of memory: suite order, no causes */
    for (int st = lo, k = 0; st <= hi; st++)
      for (int i = 0; i < n; i++) {
        if (outs[i].result != CONF_FAIL || (stage && stage[i] != st)) continue;
        const char* h = cause ? cause[i] : NULL;
        printf("  %d. %s%s%s\n", ++k, outs[i].name, h ? ": " : "", h ? h : "");
      }
    free(stage);
    free(cause);
  }
  if (ni) {
    printf("summary: %d test(s) could not reach what they check (not a verdict on the plugin):\n",
           ni);
    for (int i = 0; i < n; i++)
      if (outs[i].result == CONF_INCONCLUSIVE) printf("  - %s\n", outs[i].name);
  }
  if (!nf && !ni) printf("summary: no contract broken among the tests that ran\n");
}

int conf_run(const char* suite, const char* plugin, const conf_test* tests, int ntests, void* ctx,
             conf_gate_fn gate, const conf_options* opt, const char* extra_json) {
  conf_outcome* outs = calloc((size_t)ntests, sizeof *outs);
  if (!outs) return 1;
  int n = 0, np = 0, nf = 0, ns = 0, ni = 0;
  conf_verbose = opt->verbose;
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < ntests; i++) {
    const conf_test* t = &tests[i];
    if (!conf_filter_match(opt->filter, t->name)) continue;
    if (opt->list_only) {
      printf("%s\n", t->name);
      continue;
    }
    conf_outcome* o = &outs[n++];
    o->name = t->name;
    conf_result g = CONF_PASS;
    if (gate) g = gate(ctx, t, o->reason, sizeof o->reason);
    if (g != CONF_PASS) {
      o->result = g;
    } else {
      double factor = t->timeout_factor > 0 ? t->timeout_factor : 1.0;
      run_one(t, ctx, opt->timeout_s * factor, o);
    }
    switch (o->result) {
      case CONF_PASS:
        np++;
        printf("PASS %s\n", o->name);
        break;
      case CONF_SKIP:
        ns++;
        printf("SKIP %s: %s\n", o->name, o->reason);
        break;
      case CONF_INCONCLUSIVE:
        ni++;
        printf("INCONCLUSIVE %s: %s\n", o->name, o->reason);
        print_log(o);
        break;
      default:
        nf++;
        printf("FAIL %s: %s\n", o->name, o->reason);
        print_log(o);
        break;
    }
    if (opt->verbose) fprintf(stderr, "  [%s] %.2f s\n", o->name, o->seconds);
    fflush(stdout);
  }
  if (!opt->list_only) {
    print_summary(outs, n, np, nf, ns, ni, opt);
    if (opt->json_path)
      write_json(opt->json_path, suite, plugin, outs, n, np, nf, ns, ni, extra_json);
  }
  fflush(stdout);
  free(outs);
  return nf ? 1 : 0;
}

/* dlopen in a throw-away child first: a plugin whose constructor crashes or hangs must not take
 * the runner with it. Returns 1 when the child's dlopen succeeded. */
int conf_probe_dlopen(const char* path, char* why, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(2, 1);
    alarm(30);
    void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
      const char* e = dlerror();
      ssize_t w = write(fds[1], e, strlen(e));
      (void)w;
      _exit(1);
    }
    _exit(0);
  }
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  ssize_t n = read(fds[0], why, len - 1);
  why[n > 0 ? n : 0] = '\0';
  close(fds[0]);
  if (WIFSIGNALED(status)) {
    char sig[96];
    snprintf(why, len, "dlopen killed the process with %s",
             conf_signal_name(WTERMSIG(status), sig, sizeof sig));
    return 0;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (!why[0]) snprintf(why, len, "dlopen failed");
    return 0;
  }
  return 1;
}


const char* conf_plugin_path(const char* arg, const char* kind, char* buf, size_t len) {
  size_t n = strlen(arg);
  if (strchr(arg, '/') || (n >= 3 && strcmp(arg + n - 3, ".so") == 0) || strstr(arg, ".so."))
    return arg;
  snprintf(buf, len, "libnccl-%s-%s.so", kind, arg);
  return buf;
}
