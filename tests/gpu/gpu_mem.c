/* ncclMemAlloc buffers, buffer registration and window registration (see gpu_suites.h). */
#include <string.h>

#include "coll_case.h"
#include "gpu_run.h"
#include "gpu_suites.h"

typedef struct {
  size_t failed;
  char na[256]; /* features that answered "not available yet" */
} mem_state;

static void note_na(gpu_world* w, mem_state* st, const char* what) {
  if (strstr(st->na, what)) return;
  size_t n = strlen(st->na);
  snprintf(st->na + n, sizeof st->na - n, "%s%s", n ? ", " : "", what);
  if (w->loc[0].rank == 0)
    printf("%s is not available yet: %s\n", what, ncclGetLastError(w->loc[0].comm));
}

static int is_na(ncclResult_t res, ncclComm_t comm) {
  return res == ncclInvalidUsage && ncclGetLastError(comm) &&
         strstr(ncclGetLastError(comm), "not available yet");
}

/* A call that must fail (a bad handle). */
static void expect_rejected(mem_state* st, const gpu_rank* r, const char* what, ncclResult_t res) {
  if (res != ncclSuccess) return;
  fprintf(stderr, "FAIL rank %d: %s returned ncclSuccess; expected an error\n", r->rank, what);
  st->failed++;
}

static int expect_ok(mem_state* st, const gpu_rank* r, const char* what, ncclResult_t res) {
  if (res == ncclSuccess) return 1;
  fprintf(stderr, "FAIL rank %d: %s returned %d (%s): %s\n", r->rank, what, (int)res,
          ncclGetErrorString(res), ncclGetLastError(r->comm));
  st->failed++;
  return 0;
}

/* issue, wait, verify one prepared run. */
static void run_once(gpu_world* w, mem_state* st, gpu_run* run) {
  int rc = gpu_run_issue(run, w);
  if (rc != GPU_RUN_OK) gpu_die(w); /* the data path answered before: no "not available" now */
  if (gpu_wait(w, run->name)) gpu_die(w);
  st->failed += gpu_run_verify(run, w);
}

