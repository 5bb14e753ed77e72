/* transport/transport_ipcmap's process-wide table of a peer's CUDA IPC mappings, against a fake
 * CUDA runtime defined here (transport_ipcmap.c is compiled into this test, so its calls to
 * cudaIpcOpenMemHandle and cudaIpcCloseMemHandle reach the fakes; no GPU).
 *
 * The fake maps a handle (its first 8 bytes are its name) at an address of its own and
 * refuses to map one that is mapped already (cudaErrorAlreadyMapped), as the driver does for an
 * extent it maps; its close can be made to wait until the test lets it go, as the real one waits
 * for the process's kernels. Checked: one open per handle however many acquire it, the close
 * only with the last release, the close not holding the table's lock (an acquire of another
 * handle returns while a close waits, which the lock held across it would block until the close
 * ended), an acquire of the handle being closed refused at once (IPCMAP_CLOSING) and allowed
 * again once the close ended, a failing close reported once through devmem_cuda_fail and its
 * entry gone, and threads acquiring and releasing random handles never seeing a mapping closed
 * while they hold it nor a handle opened twice. Random handles from a seed printed first;
 * WEFT_TEST_SEED=n repeats one. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "topo/cuda_entry.h"
#include "transport/transport_internal.h"
#include "util/clock.h"

static uint64_t seed;

/* ---- the fake runtime ---- */

#define NAMES 64 /* handle names 1..NAMES */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int mapped[NAMES + 1]; /* 1 while the fake maps that name */
  int opens, closes, double_opens, bad_closes;
  uint64_t block_name; /* a close of this name waits until released */
  int blocked;         /* a close is waiting */
  int fail_name;       /* a close of this name fails (after unmapping) */
  int fails_reported;
  char last_what[128];
} F = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t name_of(const void* handle) {
  uint64_t n;
  memcpy(&n, handle, sizeof n);
  return n;
}
static void* addr_of(uint64_t name) { return (void*)(uintptr_t)(0x100000ull * name); }
static uint64_t name_at(const void* p) { return (uint64_t)(uintptr_t)p / 0x100000ull; }

cudaError_t cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t h, unsigned int flags) {
  (void)flags;
  uint64_t n = name_of(&h);
  pthread_mutex_lock(&F.mu);
  cudaError_t e = cudaSuccess;
  if (n < 1 || n > NAMES) {
    e = cudaErrorInvalidValue;
  } else if (F.mapped[n]) {
    F.double_opens++;
    e = cudaErrorAlreadyMapped;
  } else {
    F.mapped[n] = 1;
    F.opens++;
    *p = addr_of(n);
  }
  pthread_mutex_unlock(&F.mu);
  return e;
}

cudaError_t cudaIpcCloseMemHandle(void* p) {
  uint64_t n = name_at(p);
  pthread_mutex_lock(&F.mu);
  if (n == F.block_name) {
    F.blocked = 1;
    pthread_cond_broadcast(&F.cv);
    while (F.block_name == n) pthread_cond_wait(&F.cv, &F.mu);
    F.blocked = 0;
  }
  cudaError_t e = cudaSuccess;
  if (n < 1 || n > NAMES || !F.mapped[n]) {
    F.bad_closes++;
    e = cudaErrorInvalidValue;
  } else {
    F.mapped[n] = 0;
    F.closes++;
    if ((int)n == F.fail_name) e = cudaErrorUnknown;
  }
  pthread_mutex_unlock(&F.mu);
  return e;
}

const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaErrorAlreadyMapped ? "cudaErrorAlreadyMapped" : "cudaError(fake)";
}

/* What transport_ipcmap.c's other functions (not tested here) call. */
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* h, void* p) {
  (void)h, (void)p;
  return cudaErrorNotSupported;
}
const weft_cuda_drv* cuda_drv(void) {
  static const weft_cuda_drv none;
  return &none;
}
const char* cuda_drv_error(CUresult r) {
  (void)r;
  return "CUresult(fake)";
}
int cuda_alloc_range(const void* p, uintptr_t* base, size_t* bytes) {
  (void)p, (void)base, (void)bytes;
  return 0;
}
ncclResult_t devmem_cuda_fail(struct ncclComm* comm, const tconn* c, const char* what, int err) {
  (void)comm, (void)c, (void)err;
  pthread_mutex_lock(&F.mu);
  F.fails_reported++;
  snprintf(F.last_what, sizeof F.last_what, "%s", what);
  pthread_mutex_unlock(&F.mu);
  return ncclUnhandledCudaError;
}

