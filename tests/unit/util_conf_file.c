/* The conf-file reader refuses what is not a regular text file of bounded size (issue 42):
 * NCCL_CONF_FILE=/dev/zero spun for ever, a FIFO waited for a writer, and a line longer than
 * the reader's buffer came apart into pieces read as lines of their own (a commented-out
 * setting took effect). Each case runs in its own child (the files are read once a process),
 * under an alarm, and checks the value a setting ends with against the one the file says. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/param.h"

#define LONG_LINE 5000 /* longer than the reader's line bound */

static int64_t buff_want; /* the NCCL_BUFFSIZE the file sets validly, random */

/* In a child: point NCCL_CONF_FILE at path, read NCCL_BUFFSIZE, exit 0 when it is want. */
static int run_case(const char* what, const char* path, int64_t want) {
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    alarm(10);
    setenv("NCCL_CONF_FILE", path, 1);
    unsetenv("NCCL_BUFFSIZE");
    int64_t got = param_int(WEFT_PARAM_BUFFSIZE);
    printf("%s: NCCL_BUFFSIZE = %lld (expected %lld)\n", what, (long long)got, (long long)want);
    fflush(NULL);
    _exit(got == want ? 0 : 1);
  }
  int st = 0;
  EXPECT(waitpid(pid, &st, 0) == pid);
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "%s: the reader did not return (signal %d)\n", what, WTERMSIG(st));
    return 1;
  }
  return WEXITSTATUS(st) != 0;
}

static void write_file(const char* path, const char* text, size_t len) {
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  EXPECT(fwrite(text, 1, len, f) == len);
  EXPECT(fclose(f) == 0);
}

int main(void) {
  test_require_weft_lib();
  uint64_t rng = test_seed((uint64_t)getpid());
  buff_want = 65536 * (2 + (int64_t)(test_rand(&rng) % 100));
  int64_t def = atoll(param_info(WEFT_PARAM_BUFFSIZE)->def);
  char dir[] = "/tmp/weft-conf-XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char path[256], fifo[256];
  int fails = 0;

  /* A device that never ends and a FIFO nobody writes: refused, the default stays. */
  fails += run_case("/dev/zero", "/dev/zero", def);
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  EXPECT(mkfifo(fifo, 0600) == 0);
  fails += run_case("fifo", fifo, def);
  fails += run_case("directory", dir, def);

  /* A commented-out setting on a line longer than the bound: the whole line is a comment, and
   * the valid line after it still counts. */
  char* text = malloc(LONG_LINE + 256);
  EXPECT(text != NULL);
  size_t n = 0;
  text[n++] = '#';
  while (n < 4095) text[n++] = 'x'; /* the old reader's piece ended here */
  n += (size_t)sprintf(text + n, "NCCL_BUFFSIZE=%lld", (long long)(buff_want * 2));
  while (n < LONG_LINE) text[n++] = ' ';
  n += (size_t)sprintf(text + n, "\nNCCL_BUFFSIZE=%lld\n", (long long)buff_want);
  snprintf(path, sizeof path, "%s/long.conf", dir);
  write_file(path, text, n);
  fails += run_case("long line", path, buff_want);

  /* Text, then a NUL byte and more: what follows the NUL is not read. */
  n = (size_t)sprintf(text, "NCCL_BUFFSIZE=%lld\n", (long long)buff_want);
  text[n++] = '\0';
  n += (size_t)sprintf(text + n, "\nNCCL_BUFFSIZE=%lld\n", (long long)(buff_want * 2));
  snprintf(path, sizeof path, "%s/nul.conf", dir);
  write_file(path, text, n);
  fails += run_case("NUL byte", path, buff_want);

  /* More than the size bound (a huge file of blank lines with a setting at the end): refused
   * at once, not read. */
  snprintf(path, sizeof path, "%s/huge.conf", dir);
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  EXPECT(fseek(f, 2 << 20, SEEK_SET) == 0);
  fprintf(f, "\nNCCL_BUFFSIZE=%lld\n", (long long)buff_want);
  EXPECT(fclose(f) == 0);
  fails += run_case("huge file", path, def);

  free(text);
  unlink(path);
  snprintf(path, sizeof path, "%s/long.conf", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/nul.conf", dir);
  unlink(path);
  unlink(fifo);
  rmdir(dir);
  printf("%d case(s) failed\n", fails);
  return fails ? 1 : 0;
}
