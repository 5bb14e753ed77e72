/* NCCL_COMM_ID rendezvous and who may join it (issue 18, finding 4). Three ranks and a fourth
 * process that claims rank 1:
 *   claim   nobody has WEFT_COMM_SECRET: the intruder checks in as rank 1 before the real rank
 *           1 does; the init fails on all four processes with an error that names both
 *           claimants' addresses (not: the real rank rejected and the others timing out)
 *   secret  the three ranks share WEFT_COMM_SECRET, the intruder does not know it: its
 *           check-in is refused (wrong secret), the three ranks init and run an AllReduce
 * Without WEFT_COMM_SECRET, each process warns once that the rendezvous is not authenticated.
 * Each process's stderr goes to a file the parent reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char* tcase;
static char logdir[256];

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int proc_main(int p, int nprocs, ncclUniqueId* unused, void* arg) {
  (void)nprocs;
  (void)unused;
  (void)arg;
  char path[300];
  snprintf(path, sizeof path, "%s/p%d.log", logdir, p);
  EXPECT(freopen(path, "w", stderr) != NULL);
  int intruder = p == 3, rank = intruder ? 1 : p;
  if (!strcmp(tcase, "secret")) {
    if (intruder) {
      unsetenv("WEFT_COMM_SECRET");
      setenv("WEFT_INIT_TIMEOUT_MS", "3000", 1);
    } else {
      setenv("WEFT_COMM_SECRET", "launcher-made-7f3a", 1);
    }
  }
  /* Order: ranks 0 and 1 (intruder first), then the real rank 1, then rank 2. */
  if (p == 3) sleep_ms(200);
  if (p == 1) sleep_ms(700);
  if (p == 2) sleep_ms(1200);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  EXPECT_OK(ncclGetUniqueId(&id));
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRank(&comm, 3, id, rank);
  const char* err = ncclGetLastError(NULL);
  printf("process %d (rank %d%s): init returned %s: %s\n", p, rank, intruder ? ", intruder" : "",
         ncclGetErrorString(r), r == ncclSuccess ? "" : err);
  fflush(stdout);
  if (!strcmp(tcase, "claim")) {
    EXPECT(r != ncclSuccess);
    EXPECT(strstr(err, "claimed by two processes") != NULL);
    if (comm) ncclCommDestroy(comm);
    if (p == 0) sleep_ms(1500); /* its process holds the root: stay until rank 2 came */
    return 0;
  }
  if (intruder) {
    EXPECT(r != ncclSuccess);
    if (comm) ncclCommDestroy(comm);
    return 0;
  }
  EXPECT_OK(r);
  float x[64], y[64];
  for (int i = 0; i < 64; i++) x[i] = (float)(rank * 100 + i);
  EXPECT_OK(ncclAllReduce(x, y, 64, ncclFloat, ncclSum, comm, NULL));
  for (int i = 0; i < 64; i++) EXPECT(y[i] == (float)(300 + 3 * i));
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

static int log_has(int p, const char* s) {
  char path[300], line[4096];
  snprintf(path, sizeof path, "%s/p%d.log", logdir, p);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, s) != NULL;
  fclose(f);
  return found;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc < 2) {
    fprintf(stderr, "usage: comm_id_secret claim|secret\n");
    return 2;
  }
  tcase = argv[1];
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", test_free_port());
  setenv("NCCL_COMM_ID", addr, 1);
  snprintf(logdir, sizeof logdir, "/tmp/weft-comm-secret-%d", (int)getpid());
  mkdir(logdir, 0700);
  int rc = test_fork_plain(4, proc_main, NULL, 60);
  if (rc == 0 && !strcmp(tcase, "claim")) {
    /* The root (in rank 0's process) names both claimants' listeners. */
    if (!log_has(0, "rank 1 was claimed twice: first by the process listening on ") ||
        !log_has(0, ", then by the one listening on ")) {
      fprintf(stderr, "the root's WARN does not name both claimants\n");
      rc = 1;
    }
    for (int p = 0; rc == 0 && p < 4; p++)
      if (!log_has(p, "is not authenticated")) {
        fprintf(stderr, "process %d did not warn that the rendezvous is unauthenticated\n", p);
        rc = 1;
      }
  }
  if (rc == 0 && !strcmp(tcase, "secret")) {
    for (int p = 0; rc == 0 && p < 3; p++)
      if (log_has(p, "is not authenticated")) {
        fprintf(stderr, "process %d warned although WEFT_COMM_SECRET is set\n", p);
        rc = 1;
      }
    if (rc == 0 && !log_has(3, "is not authenticated")) {
      fprintf(stderr, "the intruder did not warn\n");
      rc = 1;
    }
  }
  for (int p = 0; p < 4; p++) {
    char path[300], line[4096];
    snprintf(path, sizeof path, "%s/p%d.log", logdir, p);
    FILE* f = fopen(path, "r");
    if (f) {
      while (fgets(line, sizeof line, f))
        if (strstr(line, "WARN")) printf("[p%d] %s", p, line);
      fclose(f);
    }
    unlink(path);
  }
  rmdir(logdir);
  return rc;
}
