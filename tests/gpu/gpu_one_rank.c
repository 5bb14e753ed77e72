/* The one-rank path on a GPU (plan/plan_local.c), seen from the CUDA graph a call leaves
 * behind: every collective of a one-rank device communicator captured alone, in place and out of
 * place, must leave an empty graph in place, exactly one memcpy node out of place, and one
 * kernel node for a scaling PreMulSum (host and device scalar) — and each replay must produce
 * the reference result on random data (float: scalar * x rounded once, which is what a single
 * float multiply gives; int32: exact). Sends/receives to self too (one memcpy node).
 * Exits 77 when no GPU is usable. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_world.h"
#include "nccl.h"
#include "testutil.h"

#define N 4099 /* odd: no multiple of any vector width */

static int failures;

typedef enum { K_ALLREDUCE, K_REDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCESCATTER, K_SENDRECV } kind;
static const char* const kind_name[] = {"AllReduce", "Reduce", "Broadcast", "AllGather",
                                        "ReduceScatter", "SendRecv"};

static void issue(kind k, const void* s, void* r, ncclDataType_t t, ncclRedOp_t op,
                  ncclComm_t comm, cudaStream_t st) {
  switch (k) {
    case K_ALLREDUCE: NCCL_OK(ncclAllReduce(s, r, N, t, op, comm, st)); break;
    case K_REDUCE: NCCL_OK(ncclReduce(s, r, N, t, op, 0, comm, st)); break;
    case K_BROADCAST: NCCL_OK(ncclBroadcast(s, r, N, t, 0, comm, st)); break;
    case K_ALLGATHER: NCCL_OK(ncclAllGather(s, r, N, t, comm, st)); break;
    case K_REDUCESCATTER: NCCL_OK(ncclReduceScatter(s, r, N, t, op, comm, st)); break;
    case K_SENDRECV:
      NCCL_OK(ncclGroupStart());
      NCCL_OK(ncclSend(s, N, t, 0, comm, st));
      NCCL_OK(ncclRecv(r, N, t, 0, comm, st));
      NCCL_OK(ncclGroupEnd());
      break;
  }
}

/* Node census of a graph: total, memcpy, kernel. */
static void census(cudaGraph_t g, size_t* total, size_t* memcpys, size_t* kernels) {
  CUDA_OK(cudaGraphGetNodes(g, NULL, total));
  *memcpys = *kernels = 0;
  if (*total == 0) return;
  cudaGraphNode_t* nodes = calloc(*total, sizeof *nodes);
  size_t n = *total;
  CUDA_OK(cudaGraphGetNodes(g, nodes, &n));
  for (size_t i = 0; i < n; i++) {
    enum cudaGraphNodeType ty;
    CUDA_OK(cudaGraphNodeGetType(nodes[i], &ty));
    if (ty == cudaGraphNodeTypeMemcpy) (*memcpys)++;
    if (ty == cudaGraphNodeTypeKernel) (*kernels)++;
  }
  free(nodes);
}

