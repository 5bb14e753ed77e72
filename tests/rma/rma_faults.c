/* A wait for signals that never come ends with an error naming the peer, the signal index and
 * the count:
 *  timeout: rank 1 sends one signal where rank 0 waits for two; rank 0's wait ends at
 *           WEFT_TIMEOUT_MS (2 s here) with ncclRemoteError, and the WARN says so;
 *  killed:  rank 2 puts once; rank 0 waits for it, checks the data and signals back; rank 2
 *           then dies by SIGKILL, and rank 0's wait for one more signal from it fails within
 *           seconds (not WEFT_TIMEOUT_MS, 60 s here).
 * A put to a peer that dies while it streams ends the same way:
 *  midput:  rank 0 puts 8 MiB at a time into rank 2's window, one put after another (each more
 *           than the FIFO holds, so rank 2 must drain while it arrives); rank 2 dies by SIGKILL
 *           once the first has arrived. The put in flight (or the next) fails within seconds
 *           with ncclRemoteError, its error naming rank 0 and rank 2, the communicator failed.
 *  stopped: the same, but rank 2 stops (SIGSTOP) instead: its process and connections stay, it
 *           drains nothing more, and the put fails at WEFT_TIMEOUT_MS (2 s here), not later,
 *           saying it timed out (the launcher then kills rank 2).
 * Usage: rma_faults timeout|killed|midput|stopped shm|net
 *        rma_faults --rank R 3 midput: one rank of a midput job started elsewhere
 *        (rma_netns_midput.sh: rank 2 on another host), the unique id from NCCL_COMM_ID. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define WBYTES 65536
#define DETECT_MS 8000
#define MIDPUT_BYTES (8u << 20)
#define MIDPUT_MAX 1000

static int killed_mode, midput_mode, stopped_mode;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The WARN lines this process writes to stderr meanwhile (fd 2 goes to a temporary file, then
 * back; what was caught is copied to stderr too): ncclGetLastError keeps only the last WARN of
 * the process, which another thread's (the proxy's, on the same dead socket) may replace: the
 * waits' and puts' errors are judged here instead. */
typedef struct {
  int fd, saved;
} warn_catch;

static void warn_catch_start(warn_catch* w) {
  char path[] = "/tmp/weft-rma-faults-XXXXXX";
  fflush(stderr);
  w->fd = mkstemp(path);
  EXPECT(w->fd >= 0);
  unlink(path);
  w->saved = dup(2);
  EXPECT(w->saved >= 0 && dup2(w->fd, 2) == 2);
}

