/* CUDA graph capture and replay of collectives (see gpu_suites.h). */
#include <string.h>

#include "coll_case.h"
#include "gpu_run.h"
#include "gpu_suites.h"

#define NOPS 6
#define REPLAYS 4

/* Sizes index gpu_size_name: 2 = 7, 3 = 1023, 4 = 4097, 5 = 65539, 6 = 1048581. */
static const gpu_case graph_ops[NOPS] = {
    {COLL_ALLREDUCE, ncclFloat32, OP_SUM, 0, 6, 0, 0},
    {COLL_ALLREDUCE, ncclInt32, OP_SUM, 0, 4, 1, 0},
    {COLL_ALLREDUCE, ncclFloat16, OP_PREMULSUM, 1, 3, 0, 0}, /* device scalar, new each replay */
    {COLL_ALLREDUCE, ncclFloat64, OP_PREMULSUM, 0, 2, 1, 0}, /* host scalar, fixed at create */
    {COLL_ALLREDUCE, ncclBfloat16, OP_MAX, 0, 5, 0, 0},
    {COLL_ALLGATHER, ncclInt8, OP_NONE, 0, 4, 0, 0},
};

/* Issue every op uncaptured, wait once, verify all. Returns problems; NA and errors end here. */
static size_t run_uncaptured(gpu_world* w, gpu_run* runs, int n, const char* phase, int* na) {
  for (int i = 0; i < n; i++) {
    int rc = gpu_run_issue(&runs[i], w);
    if (rc == GPU_RUN_FATAL) gpu_die(w);
    if (rc == GPU_RUN_NA) {
      *na = 1;
      return 0;
    }
  }
  if (gpu_wait(w, phase)) gpu_die(w);
  size_t problems = 0;
  for (int i = 0; i < n; i++) problems += gpu_run_verify(&runs[i], w);
  return problems;
}

/* Captures every op into one graph per local rank. GPU_RUN_OK, _NA or _FATAL (printed). */
static int capture(gpu_world* w, gpu_run* runs, cudaGraph_t* graphs) {
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaStreamBeginCapture(w->loc[i].stream, cudaStreamCaptureModeThreadLocal));
  }
  int rc = GPU_RUN_OK;
  for (int k = 0; k < NOPS && rc == GPU_RUN_OK; k++) rc = gpu_run_issue(&runs[k], w);
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    cudaError_t e = cudaStreamEndCapture(w->loc[i].stream, &graphs[i]);
    if (e != cudaSuccess) {
      fprintf(stderr, "FAIL rank %d: cudaStreamEndCapture: %s (%d): the capture was broken by "
              "something the collectives did on the capturing stream\n", w->loc[i].rank,
              cudaGetErrorString(e), (int)e);
      graphs[i] = NULL;
      if (rc == GPU_RUN_OK) rc = GPU_RUN_FATAL;
      continue;
    }
    size_t nodes = 0;
    CUDA_OK(cudaGraphGetNodes(graphs[i], NULL, &nodes));
    if (rc == GPU_RUN_OK && nodes == 0) {
      fprintf(stderr, "FAIL rank %d: the captured graph of %d collectives is empty (the calls "
              "ran eagerly instead of being captured?)\n", w->loc[i].rank, NOPS);
      rc = GPU_RUN_FATAL;
    }
  }
  return rc;
}

