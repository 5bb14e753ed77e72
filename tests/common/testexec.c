/* Fork+exec ranks (test_exec_ranks, testutil.h): the parent writes each child what to run
 * through a pipe whose read end the child keeps across execve, named by WEFT_TEST_EXEC_FD; the
 * child, back in main, reaches test_require_weft_lib, reads it there and runs the rank. The
 * function travels as its offset from test_exec_child, both in the test program itself; the
 * argument as bytes. Between fork and execve the child calls only async-signal-safe functions
 * (fcntl, execve, _exit): argv and the environment are built before the fork. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define EXEC_MAGIC 0x7765667465786563ull /* "weftexec" */
#define EXEC_ENV "WEFT_TEST_EXEC_FD"
#define EXEC_ARG_MAX 32768 /* with the header, well inside a pipe's 64 KiB buffer */

typedef struct {
  uint64_t magic;
  int32_t rank, nranks, has_id, pad;
  int64_t fn_offset;
  uint64_t arg_bytes;
  ncclUniqueId id;
} exec_msg;

extern char** environ;

static void* exec_arg; /* the child's copy of arg: a global, so LeakSanitizer sees it held */

static intptr_t code_addr(void (*f)(void)) { return (intptr_t)f; }

/* The program's own arguments, from /proc/self/cmdline (NULL-terminated; free with free()). */
static char** own_argv(char** buf_out) {
  FILE* f = fopen("/proc/self/cmdline", "r");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char* buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + len, 1, cap - len, f)) > 0) {
    len += k;
    if (len == cap) {
      char* b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  fclose(f);
  if (!buf || len == 0) {
    free(buf);
    return NULL;
  }
  int argc = 0;
  for (size_t i = 0; i < len; i++) argc += buf[i] == '\0';
  char** argv = calloc((size_t)argc + 1, sizeof *argv);
  if (!argv) {
    free(buf);
    return NULL;
  }
  int a = 0;
  for (size_t i = 0; i < len && a < argc; i += strlen(buf + i) + 1) argv[a++] = buf + i;
  *buf_out = buf;
  return argv;
}

/* The current environment plus EXEC_ENV=fd (an old EXEC_ENV left out). */
static char** child_env(int fd, char* slot, size_t slot_len) {
  int n = 0;
  while (environ[n]) n++;
  char** env = calloc((size_t)n + 2, sizeof *env);
  if (!env) return NULL;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (strncmp(environ[i], EXEC_ENV "=", sizeof EXEC_ENV)) env[k++] = environ[i];
  snprintf(slot, slot_len, EXEC_ENV "=%d", fd);
  env[k] = slot;
  return env;
}

static int write_full(int fd, const void* p, size_t len) {
  const char* c = p;
  while (len > 0) {
    ssize_t k = write(fd, c, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    len -= (size_t)k;
  }
  return 0;
}

int test_exec_ranks(int n, test_rank_fn fn, const void* arg, size_t arg_bytes,
                    const ncclUniqueId* id, int timeout_s) {
  Dl_info mine, theirs;
  if (!dladdr((void*)test_exec_child, &mine) || !dladdr((void*)fn, &theirs) ||
      mine.dli_fbase != theirs.dli_fbase) {
    fprintf(stderr, "test_exec_ranks: the rank function is not in the test program\n");
    return 1;
  }
  char* argbuf = NULL;
  char** argv = own_argv(&argbuf);
  pid_t* pids = calloc((size_t)n, sizeof *pids);
  if (!argv || !pids) {
    fprintf(stderr, "test_exec_ranks: cannot read /proc/self/cmdline or out of memory\n");
    exit(1);
  }
  if (arg && arg_bytes > EXEC_ARG_MAX) {
    fprintf(stderr, "test_exec_ranks: %zu argument bytes, at most %d\n", arg_bytes, EXEC_ARG_MAX);
    exit(1);
  }
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      perror("test_exec_ranks: pipe2");
      exit(1);
    }
    /* Written before the fork, into the pipe's buffer: no child can have gone yet (a write
     * after one died would raise SIGPIPE here). */
    exec_msg m;
    memset(&m, 0, sizeof m);
    m.magic = EXEC_MAGIC;
    m.rank = r;
    m.nranks = n;
    m.has_id = id != NULL;
    if (id) m.id = *id;
    m.fn_offset = code_addr((void (*)(void))fn) - code_addr(test_exec_child);
    m.arg_bytes = arg ? arg_bytes : 0;
    if (write_full(p[1], &m, sizeof m) != 0 ||
        (m.arg_bytes && write_full(p[1], arg, m.arg_bytes) != 0)) {
      perror("test_exec_ranks: write");
      exit(1);
    }
    close(p[1]);
    char slot[64];
    char** env = child_env(p[0], slot, sizeof slot);
    if (!env) exit(1);
    pid_t c = fork();
    if (c < 0) {
      perror("test_exec_ranks: fork");
      exit(1);
    }
    if (c == 0) {
      if (fcntl(p[0], F_SETFD, 0) == 0) execve("/proc/self/exe", argv, env);
      _exit(127);
    }
    free(env);
    close(p[0]);
    pids[r] = c;
  }
  free(argv);
  free(argbuf);
  int rc = test_wait_children(pids, n, timeout_s);
  free(pids);
  return rc;
}

void test_exec_child(void) {
  const char* v = getenv(EXEC_ENV);
  if (!v) return;
  int fd = atoi(v);
  unsetenv(EXEC_ENV); /* ranks that start programs of their own do not pass it on */
  exec_msg m;
  if (test_read_full(fd, &m, sizeof m) != sizeof m || m.magic != EXEC_MAGIC) {
    fprintf(stderr, "test_exec_child: no rank to run on fd %d\n", fd);
    _exit(2);
  }
  exec_arg = m.arg_bytes ? malloc(m.arg_bytes) : NULL;
  if (m.arg_bytes && (!exec_arg || test_read_full(fd, exec_arg, m.arg_bytes) != m.arg_bytes)) {
    fprintf(stderr, "test_exec_child: rank %d: the argument did not arrive\n", m.rank);
    _exit(2);
  }
  close(fd);
  test_rank_fn fn = (test_rank_fn)(code_addr(test_exec_child) + m.fn_offset);
  int rc = fn(m.rank, m.nranks, m.has_id ? &m.id : NULL, exec_arg);
  fflush(NULL);
  exit(rc); /* exit, not _exit: LeakSanitizer checks the rank as it would any program */
}