/* 1 when a caught WARN line holds both strings and then the third (NULL: none). */
static int warn_catch_find(warn_catch* w, const char* a, const char* b, const char* c) {
  static char text[1 << 16];
  fflush(stderr);
  EXPECT(dup2(w->saved, 2) == 2);
  close(w->saved);
  ssize_t n = pread(w->fd, text, sizeof text - 1, 0);
  close(w->fd);
  text[n > 0 ? n : 0] = '\0';
  fputs(text, stderr);
  for (char* line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (strstr(line, "NCCL WARN") && strstr(line, a) && strstr(line, b) && (!c || strstr(line, c)))
      return 1;
  return 0;
}

/* midput, rank 0: put into rank 2's window until a put fails; that put must fail promptly,
 * its WARN naming both ranks. */
static int put_until_peer_dies(ncclComm_t comm, char* wbuf, ncclWindow_t win) {
  ncclResult_t res = ncclSuccess;
  double took = 0;
  int i;
  warn_catch w;
  warn_catch_start(&w);
  for (i = 0; i < MIDPUT_MAX && res == ncclSuccess; i++) {
    double t0 = now_ms();
    res = ncclPutSignal(wbuf, MIDPUT_BYTES, ncclInt8, 2, win, 0, 0, 0, 0, comm, NULL);
    took = now_ms() - t0;
  }
  int named = warn_catch_find(&w, "rank 0: ", "to rank 2", stopped_mode ? "timed out" : NULL);
  printf("rank 0: put %d of %u bytes to rank 2: %s after %.0f ms\n", i, MIDPUT_BYTES,
         ncclGetErrorString(res), took);
  EXPECT_RES(res, ncclRemoteError);
  EXPECT(took < DETECT_MS);
  EXPECT(named); /* a WARN "rank 0: ... to rank 2 ..." (timed out, when stopped) */
  if (stopped_mode) EXPECT(took >= 2000);
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async != ncclSuccess);
  EXPECT_OK(ncclCommAbort(comm));
  free(wbuf);
  return 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  size_t wbytes = midput_mode ? MIDPUT_BYTES : WBYTES;
  char* wbuf = calloc(1, wbytes);
  EXPECT(wbuf);
  ncclWindow_t win;
  EXPECT_OK(ncclCommWindowRegister(comm, wbuf, wbytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  if (midput_mode && rank == 0) return put_until_peer_dies(comm, wbuf, win);
  if (midput_mode && rank == 2) { /* dies once the first put has arrived */
    ncclWaitSignalDesc_t first = {1, 0, 0, 0};
    EXPECT_OK(ncclWaitSignal(1, &first, comm, NULL));
    raise(stopped_mode ? SIGSTOP : SIGKILL);
  }
  int from = killed_mode ? 2 : 1;
  if (rank == from) {
    for (int i = 0; i < 64; i++) wbuf[i] = (char)(i + 3);
    EXPECT_OK(ncclPutSignal(wbuf, 64, ncclInt8, 0, win, 1000, 0, 0, 0, comm, NULL));
    if (killed_mode) { /* once rank 0 has the put (its signal back says so) */
      ncclWaitSignalDesc_t back = {1, 0, 0, 0};
      EXPECT_OK(ncclWaitSignal(1, &back, comm, NULL));
      raise(SIGKILL);
    }
    usleep(4000 * 1000); /* past rank 0's timeout, alive all along */
    EXPECT_OK(ncclCommDestroy(comm));
    free(wbuf);
    return 0;
  }
  if (rank != 0) { /* killed mode's bystander */
    usleep(killed_mode ? 500 * 1000 : 0);
    EXPECT_OK(ncclCommAbort(comm));
    free(wbuf);
    return 0;
  }
  ncclWaitSignalDesc_t d = {2, from, 0, 0};
  if (killed_mode) { /* the put first, then tell rank 2 to die; then wait for one more */
    ncclWaitSignalDesc_t first = {1, from, 0, 0};
    EXPECT_OK(ncclWaitSignal(1, &first, comm, NULL));
    for (int i = 0; i < 64; i++) EXPECT_EQ_INT(wbuf[1000 + i], i + 3);
    EXPECT_OK(ncclSignal(from, 0, 0, 0, comm, NULL));
    d.opCnt = 1;
  }
  warn_catch w;
  warn_catch_start(&w);
  double t0 = now_ms();
  ncclResult_t res = ncclWaitSignal(1, &d, comm, NULL);
  double took = now_ms() - t0;
  char want[64];
  snprintf(want, sizeof want, "%d signal(s) from rank %d (sigIdx 0)", d.opCnt, from);
  int named = warn_catch_find(&w, "rank 0: ncclWaitSignal", want, killed_mode ? NULL : "timed out");
  printf("rank 0: wait for 2 signals from rank %d: %s after %.0f ms\n", from,
         ncclGetErrorString(res), took);
  EXPECT_RES(res, ncclRemoteError);
  EXPECT(named); /* a WARN "rank 0: ncclWaitSignal ... N signal(s) from rank R (sigIdx 0)" */
  if (killed_mode)
    EXPECT(took < DETECT_MS);
  else
    EXPECT(took >= 2000);
  ncclResult_t async = ncclSuccess;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async != ncclSuccess);
  EXPECT_OK(ncclCommAbort(comm));
  free(wbuf);
  return 0;
}

int main(int argc, char** argv) {
  /* the checks read the WARN lines (warn_catch): printed only at NCCL_DEBUG=WARN or more */
  setenv("NCCL_DEBUG", "WARN", 0);
  test_require_weft_lib();
  if (argc == 5 && strcmp(argv[1], "--rank") == 0 && strcmp(argv[4], "midput") == 0) {
    int rank = atoi(argv[2]), n = atoi(argv[3]);
    if (n != 3 || rank < 0 || rank >= n || !getenv("NCCL_COMM_ID")) {
      fprintf(stderr, "--rank R 3 midput needs 0 <= R < 3 and NCCL_COMM_ID\n");
      return 2;
    }
    midput_mode = killed_mode = 1;
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
    ncclUniqueId id;
    EXPECT_OK(ncclGetUniqueId(&id)); /* from NCCL_COMM_ID */
    return rank_main(rank, n, &id, NULL);
  }
  stopped_mode = argc > 1 && strcmp(argv[1], "stopped") == 0;
  midput_mode = stopped_mode || (argc > 1 && strcmp(argv[1], "midput") == 0);
  killed_mode = midput_mode || (argc > 1 && strcmp(argv[1], "killed") == 0);
  if (argc > 2 && strcmp(argv[2], "net") == 0) setenv("NCCL_SHM_DISABLE", "1", 1);
  setenv("WEFT_TIMEOUT_MS", killed_mode && !stopped_mode ? "60000" : "2000", 1);
  if (!killed_mode) return test_fork_ranks(2, rank_main, NULL, 60);
  /* rank 2 dies by SIGKILL on purpose: the ranks are forked here, where that is expected */
  enum { N = 3 };
  pid_t pids[N];
  EXPECT(test_fork_ranks_pids(N, rank_main, NULL, 60, pids) == 0);
  int failed = 0;
  for (int r = 0; r < N; r++) {
    int st;
    if (r == 2 && stopped_mode) kill(pids[r], SIGKILL); /* ranks 0 and 1 are done with it */
    waitpid(pids[r], &st, 0);
    if (r == 2 ? !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
               : !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      fprintf(stderr, "rank %d ended with status 0x%x\n", r, st);
      failed = 1;
    }
  }
  return failed;
}
