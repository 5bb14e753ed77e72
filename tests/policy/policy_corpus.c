/* `weft-policy check` against the corpus: every file in bad/ must fail cleanly — exit status
 * 1, no signal, the first line "FILE:LINE:COL: message" with the position and message its
 * first line announces ("# expect: LINE:COL: text", text a substring) — and every file in
 * good/ must pass, as must every ```yaml block of docs/policy.md (snippets there use other
 * fences). Hostile files too large to keep in the tree (1 MiB and more) are generated. Each
 * run must finish within a second (three under a sanitizer).
 * Usage: policy_corpus TOOL BAD_DIR GOOD_DIR DOCS_MD */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifdef WEFT_TEST_SANITIZED
#define TIME_BOUND_S 3.0
#else
#define TIME_BOUND_S 1.0
#endif

static const char* tool;
static char tmpdir[] = "/tmp/weft-policy-corpus-XXXXXX";
static int failures;
static double slowest;
static char slowest_file[PATH_MAX];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Run `tool check path`; stdout and stderr into out. Returns the wait status, -1 on timeout. */
static int run_check(const char* path, char* out, size_t len, double* secs) {
  int fds[2];
  EXPECT(pipe(fds) == 0);
  double t0 = now_s();
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl(tool, tool, "check", path, (char*)NULL);
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  size_t used = 0;
  int status = 0;
  char drain[4096];
  for (;;) {
    /* Keep the start of the output; read and drop the rest so the child never blocks. */
    ssize_t r = used < len - 1 ? read(fds[0], out + used, len - 1 - used)
                               : read(fds[0], drain, sizeof drain);
    if (r > 0 && used < len - 1) used += (size_t)r;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      while (used < len - 1 && (r = read(fds[0], out + used, len - 1 - used)) > 0)
        used += (size_t)r;
      break;
    }
    if (now_s() - t0 > 10 * TIME_BOUND_S) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    usleep(1000);
  }
  close(fds[0]);
  out[used] = '\0';
  *secs = now_s() - t0;
  if (*secs > slowest) {
    slowest = *secs;
    snprintf(slowest_file, sizeof slowest_file, "%s", path);
  }
  return status;
}

static void fail(const char* path, const char* what, const char* out) {
  fprintf(stderr, "FAIL %s: %s\n  output: %s\n", path, what, out);
  failures++;
}

/* A bad file: non-zero exit without a signal, positioned first line, in time. want_pos and
 * want_msg may be NULL (generated files: any position). */
static void check_bad(const char* path, const char* want_pos, const char* want_msg) {
  char out[8192];
  double secs;
  int st = run_check(path, out, sizeof out, &secs);
  if (st == -1) return fail(path, "timed out", out);
  if (WIFSIGNALED(st)) return fail(path, strsignal(WTERMSIG(st)), out);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) return fail(path, "exit status is not 1", out);
  if (secs > TIME_BOUND_S) return fail(path, "slower than the bound", out);
  size_t pl = strlen(path);
  if (strncmp(out, path, pl) || out[pl] != ':') return fail(path, "no FILE: prefix", out);
  int line = 0, col = 0, n = 0;
  if (sscanf(out + pl, ":%d:%d: %n", &line, &col, &n) != 2 || n == 0 || line < 1 || col < 1)
    return fail(path, "no LINE:COL position", out);
  if (want_pos) {
    char pos[32];
    snprintf(pos, sizeof pos, "%d:%d", line, col);
    if (strcmp(pos, want_pos)) return fail(path, "wrong position", out);
  }
  char* eol = strchr(out, '\n');
  if (eol) *eol = '\0';
  if (want_msg && strstr(out + pl + n, want_msg) == NULL) return fail(path, "wrong message", out);
}

static void check_good(const char* path) {
  char out[8192];
  double secs;
  int st = run_check(path, out, sizeof out, &secs);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) fail(path, "valid file rejected", out);
}

static int ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

static int bad_corpus(const char* dir) {
  DIR* d = opendir(dir);
  EXPECT(d != NULL);
  struct dirent* e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (!ends_with(e->d_name, ".yaml")) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE* f = fopen(path, "rb");
    EXPECT(f != NULL);
    char first[512] = "";
    if (!fgets(first, sizeof first, f)) first[0] = '\0';
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    int line = 0, col = 0, at = 0;
    if (sscanf(first, "# expect: %d:%d: %n", &line, &col, &at) != 2 || at == 0 ||
        first[at] == '\0') {
      fail(path, "first line is not '# expect: LINE:COL: message'", first);
      continue;
    }
    char pos[32];
    const char* msg = first + at;
    snprintf(pos, sizeof pos, "%d:%d", line, col);
    check_bad(path, pos, msg);
    n++;
  }
  closedir(d);
  return n;
}

