/* The test runner of weft-conformance: a table of named tests, each run in a child process of
 * its own (its own process group) under a timeout, so a plugin that crashes or hangs yields a
 * failed test naming the signal or the timeout instead of a dead suite.
 *
 * A verdict has three values: PASS; FAIL, a contract broken (the reason names the call and the
 * evidence); INCONCLUSIVE, the test could not reach what it checks (the reason says why). A test
 * that does not apply here (the plugin does not offer the feature, no device on this host) is
 * SKIPped and gives no verdict. Prints one line per test, under a FAIL or INCONCLUSIVE the
 * plugin's own log lines of that test, then a summary that lists what to fix first, and
 * optionally a JSON report. The exit status is 1 when a test failed.
 *
 * Inside a test (the child), conf_fail/conf_inconclusive/conf_skip record the reason (the first
 * one wins; safe from several threads) and return the matching result, so a test body reads
 * `if (bad) return conf_fail("…", …);`. conf_log_line keeps the plugin's log lines. */
#ifndef WEFT_CONF_RUNNER_H
#define WEFT_CONF_RUNNER_H

#include <stddef.h>
#include <stdio.h>

typedef enum { CONF_PASS = 0, CONF_FAIL = 1, CONF_SKIP = 2, CONF_INCONCLUSIVE = 3 } conf_result;

/* Propagate a non-PASS result (FAIL, INCONCLUSIVE or SKIP) from a helper. */
#define CONF_TRY(call)                      \
  do {                                      \
    conf_result r_ = (call);                \
    if (r_ != CONF_PASS) return r_;         \
  } while (0)

typedef struct {
  const char* name;           /* behaviour, e.g. net_isend_returns_promptly_under_backpressure */
  conf_result (*fn)(void* ctx);
  double timeout_factor;      /* × the base timeout; 0 means 1 */
} conf_test;

typedef struct {
  const char* filter;    /* comma-separated globs; a leading '!' excludes; NULL: all */
  const char* json_path; /* NULL: no report */
  double timeout_s;      /* base per-test timeout */
  int verbose;
  int list_only;         /* print the names that the filter selects, run nothing */
  /* The cause of a failure, for the summary: what it means and how to fix it (NULL: none), from
   * the test's name and its reason (a test can fail by a symptom of an earlier stage: a close
   * test whose message never arrived). *stage orders the summary: lower first (the stage of
   * the plugin's life the cause belongs to: loading, connections, data, teardown), suite order
   * within a stage. NULL hint: suite order, no cause. */
  const char* (*hint)(const char* test_name, const char* reason, int* stage);
} conf_options;

/* Runs every selected test of the table in its own child. ctx is passed to each test (the child
 * inherits it). setup, when not NULL, runs in the parent before each test and may skip it by
 * returning CONF_SKIP with a reason in why (e.g. "plugin failed to load"). extra_json, when not
 * NULL, is a JSON object body ("key": value, …) added to the report. Returns the process exit
 * status: 0 when nothing failed, 1 otherwise. */
typedef conf_result (*conf_gate_fn)(void* ctx, const conf_test* t, char* why, size_t whylen);
int conf_run(const char* suite, const char* plugin, const conf_test* tests, int ntests, void* ctx,
             conf_gate_fn gate, const conf_options* opt, const char* extra_json);

/* Inside a test: record why and return CONF_FAIL / CONF_INCONCLUSIVE / CONF_SKIP. */
conf_result conf_fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
conf_result conf_inconclusive(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
conf_result conf_skip(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* Inside a test: keep one log line of the plugin's ("WARN …"); the last few are shown under the
 * test's line when it fails or is inconclusive. Safe from several threads. */
void conf_log_line(const char* line);
/* The newest kept line that contains want (NULL: the newest of all) into buf; 0 when none. */
int conf_log_find(const char* want, char* buf, size_t len);
/* Also write each kept line to f, after prefix (a process that reports to another). */
void conf_log_to(FILE* f, const char* prefix);
/* The reason recorded so far ("" when none). */
const char* conf_reason(void);
/* Replace the recorded reason (used to prefix a peer's reason). */
void conf_set_reason(const char* text);
/* Forget the recorded reason, so the next conf_fail/conf_skip records its own (a probe child
 * that reports two results). */
void conf_clear_reason(void);

/* "SIGSEGV (Segmentation fault)" for a signal number. */
const char* conf_signal_name(int sig, char* buf, size_t len);

/* True when name is selected by the filter (NULL filter selects all). */
int conf_filter_match(const char* filter, const char* name);

/* dlopen(path, RTLD_NOW|RTLD_LOCAL) in a throw-away child, so a plugin whose constructors crash
 * or hang cannot take the runner with it. Returns 1 when it succeeded, else 0 with why. */
int conf_probe_dlopen(const char* path, char* why, size_t len);

/* The library to open for a command-line argument: the argument itself when it holds a '/' or
 * ends in ".so", else "libnccl-<kind>-<arg>.so" (looked up on the loader path), in buf. */
const char* conf_plugin_path(const char* arg, const char* kind, char* buf, size_t len);

/* Verbose notes from a test, printed on stderr with the test's name. */
void conf_note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
extern int conf_verbose;
extern const char* conf_current_test;

#endif