/* ncclMemAlloc memory as send and receive buffers; ncclMemFree refuses foreign memory. */
static void memalloc_buffers(gpu_world* w, mem_state* st) {
  static const gpu_case cases[] = {
      {COLL_ALLREDUCE, ncclFloat32, OP_SUM, 0, 6, 0, 0},
      {COLL_ALLGATHER, ncclInt8, OP_NONE, 0, 4, 1, 0},
      {COLL_REDUCESCATTER, ncclBfloat16, OP_AVG, 0, 5, 0, 0},
      {COLL_BROADCAST, ncclFloat8e4m3, OP_NONE, 0, 3, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpu_case c = cases[i];
    if (c.root >= w->nranks) c.root = 0;
    int rc = gpu_run_case(w, &c, w->seed, GPU_MEM_NCCL);
    if (rc == GPU_SKIP) {
      note_na(w, st, "ncclMemAlloc");
      return;
    }
    if (rc == GPU_FAIL) st->failed++;
  }
  for (int i = 0; i < w->nlocal; i++) {
    void* p = NULL;
    CUDA_OK(cudaSetDevice(w->loc[i].dev));
    CUDA_OK(cudaMalloc(&p, 1 << 16));
    expect_rejected(st, &w->loc[i], "ncclMemFree(a cudaMalloc pointer)", ncclMemFree(p));
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError(); /* freed by mistake above */
  }
}

/* ncclCommRegister on the case's buffers, the collective, bad handles, ncclCommDeregister. */
static void registered_buffers(gpu_world* w, mem_state* st, const gpu_case* c, gpu_mem_kind mem) {
  gpu_run run;
  int rc = gpu_run_prepare(&run, w, c, w->seed, mem);
  if (rc == GPU_RUN_FATAL) gpu_die(w);
  void* h[GPU_MAX_LOCAL][2];
  memset(h, 0, sizeof h);
  int ok = rc == GPU_RUN_OK;
  if (rc == GPU_RUN_NA) note_na(w, st, "ncclMemAlloc");
  for (int i = 0; i < w->nlocal && ok; i++) {
    gpu_rank* R = &w->loc[i];
    unsigned char* raw[2] = {run.r[i].raw_a, run.r[i].raw_b};
    size_t len[2] = {run.r[i].raw_a_len, run.r[i].raw_b_len};
    for (int j = 0; j < 2 && ok; j++) {
      if (!raw[j]) continue;
      ncclResult_t res = ncclCommRegister(R->comm, raw[j], len[j], &h[i][j]);
      if (is_na(res, R->comm)) {
        note_na(w, st, "ncclCommRegister");
        ok = 0;
      } else if (!expect_ok(st, R, "ncclCommRegister", res)) {
        ok = 0;
      } else if (h[i][j] == NULL) {
        fprintf(stderr, "FAIL rank %d: ncclCommRegister succeeded with a NULL handle\n", R->rank);
        st->failed++;
        ok = 0;
      }
    }
  }
  if (ok) {
    run_once(w, st, &run);
    gpu_run_fill(&run, w, coll_mix64(w->seed + 1)); /* the same registered buffers, again */
    run_once(w, st, &run);
    for (int i = 0; i < w->nlocal; i++) {
      gpu_rank* R = &w->loc[i];
      int not_a_handle = 0;
      expect_rejected(st, R, "ncclCommDeregister(a pointer that is no handle)",
                      ncclCommDeregister(R->comm, &not_a_handle));
      if (w->nlocal > 1)
        expect_rejected(st, R, "ncclCommDeregister(a handle of another communicator)",
                        ncclCommDeregister(w->loc[(i + 1) % w->nlocal].comm, h[i][0]));
    }
  }
  for (int i = 0; i < w->nlocal; i++)
    for (int j = 0; j < 2; j++)
      if (h[i][j]) {
        gpu_rank* R = &w->loc[i];
        if (expect_ok(st, R, "ncclCommDeregister", ncclCommDeregister(R->comm, h[i][j])))
          expect_rejected(st, R, "ncclCommDeregister(a handle deregistered before)",
                          ncclCommDeregister(R->comm, h[i][j]));
      }
  st->failed += gpu_run_release(&run, w);
}

/* Collective window registration on ncclMemAlloc buffers; collectives in the windows. */
static void windows(gpu_world* w, mem_state* st) {
  gpu_case c = {COLL_ALLREDUCE, ncclFloat32, OP_SUM, 0, 6, 0, 0};
  gpu_run run;
  int rc = gpu_run_prepare(&run, w, &c, w->seed, GPU_MEM_NCCL);
  if (rc == GPU_RUN_FATAL) gpu_die(w);
  if (rc == GPU_RUN_NA) {
    note_na(w, st, "ncclMemAlloc");
    st->failed += gpu_run_release(&run, w);
    return;
  }
  ncclWindow_t win[GPU_MAX_LOCAL][2];
  memset(win, 0, sizeof win);
  int ok = 1, na = 0;
  /* Collective: every rank registers the same buffers in the same order. */
  ncclResult_t g = gpu_group_start(w);
  for (int i = 0; i < w->nlocal && g == ncclSuccess; i++) {
    gpu_rank* R = &w->loc[i];
    CUDA_OK(cudaSetDevice(R->dev));
    unsigned char* raw[2] = {run.r[i].raw_a, run.r[i].raw_b};
    size_t len[2] = {run.r[i].raw_a_len, run.r[i].raw_b_len};
    for (int j = 0; j < 2; j++) {
      ncclResult_t res =
          ncclCommWindowRegister(R->comm, raw[j], len[j], &win[i][j], NCCL_WIN_COLL_SYMMETRIC);
      if (is_na(res, R->comm))
        na = 1;
      else if (!expect_ok(st, R, "ncclCommWindowRegister", res))
        ok = 0;
      if (res != ncclSuccess) win[i][j] = NULL;
    }
  }
  ncclResult_t e = gpu_group_end(w);
  if (g != ncclSuccess || e != ncclSuccess) {
    if (is_na(g != ncclSuccess ? g : e, w->loc[0].comm)) {
      na = 1;
    } else {
      fprintf(stderr, "FAIL: ncclGroupStart/End around ncclCommWindowRegister returned %d/%d\n",
              (int)g, (int)e);
      st->failed++;
      ok = 0;
    }
  }
  if (na) note_na(w, st, "ncclCommWindowRegister");
  if (ok && !na) {
    run_once(w, st, &run);
    gpu_run_fill(&run, w, coll_mix64(w->seed + 2));
    run_once(w, st, &run);
    for (int i = 0; i < w->nlocal; i++) {
      int not_a_window = 0;
      expect_rejected(st, &w->loc[i], "ncclCommWindowDeregister(a pointer that is no window)",
                      ncclCommWindowDeregister(w->loc[i].comm, (ncclWindow_t)(void*)&not_a_window));
    }
  }
  int any = 0;
  for (int i = 0; i < w->nlocal; i++) any |= win[i][0] != NULL || win[i][1] != NULL;
  if (any) {
    g = gpu_group_start(w);
    for (int i = 0; i < w->nlocal && g == ncclSuccess; i++)
      for (int j = 0; j < 2; j++)
        if (win[i][j])
          expect_ok(st, &w->loc[i], "ncclCommWindowDeregister",
                    ncclCommWindowDeregister(w->loc[i].comm, win[i][j]));
    e = gpu_group_end(w);
    if (g != ncclSuccess || e != ncclSuccess) {
      fprintf(stderr, "FAIL: ncclGroupStart/End around ncclCommWindowDeregister returned %d/%d\n",
              (int)g, (int)e);
      st->failed++;
    }
    for (int i = 0; i < w->nlocal; i++)
      if (win[i][0])
        expect_rejected(st, &w->loc[i], "ncclCommWindowDeregister(a window deregistered before)",
                        ncclCommWindowDeregister(w->loc[i].comm, win[i][0]));
  }
  st->failed += gpu_run_release(&run, w);
}

int gpu_mem_body(gpu_world* w, void* arg) {
  (void)arg;
  int rc = gpu_run_gate(w);
  if (rc != GPU_PASS) return rc;
  mem_state st;
  memset(&st, 0, sizeof st);
  memalloc_buffers(w, &st);
  static const gpu_case reg_cuda = {COLL_ALLREDUCE, ncclBfloat16, OP_SUM, 0, 5, 0, 0};
  static const gpu_case reg_nccl = {COLL_REDUCESCATTER, ncclInt32, OP_SUM, 0, 4, 0, 0};
  gpu_watchdog_arm("mem: ncclCommRegister on cudaMalloc buffers");
  registered_buffers(w, &st, &reg_cuda, GPU_MEM_CUDA);
  gpu_watchdog_arm("mem: ncclCommRegister on ncclMemAlloc buffers");
  registered_buffers(w, &st, &reg_nccl, GPU_MEM_NCCL);
  gpu_watchdog_arm("mem: ncclCommWindowRegister");
  windows(w, &st);
  gpu_watchdog_disarm();
  const int lead = w->loc[0].rank == 0;
  if (st.failed) return GPU_FAIL;
  if (st.na[0]) {
    if (lead) printf("SKIP: not available yet: %s (everything else passed)\n", st.na);
    return GPU_SKIP;
  }
  if (lead) printf("mem: ncclMemAlloc buffers, registered buffers and windows: all correct\n");
  return GPU_PASS;
}