/* One case: capture, check the graph's shape, replay twice with fresh inputs, check. */
static void run_case(ncclComm_t comm, cudaStream_t st, kind k, ncclDataType_t t, int inplace,
                     int scale_mode /* 0 sum, 1 host PreMulSum, 2 device PreMulSum */,
                     uint64_t* rng) {
  size_t esz = 4; /* float and int32 */
  size_t bytes = N * esz;
  void *dsend, *drecv, *dscalar;
  CUDA_OK(cudaMalloc(&dsend, bytes));
  CUDA_OK(cudaMalloc(&drecv, bytes));
  CUDA_OK(cudaMalloc(&dscalar, 8));
  void* r = inplace ? dsend : drecv;
  ncclRedOp_t op = ncclSum;
  float fscalar = 0.75f + (float)(test_rand(rng) % 64) / 64.0f;
  int32_t iscalar = 3 + (int32_t)(test_rand(rng) % 5);
  const void* hscalar = t == ncclFloat32 ? (const void*)&fscalar : (const void*)&iscalar;
  if (scale_mode == 1)
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, (void*)hscalar, t, ncclScalarHostImmediate, comm));
  if (scale_mode == 2) {
    CUDA_OK(cudaMemcpy(dscalar, hscalar, esz, cudaMemcpyHostToDevice));
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, dscalar, t, ncclScalarDevice, comm));
  }
  int reduces = k == K_ALLREDUCE || k == K_REDUCE || k == K_REDUCESCATTER;
  int scales = scale_mode != 0 && reduces;

  cudaGraph_t g;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  issue(k, dsend, r, t, op, comm, st);
  CUDA_OK(cudaStreamEndCapture(st, &g));
  size_t total, memcpys, kernels;
  census(g, &total, &memcpys, &kernels);
  size_t want_total = scales ? 1 : (inplace ? 0 : 1);
  int shape_ok = total == want_total && (scales ? kernels == 1 : memcpys == want_total);
  if (!shape_ok) {
    fprintf(stderr, "FAIL %s %s %s%s: captured %zu node(s) (%zu memcpy, %zu kernel), expected "
            "%s\n", kind_name[k], t == ncclFloat32 ? "float" : "int32",
            inplace ? "in place" : "out of place",
            scale_mode == 1 ? " PreMulSum(host)" : scale_mode == 2 ? " PreMulSum(device)" : "",
            total, memcpys, kernels,
            scales ? "one kernel" : inplace ? "none" : "one memcpy");
    failures++;
  }
  cudaGraphExec_t ge;
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  float* hin = malloc(bytes);
  float* hout = malloc(bytes);
  for (int rep = 0; rep < 2; rep++) {
    for (size_t i = 0; i < N; i++) {
      if (t == ncclFloat32)
        hin[i] = (float)((int64_t)(test_rand(rng) % 2001) - 1000) / 37.0f;
      else
        ((int32_t*)hin)[i] = (int32_t)(test_rand(rng) & 0x7fffffff) - 0x3fffffff;
    }
    if (scale_mode == 2 && rep == 1) { /* a device scalar is read at replay */
      fscalar *= 2.0f;
      iscalar += 1;
      CUDA_OK(cudaMemcpy(dscalar, hscalar, esz, cudaMemcpyHostToDevice));
    }
    CUDA_OK(cudaMemcpy(dsend, hin, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(ge, st));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(cudaMemcpy(hout, r, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < N; i++) {
      if (t == ncclFloat32) {
        volatile float want = scales ? fscalar * hin[i] : hin[i];
        if (memcmp(&hout[i], (const void*)&want, 4) != 0) bad++;
      } else {
        uint32_t x = (uint32_t)((int32_t*)hin)[i];
        int32_t want = scales ? (int32_t)(x * (uint32_t)iscalar) : (int32_t)x;
        if (((int32_t*)hout)[i] != want) bad++;
      }
    }
    if (bad) {
      fprintf(stderr, "FAIL %s %s %s mode %d replay %d: %zu of %d elements wrong\n", kind_name[k],
              t == ncclFloat32 ? "float" : "int32", inplace ? "in place" : "out of place",
              scale_mode, rep, bad, N);
      failures++;
    }
  }
  free(hin);
  free(hout);
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  if (scale_mode) NCCL_OK(ncclRedOpDestroy(op, comm));
  CUDA_OK(cudaFree(dsend));
  CUDA_OK(cudaFree(drecv));
  CUDA_OK(cudaFree(dscalar));
}

int main(void) {
  test_require_weft_lib();
  if (!gpu_have_device()) return GPU_SKIP;
  CUDA_OK(cudaSetDevice(0));
  ncclComm_t comm;
  int dev = 0;
  NCCL_OK(ncclCommInitAll(&comm, 1, &dev));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  uint64_t rng = test_seed(0x0e1a2b3c);
  int ncases = 0;
  for (int k = K_ALLREDUCE; k <= K_SENDRECV; k++)
    for (int ti = 0; ti < 2; ti++)
      for (int inplace = 0; inplace < 2; inplace++)
        for (int sm = 0; sm < 3; sm++) {
          int reduces = k == K_ALLREDUCE || k == K_REDUCE || k == K_REDUCESCATTER;
          if (sm && !reduces) continue;
          if (k == K_SENDRECV && inplace) continue;
          run_case(comm, st, (kind)k, ti ? ncclInt32 : ncclFloat32, inplace, sm, &rng);
          ncases++;
        }
  NCCL_OK(ncclCommDestroy(comm));
  printf("%d cases, %d failed\n", ncases, failures);
  return failures ? 1 : 0;
}
