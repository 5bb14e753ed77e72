/* N ranks of one communicator on GPU 0 (gpu_one_gpu.h). */
#include "gpu_one_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_world.h"
#include "testutil.h"

int gpu_one_gpu_args(int argc, char** argv, int maxr, int* procs) {
  int inproc = argc == 3 && strcmp(argv[1], "--inproc") == 0;
  *procs = argc == 3 && strcmp(argv[1], "--procs") == 0;
  int n = argc == 3 ? atoi(argv[2]) : 0;
  if ((!inproc && !*procs) || n < 1 || n > maxr) {
    fprintf(stderr, "usage: %s --inproc N | --procs N  (1 <= N <= %d)\n", argv[0], maxr);
    return 0;
  }
  return n;
}

typedef struct {
  gpu_one_gpu_body body;
  void* arg;
} one_gpu_job;

static int proc_rank(int rank, int nranks, ncclUniqueId* id, void* arg) {
  one_gpu_job* job = arg;
  ncclComm_t comm;
  CUDA_OK(cudaSetDevice(0));
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  return job->body(&comm, 1, rank, nranks, job->arg);
}

int gpu_one_gpu_run(int nranks, int procs, gpu_one_gpu_body body, void* arg, int timeout_s) {
  if (!gpu_have_device()) return GPU_SKIP;
  one_gpu_job job = {body, arg};
  if (procs) return test_fork_ranks(nranks, proc_rank, &job, timeout_s);
  ncclComm_t* comms = calloc((size_t)nranks, sizeof *comms);
  EXPECT(comms != NULL);
  CUDA_OK(cudaSetDevice(0));
  ncclUniqueId id;
  EXPECT_OK(ncclGetUniqueId(&id));
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < nranks; r++) EXPECT_OK(ncclCommInitRank(&comms[r], nranks, id, r));
  EXPECT_OK(ncclGroupEnd());
  int rc = body(comms, nranks, 0, nranks, arg);
  free(comms);
  return rc;
}
