/* Fault tolerance with the NCCL API: detect, revoke, shrink, continue, grow back.
 *
 * A "training loop" of AllReduces runs on N worker processes that a small launcher (this same
 * program) forks. At step KILL_STEP one worker dies (SIGKILL, as the OOM killer would do it).
 * The survivors see their AllReduce fail, learn from the launcher which rank is gone (in a real
 * job: your elastic agent or a key-value store), then
 *
 *   1. ncclCommRevoke   - stop whatever the broken communicator still has in flight,
 *   2. ncclCommShrink   - build a communicator of the survivors (renumbered 0..N-2),
 *   3. ncclCommDestroy  - free the broken one, and redo the failed step on the new one.
 *
 * At step GROW_STEP the job grows back with a standby process (forked at the start, waiting):
 *
 *   4. ncclCommGetUniqueId on the new rank 0, handed to the standby (here: a pipe),
 *   5. ncclCommGrow on every survivor (rank -1) and on the standby (comm NULL, rank N-1).
 *
 * Every step checks its sum: each rank contributes 1.0 per element, so each element of the
 * result equals the number of ranks that took part.
 *
 * Build against an installed weft (or any NCCL 2.30+):
 *     cc -O2 ft_train.c -I<prefix>/include -L<prefix>/lib -lnccl -o ft_train
 * Run (host mode, no GPU needed; WEFT_DEVICE=host makes weft use host memory):
 *     WEFT_DEVICE=host ./ft_train 4 [victim]
 * On GPUs the buffers would be device memory, each call would take a stream, and a failure
 * would show up in ncclCommGetAsyncError while you wait for the stream; the recovery calls are
 * the same. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nccl.h>

#define STEPS 16
#define KILL_STEP 5
#define GROW_STEP 11
#define COUNT (1 << 16)
#define MAX_WORKERS 64

#define CHECK(call)                                                                   \
  do {                                                                                \
    ncclResult_t r_ = (call);                                                         \
    if (r_ != ncclSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
              ncclGetErrorString(r_));                                                \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static int nworkers, victim;
static int to_worker[MAX_WORKERS][2]; /* launcher -> worker: the rank that died */
static int to_standby[2];             /* the new rank 0 -> the standby: the grow id */

static int read_full(int fd, void* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t k = read(fd, (char*)buf + got, len - got);
    if (k <= 0) return -1;
    got += (size_t)k;
  }
  return 0;
}

/* One training step: an AllReduce of ones, checked. Returns the AllReduce's result. */
static ncclResult_t train_step(ncclComm_t comm, float* grad, int step) {
  for (int i = 0; i < COUNT; i++) grad[i] = 1.0f;
  ncclResult_t res = ncclAllReduce(grad, grad, COUNT, ncclFloat, ncclSum, comm, NULL);
  if (res != ncclSuccess) return res;
  int n;
  CHECK(ncclCommCount(comm, &n));
  for (int i = 0; i < COUNT; i++)
    if (grad[i] != (float)n) {
      fprintf(stderr, "step %d: element %d is %g, expected %d\n", step, i, grad[i], n);
      exit(1);
    }
  return ncclSuccess;
}

