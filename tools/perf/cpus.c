/* --cpu LIST: which CPU each local rank process runs on. The list is Linux's cpulist grammar
 * (taskset -c, /sys/devices/system/cpu/online): CPU numbers and ranges, comma-separated. Local
 * process k is pinned to the k-th CPU of the list (modulo its length) before it loads CUDA or
 * makes a communicator, so the threads the runtime and the library start run there too, as
 * under taskset. Under --vs rank process k of both libraries gets the same CPU. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* One CPU number at *s, advancing *s past it. */
static int parse_cpu(const char** s, int* cpu) {
  if (**s < '0' || **s > '9') return -1;
  char* end;
  errno = 0;
  long v = strtol(*s, &end, 10);
  if (errno || v >= CPU_SETSIZE) return -1;
  *cpu = (int)v;
  *s = end;
  return 0;
}

int perf_parse_cpus(const char* text, int* cpus, int max, int* n, char* err, size_t errlen) {
  const char* why = NULL;
  const char* s = text;
  *n = 0;
  while (!why) {
    int lo, hi;
    if (parse_cpu(&s, &lo)) {
      why = "expected CPU numbers and ranges, e.g. 8 or 8-11,16";
      break;
    }
    hi = lo;
    if (*s == '-') {
      s++;
      if (parse_cpu(&s, &hi) || hi < lo) {
        why = "a range is LOW-HIGH with LOW <= HIGH";
        break;
      }
    }
    for (int c = lo; c <= hi && !why; c++) {
      for (int i = 0; i < *n; i++) {
        if (cpus[i] != c) continue;
        snprintf(err, errlen, "'%s': CPU %d is listed twice", text, c);
        return -1;
      }
      if (*n >= max)
        why = "too many CPUs";
      else
        cpus[(*n)++] = c;
    }
    if (!why && !*s) return 0;
    if (!why && (*s++ != ',' || !*s)) why = "CPUs are separated by single commas";
  }
  snprintf(err, errlen, "'%s': %s (CPUs 0..%d, at most %d)", text, why, CPU_SETSIZE - 1, max);
  return -1;
}

int perf_cpus_allowed(const int* cpus, int n, char* err, size_t errlen) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set)) {
    snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
    return -1;
  }
  for (int i = 0; i < n; i++) {
    if (CPU_ISSET(cpus[i], &set)) continue;
    char may[128];
    if (perf_current_cpus(may, sizeof may)) snprintf(may, sizeof may, "see taskset -p");
    snprintf(err, errlen, "CPU %d is not one this process may run on (%s)", cpus[i], may);
    return -1;
  }
  return 0;
}

int perf_pin_cpu(int cpu, char* err, size_t errlen) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) == 0) return 0;
  snprintf(err, errlen, "pinning to CPU %d: sched_setaffinity: %s", cpu, strerror(errno));
  return -1;
}

int perf_current_cpus(char* buf, size_t len) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set)) return -1;
  size_t used = 0;
  buf[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    int hi = c;
    while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, &set)) hi++;
    const char* sep = used ? "," : "";
    int w = hi == c ? snprintf(buf + used, len - used, "%s%d", sep, c)
                    : snprintf(buf + used, len - used, "%s%d-%d", sep, c, hi);
    if (w < 0 || (size_t)w >= len - used) return -1;
    used += (size_t)w;
    c = hi;
  }
  return 0;
}