static int fget(int* field) {
  pthread_mutex_lock(&F.mu);
  int v = *field;
  pthread_mutex_unlock(&F.mu);
  return v;
}

/* A handle named n: its other bytes random (ipcmap compares all 64). */
static uint8_t handles[NAMES + 1][WEFT_IPC_HANDLE_BYTES];
static void make_handles(void) {
  uint64_t s = seed;
  for (int n = 1; n <= NAMES; n++) {
    for (int i = 0; i < WEFT_IPC_HANDLE_BYTES; i++) handles[n][i] = (uint8_t)test_rand(&s);
    uint64_t name = (uint64_t)n;
    memcpy(handles[n], &name, sizeof name);
  }
}

static void* acquire_ok(int n) {
  void* p = NULL;
  int e = ipcmap_acquire(handles[n], 0, &p);
  EXPECT(e == cudaSuccess);
  EXPECT(p == addr_of((uint64_t)n));
  return p;
}

/* ---- a release that waits in its close, on a thread of its own ---- */

static void* release_on_thread(void* p) {
  ipcmap_release(NULL, NULL, p);
  return NULL;
}

/* If the acquires below block behind the waiting close (the lock held across it), let the
 * close go after 3 s, so that the test fails on the time taken rather than hanging. */
static int acquires_done;
static void* watchdog(void* arg) {
  (void)arg;
  uint64_t end = clock_ms() + 3000;
  while (!fget(&acquires_done) && clock_ms() < end) usleep(1000);
  pthread_mutex_lock(&F.mu);
  F.block_name = 0;
  pthread_cond_broadcast(&F.cv);
  pthread_mutex_unlock(&F.mu);
  return NULL;
}

/* ---- threads acquiring and releasing random handles ---- */

#define STRESS_THREADS 4
#define STRESS_OPS 4000
#define STRESS_NAMES 6

static void* stress(void* arg) {
  uint64_t s = (seed ^ (uintptr_t)arg * 0x9e3779b97f4a7c15ull) | 1;
  for (int i = 0; i < STRESS_OPS; i++) {
    test_rand(&s);
    int n = 40 + (int)(s % STRESS_NAMES);
    void* p = NULL;
    int e = ipcmap_acquire(handles[n], 0, &p);
    if (e == IPCMAP_CLOSING) continue; /* the last holder's close runs: refused, not waited */
    EXPECT(e == cudaSuccess && p == addr_of((uint64_t)n));
    EXPECT(fget(&F.mapped[n])); /* held: the fake still maps it */
    if (s & 8) sched_yield();
    EXPECT(fget(&F.mapped[n])); /* still held: nobody closed it */
    ipcmap_release(NULL, NULL, p);
  }
  return NULL;
}