static int good_corpus(const char* dir) {
  DIR* d = opendir(dir);
  EXPECT(d != NULL);
  struct dirent* e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (!ends_with(e->d_name, ".yaml")) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    check_good(path);
    n++;
  }
  closedir(d);
  return n;
}

/* Every ```yaml block of the docs is a complete, valid policy file. */
static int docs_examples(const char* md) {
  FILE* in = fopen(md, "r");
  EXPECT(in != NULL);
  char line[1024];
  FILE* out = NULL;
  char path[PATH_MAX];
  int n = 0, lineno = 0;
  while (fgets(line, sizeof line, in)) {
    lineno++;
    if (out == NULL && !strcmp(line, "```yaml\n")) {
      snprintf(path, sizeof path, "%s/docs-example-line-%d.yaml", tmpdir, lineno);
      out = fopen(path, "w");
      EXPECT(out != NULL);
    } else if (out && !strcmp(line, "```\n")) {
      fclose(out);
      out = NULL;
      check_good(path);
      n++;
    } else if (out) {
      fputs(line, out);
    }
  }
  if (out) fclose(out);
  fclose(in);
  return n;
}

static void write_file(const char* name, void (*fill)(FILE*, size_t), size_t bytes,
                       char* path, size_t len) {
  snprintf(path, len, "%s/%s", tmpdir, name);
  FILE* f = fopen(path, "wb");
  EXPECT(f != NULL);
  fill(f, bytes);
  fclose(f);
}

static void fill_hash(FILE* f, size_t n) {
  for (size_t i = 0; i < n; i++) fputc(i % 64 == 63 ? '\n' : '#', f);
}
static void fill_open(FILE* f, size_t n) {
  fputs("version: 1\nclusters: ", f);
  for (size_t i = 22; i < n; i++) fputc('[', f);
}
static void fill_random(FILE* f, size_t n) {
  uint64_t s = test_seed(0xc0ffee);
  for (size_t i = 0; i < n; i++) fputc((int)(test_rand(&s) & 0xff), f);
}
static void fill_list(FILE* f, size_t n) {
  fputs("version: 1\nclusters:\n", f);
  for (size_t i = 21; i + 4 <= n; i += 4) fputs("- a\n", f);
}
static void fill_long_keys(FILE* f, size_t n) { /* the duplicate-key check's worst case */
  fputs("version: 1\n", f);
  for (size_t k = 0, used = 11; used + 4200 < n; k++, used += 4103) {
    for (int i = 0; i < 4090; i++) fputc('k', f);
    fprintf(f, "%05zu: 1\n", k);
  }
}
static void fill_aliases(FILE* f, size_t n) { /* many small alias uses */
  fputs("version: 1\nx: &x [a, b, c, d, e, f, g, h]\ny: [", f);
  for (size_t used = 50; used + 4 < n; used += 4) fputs("*x, ", f);
  fputs("*x]\n", f);
}

static int generated(void) {
  char path[PATH_MAX];
  const size_t mib = 1u << 20;
  write_file("oversized.yaml", fill_hash, mib + 1, path, sizeof path);
  check_bad(path, "1:1", "larger than");
  write_file("open_brackets.yaml", fill_open, mib, path, sizeof path);
  check_bad(path, NULL, "nesting deeper than");
  write_file("random.yaml", fill_random, mib, path, sizeof path);
  check_bad(path, NULL, NULL);
  write_file("long_list.yaml", fill_list, mib, path, sizeof path);
  check_bad(path, NULL, "entries");
  write_file("long_keys.yaml", fill_long_keys, mib, path, sizeof path);
  check_bad(path, NULL, NULL);
  write_file("many_aliases.yaml", fill_aliases, mib, path, sizeof path);
  check_bad(path, NULL, NULL);
  return 6;
}

static void cleanup(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: policy_corpus TOOL BAD_DIR GOOD_DIR DOCS_MD\n");
    return 2;
  }
  tool = argv[1];
  EXPECT(mkdtemp(tmpdir) != NULL);
  atexit(cleanup);
  int bad = bad_corpus(argv[2]);
  int good = good_corpus(argv[3]);
  int docs = docs_examples(argv[4]);
  int gen = generated();
  printf("%d bad, %d generated hostile, %d good, %d docs examples; slowest %.0f ms (%s)\n", bad,
         gen, good, docs, slowest * 1e3, slowest_file);
  EXPECT(bad >= 30);
  EXPECT(docs >= 3);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
