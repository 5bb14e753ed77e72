/* GdrSim's fault injection (see net_gdrsim.c): WEFT_GDRSIM_FAIL_SEND=N makes the N-th isend of
 * this process (over all comms, N >= 1) fail with ncclSystemError; WEFT_GDRSIM_FAIL_RECV=N does
 * the same to the N-th test() of a receive request (flush and send requests are not counted).
 * Each injected failure WARNs "gdrsim: injected failure of …" through weft's logger. Unset or
 * empty: nothing is injected. A value that is not an integer >= 1 makes init fail, so a typo
 * cannot turn a failure test into a plain run.
 *
 * The counters are process-wide atomics: comms on several proxy threads share them, and exactly
 * one call per variable is the N-th. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "net_gdrsim.h"

static struct {
  const char* name; /* environment variable */
  const char* what; /* in the WARN */
  unsigned long long at; /* 0: off */
  int bad;               /* the value is not an integer >= 1 */
  unsigned long long calls; /* atomic */
} gs_faults[] = {
    [GS_FAULT_SEND] = {"WEFT_GDRSIM_FAIL_SEND", "isend", 0, 0, 0},
    [GS_FAULT_RECV] = {"WEFT_GDRSIM_FAIL_RECV", "receive test", 0, 0, 0},
};
static unsigned long long gs_injected; /* atomic */
static pthread_once_t gs_fault_once = PTHREAD_ONCE_INIT;

static void fault_parse(void) {
  for (int k = 0; k < GS_FAULT_NUM; k++) {
    const char* v = getenv(gs_faults[k].name);
    if (v == NULL || v[0] == '\0') continue;
    char* end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1)
      gs_faults[k].bad = 1;
    else
      gs_faults[k].at = (unsigned long long)n;
  }
}

ncclResult_t gs_fault_init(void) {
  pthread_once(&gs_fault_once, fault_parse);
  ncclResult_t res = ncclSuccess;
  for (int k = 0; k < GS_FAULT_NUM; k++) {
    if (!gs_faults[k].bad) continue;
    GS_WARN("NET/GdrSim: %s=%s: expected an integer >= 1 (the number of the %s that fails)",
            gs_faults[k].name, getenv(gs_faults[k].name), gs_faults[k].what);
    res = ncclInvalidArgument;
  }
  return res;
}

int gs_fault_armed(void) {
  pthread_once(&gs_fault_once, fault_parse);
  for (int k = 0; k < GS_FAULT_NUM; k++)
    if (gs_faults[k].at) return 1;
  return 0;
}

int gs_fault_hit(int kind) {
  pthread_once(&gs_fault_once, fault_parse);
  if (gs_faults[kind].at == 0) return 0;
  unsigned long long n = __atomic_add_fetch(&gs_faults[kind].calls, 1ull, __ATOMIC_RELAXED);
  if (n != gs_faults[kind].at) return 0;
  __atomic_add_fetch(&gs_injected, 1ull, __ATOMIC_RELAXED);
  GS_WARN("gdrsim: injected failure of %s #%llu (%s)", gs_faults[kind].what, n,
          gs_faults[kind].name);
  return 1;
}

unsigned long long gs_fault_injected(void) {
  return __atomic_load_n(&gs_injected, __ATOMIC_RELAXED);
}
