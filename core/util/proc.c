/* Process liveness and state from kill(pid, 0) and /proc/<pid>/stat (a zombie counts as gone). */
#include "util/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

char proc_state(int pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "re");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* close_paren = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
  return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

int proc_alive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  char st = proc_state(pid);
  return !(st == 'Z' || st == 'X');
}