/* The training loop from step `from` on; comm is this worker's communicator. */
static int train(ncclComm_t comm, int first_rank, int from) {
  float* grad = malloc(COUNT * sizeof *grad);
  if (!grad) return 1;
  for (int step = from; step < STEPS; step++) {
    int rank, n;
    CHECK(ncclCommUserRank(comm, &rank));
    CHECK(ncclCommCount(comm, &n));
    if (first_rank == victim && step == KILL_STEP) raise(SIGKILL);

    if (step == GROW_STEP && n < nworkers) { /* grow back to the full size */
      ncclUniqueId id;
      if (rank == 0) {
        CHECK(ncclCommGetUniqueId(comm, &id));
        if (write(to_standby[1], &id, sizeof id) != (ssize_t)sizeof id) return 1;
      }
      ncclComm_t grown;
      CHECK(ncclCommGrow(comm, nworkers, rank == 0 ? &id : NULL, -1, &grown, NULL));
      CHECK(ncclCommDestroy(comm));
      comm = grown;
      printf("worker %d: grew back to %d ranks\n", first_rank, nworkers);
    }

    ncclResult_t res = train_step(comm, grad, step);
    if (res == ncclSuccess) continue;

    /* Detect: the step failed. Which rank is gone comes from outside NCCL. */
    int dead;
    if (read_full(to_worker[first_rank][0], &dead, sizeof dead) != 0) return 1;
    printf("worker %d: step %d failed (%s); rank %d is gone\n", first_rank, step,
           ncclGetErrorString(res), dead);
    /* Revoke: in-flight work stops; a blocking communicator returns once it is quiescent
     * (a non-blocking one: poll ncclCommGetAsyncError until it is no longer ncclInProgress). */
    CHECK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    /* Shrink: the survivors, without the dead rank, renumbered in order. */
    ncclComm_t shrunk;
    CHECK(ncclCommShrink(comm, &dead, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
    CHECK(ncclCommDestroy(comm));
    comm = shrunk;
    step--; /* continue: redo the step that failed */
  }
  CHECK(ncclCommDestroy(comm));
  free(grad);
  return 0;
}

static int worker(int rank, int read_id_fd) {
  ncclUniqueId id;
  if (read_full(read_id_fd, &id, sizeof id) != 0) return 1;
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nworkers, id, rank));
  return train(comm, rank, 0);
}

static int standby(void) {
  ncclUniqueId id;
  if (read_full(to_standby[0], &id, sizeof id) != 0) return 1;
  ncclComm_t comm;
  CHECK(ncclCommGrow(NULL, nworkers, &id, nworkers - 1, &comm, NULL));
  printf("standby: joined as rank %d\n", nworkers - 1);
  return train(comm, nworkers - 1 /* takes over the last rank number */, GROW_STEP);
}

/* A forked child ends here: its output flushed, none of the launcher's exit handlers run. */
static void child_exit(int rc) {
  fflush(NULL);
  _exit(rc);
}

int main(int argc, char** argv) {
  nworkers = argc > 1 ? atoi(argv[1]) : 4;
  victim = argc > 2 ? atoi(argv[2]) : 1;
  if (nworkers < 2 || nworkers > MAX_WORKERS || victim < 0 || victim >= nworkers) {
    fprintf(stderr, "usage: %s NWORKERS [VICTIM]\n", argv[0]);
    return 2;
  }
  int id_pipe[2];
  if (pipe(id_pipe) != 0 || pipe(to_standby) != 0) return 1;
  for (int r = 0; r < nworkers; r++)
    if (pipe(to_worker[r]) != 0) return 1;
  pid_t pids[MAX_WORKERS + 1];
  fflush(NULL);
  for (int r = 0; r < nworkers; r++) {
    pids[r] = fork();
    if (pids[r] == 0) child_exit(worker(r, id_pipe[0]));
  }
  pids[nworkers] = fork();
  if (pids[nworkers] == 0) child_exit(standby());
  /* The launcher makes the job's id (it never joins the communicator). */
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  for (int r = 0; r < nworkers; r++)
    if (write(id_pipe[1], &id, sizeof id) != (ssize_t)sizeof id) return 1;

  int failed = 0, left = nworkers + 1;
  while (left > 0) {
    int status;
    pid_t p = wait(&status);
    if (p < 0) break;
    left--;
    int r = 0;
    while (r <= nworkers && pids[r] != p) r++;
    if (WIFSIGNALED(status) && r == victim) {
      printf("launcher: worker %d was killed; telling the survivors\n", r);
      for (int s = 0; s < nworkers; s++)
        if (s != r && write(to_worker[s][1], &r, sizeof r) != (ssize_t)sizeof r) return 1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "launcher: process %d failed (status 0x%x)\n", (int)p, status);
      failed = 1;
    }
  }
  printf("%s\n", failed ? "FAILED" : "done: every step summed correctly");
  return failed;
}