int gpu_graph_body(gpu_world* w, void* arg) {
  const gpu_graph_opts* o = arg;
  const int window = o ? o->window : GPU_REG_NONE; /* GPU_REG_* */
  const gpu_mem_kind mem = o ? o->mem : GPU_MEM_CUDA;
  int rc = gpu_run_gate(w);
  if (rc != GPU_PASS) return rc;
  const int lead = w->loc[0].rank == 0;
  gpu_run runs[NOPS];
  cudaGraph_t graphs[GPU_MAX_LOCAL];
  cudaGraphExec_t execs[GPU_MAX_LOCAL];
  memset(graphs, 0, sizeof graphs);
  memset(execs, 0, sizeof execs);
  int n = 0, na = 0;
  size_t problems = 0;

  gpu_watchdog_arm("graph: prepare and warm-up (uncaptured)");
  for (; n < NOPS; n++) {
    int p = gpu_run_prepare(&runs[n], w, &graph_ops[n], w->seed, mem);
    if (p == GPU_RUN_OK && window) p = gpu_run_register(&runs[n], w, window);
    if (p == GPU_RUN_FATAL) gpu_die(w);
    if (p == GPU_RUN_NA) {
      na = 1;
      n++;
      break;
    }
  }
  if (!na) problems += run_uncaptured(w, runs, n, "graph warm-up", &na);
  if (na) {
    if (lead) printf("SKIP: an operation of the graph suite is not available yet: %s\n",
                     ncclGetLastError(w->loc[0].comm));
    goto release;
  }

  gpu_watchdog_arm("graph: capture of %d collectives", NOPS);
  int cap = capture(w, runs, graphs);
  if (cap == GPU_RUN_NA) {
    if (lead) printf("SKIP: collectives under CUDA graph capture are not available yet: %s\n",
                     ncclGetLastError(w->loc[0].comm));
    na = 1;
    goto destroy;
  }
  if (cap == GPU_RUN_FATAL) gpu_die(w);
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaGraphInstantiateWithFlags(&execs[i], graphs[i], 0));
  }

  for (int k = 1; k <= REPLAYS; k++) {
    gpu_watchdog_arm("graph: replay %d of %d", k, REPLAYS);
    uint64_t seed = coll_mix64(w->seed + (uint64_t)k);
    for (int j = 0; j < NOPS; j++) gpu_run_fill(&runs[j], w, seed);
    for (int i = 0; i < w->nlocal; i++) {
      CUDA_OK(cudaSetDevice(w->loc[i].dev));
      CUDA_OK(cudaGraphLaunch(execs[i], w->loc[i].stream));
    }
    char what[48];
    snprintf(what, sizeof what, "graph replay %d", k);
    if (gpu_wait(w, what)) gpu_die(w);
    size_t p = 0;
    for (int j = 0; j < NOPS; j++) p += gpu_run_verify(&runs[j], w);
    if (p) fprintf(stderr, "FAIL rank %d: graph replay %d: %zu problem(s)\n", w->loc[0].rank, k, p);
    problems += p;
  }

  /* The stream and the communicator still work uncaptured after the replays. */
  gpu_watchdog_arm("graph: uncaptured calls after the replays");
  for (int j = 0; j < NOPS; j++) gpu_run_fill(&runs[j], w, coll_mix64(w->seed + 100));
  problems += run_uncaptured(w, runs, NOPS, "uncaptured after replays", &na);
  if (na) {
    fprintf(stderr, "FAIL rank %d: \"not available yet\" after the same calls had worked\n",
            w->loc[0].rank);
    problems++;
    na = 0;
  }

destroy:
  for (int i = 0; i < w->nlocal; i++) {
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    if (execs[i]) CUDA_OK(cudaGraphExecDestroy(execs[i]));
    if (graphs[i]) CUDA_OK(cudaGraphDestroy(graphs[i]));
  }
release:
  for (int j = 0; j < n; j++) problems += gpu_run_release(&runs[j], w);
  gpu_watchdog_disarm();
  const char* in = !window                   ? ""
                   : window == GPU_REG_LOCAL  ? mem == GPU_MEM_NCCL ? " (registered ncclMemAlloc)"
                                                                    : " (registered cudaMalloc)"
                   : mem == GPU_MEM_NCCL      ? " (ncclMemAlloc windows)"
                                              : " (cudaMalloc windows)";
  if (lead && !problems && !na)
    printf("graph: %d collectives captured, replayed %d times with fresh inputs%s: all "
           "correct\n", NOPS, REPLAYS, in);
  return problems ? GPU_FAIL : na ? GPU_SKIP : GPU_PASS;
}