int main(void) {
  test_require_weft_lib();
  seed = test_seed((uint64_t)time(NULL) * 1000003ull ^ (uint64_t)getpid() << 20 ^ clock_ns());
  fprintf(stderr, "transport_ipcmap: seed %llu (WEFT_TEST_SEED repeats it)\n",
          (unsigned long long)seed);
  make_handles();

  /* 1. One open however many acquire it; the close with the last release only. */
  void* p1 = acquire_ok(1);
  EXPECT(acquire_ok(1) == p1 && acquire_ok(1) == p1);
  EXPECT(fget(&F.opens) == 1 && fget(&F.double_opens) == 0);
  ipcmap_release(NULL, NULL, p1);
  ipcmap_release(NULL, NULL, p1);
  EXPECT(fget(&F.closes) == 0);
  ipcmap_release(NULL, NULL, p1);
  EXPECT(fget(&F.closes) == 1 && !F.mapped[1]);
  ipcmap_release(NULL, NULL, p1); /* nothing held: ignored */
  EXPECT(fget(&F.closes) == 1 && fget(&F.bad_closes) == 0);
  EXPECT(acquire_ok(1) == p1 && fget(&F.opens) == 2); /* opened anew */

  /* 2. A close that waits (for kernels, in the driver) holds no lock: another handle is
   * acquired meanwhile, the one being closed is refused at once and may be acquired again once
   * the close ended. */
  pthread_mutex_lock(&F.mu);
  F.block_name = 1;
  pthread_mutex_unlock(&F.mu);
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, release_on_thread, p1) == 0);
  pthread_mutex_lock(&F.mu);
  while (!F.blocked) pthread_cond_wait(&F.cv, &F.mu);
  pthread_mutex_unlock(&F.mu);
  pthread_t wd;
  EXPECT(pthread_create(&wd, NULL, watchdog, NULL) == 0);
  uint64_t t0 = clock_ms();
  void* p2 = acquire_ok(2);
  void* q = NULL;
  int e = ipcmap_acquire(handles[1], 0, &q);
  uint64_t took = clock_ms() - t0;
  int still_blocked = fget(&F.blocked);
  pthread_mutex_lock(&F.mu);
  acquires_done = 1;
  pthread_mutex_unlock(&F.mu);
  if (took > 1000) {
    fprintf(stderr, "FAIL: acquires took %llu ms while a close waited\n",
            (unsigned long long)took);
    exit(1);
  }
  EXPECT(e == IPCMAP_CLOSING);
  EXPECT(strstr(ipcmap_acquire_error(e), "closed") != NULL);
  EXPECT(strcmp(ipcmap_acquire_error(cudaErrorAlreadyMapped), "cudaErrorAlreadyMapped") == 0);
  EXPECT(still_blocked == 1); /* all of that while the close still waited */
  EXPECT(pthread_join(wd, NULL) == 0);
  pthread_mutex_lock(&F.mu);
  F.block_name = 0;
  pthread_cond_broadcast(&F.cv);
  pthread_mutex_unlock(&F.mu);
  EXPECT(pthread_join(t, NULL) == 0);
  EXPECT(fget(&F.closes) == 2 && fget(&F.double_opens) == 0);
  EXPECT(acquire_ok(1) == p1 && fget(&F.opens) == 4);
  ipcmap_release(NULL, NULL, p1);
  ipcmap_release(NULL, NULL, p2);
  EXPECT(fget(&F.closes) == 4);

  /* 3. A close that fails is reported once; the entry is gone (the next acquire opens). */
  pthread_mutex_lock(&F.mu);
  F.fail_name = 3;
  pthread_mutex_unlock(&F.mu);
  void* p3 = acquire_ok(3);
  ipcmap_release(NULL, NULL, p3);
  EXPECT(fget(&F.fails_reported) == 1 && strstr(F.last_what, "cudaIpcCloseMemHandle"));
  pthread_mutex_lock(&F.mu);
  F.fail_name = 0;
  pthread_mutex_unlock(&F.mu);
  int opens = fget(&F.opens);
  EXPECT(acquire_ok(3) == p3 && fget(&F.opens) == opens + 1);
  ipcmap_release(NULL, NULL, p3);

  /* 4. Threads on a few handles: never closed while held, never opened twice. */
  pthread_t th[STRESS_THREADS];
  for (uintptr_t i = 0; i < STRESS_THREADS; i++)
    EXPECT(pthread_create(&th[i], NULL, stress, (void*)(i + 1)) == 0);
  for (int i = 0; i < STRESS_THREADS; i++) EXPECT(pthread_join(th[i], NULL) == 0);
  EXPECT(fget(&F.double_opens) == 0 && fget(&F.bad_closes) == 0);
  EXPECT(fget(&F.opens) == fget(&F.closes)); /* every mapping closed at the end */
  for (int n = 1; n <= NAMES; n++) EXPECT(!F.mapped[n]);

  printf("transport_ipcmap: %d opens, %d closes; a waiting close blocked nothing (%llu ms), "
         "closing handle refused, failed close reported, %d threads x %d ops (seed %llu)\n",
         F.opens, F.closes, (unsigned long long)took, STRESS_THREADS, STRESS_OPS,
         (unsigned long long)seed);
  return 0;
}
