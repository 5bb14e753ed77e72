/* The registration service's side of registered buffers (device mode): what a peer's buffer
 * becomes in this process. The service (transport_regsrv.c, one per rank whose peers include
 * other processes of this host) maps what a peer shares (a CUDA IPC handle, or a cuMem
 * descriptor) for this rank's device and answers the address; what a peer releases, or leaves
 * mapped when its connection closes, is unmapped on a thread of its own (below). The peer's
 * side, its buffer shared, is transport_regview.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "transport/transport.h"
#include "transport/transport_internal.h"
#include "transport/transport_regsrv.h"
#include "util/clock.h"
#include "util/log.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

/* How long a mapping refused as already mapped waits for the unmapping thread to finish what
 * a peer released: an import (the peer copies if it is still refused, and requests queue
 * behind it), and a FIFO or window (which fail without it). */
#define REGSERVE_IMPORT_WAIT_MS 250
#define REGSERVE_UNMAP_WAIT_MS 2000

static int unmapper_wait_idle(struct weft_reg_unmapper* u, int ms);

/* 1 when the comm's unmapping thread had work and finished it within ms. */
static int wait_unmaps(struct ncclComm* comm, int ms) {
  return comm->transport && unmapper_wait_idle(comm->transport->reg_unmapper, ms);
}

/* A peer that released a buffer and registers another over the same range (freed and
 * allocated again, with another size) finds the old mapping still there, or being closed,
 * until the unmapping thread is done with it: the driver refuses to map the range again with
 * another extent. So a refused acquire waits for the thread (bounded: its close may wait for
 * kernels that wait for that very peer), then tries once more. */
static int acquire_after_unmaps(struct ncclComm* comm, const uint8_t* handle, int wait_ms,
                                void** base) {
  int e = ipcmap_acquire(handle, comm->cuda_dev, base);
  if (ipcmap_still_mapped(e) && wait_unmaps(comm, wait_ms)) {
    cudaGetLastError();
    e = ipcmap_acquire(handle, comm->cuda_dev, base);
  }
  return e;
}

int regserve_acquire(struct ncclComm* comm, const uint8_t* handle, void** base) {
  return acquire_after_unmaps(comm, handle, REGSERVE_UNMAP_WAIT_MS, base);
}

static int serve_import(void* ctx, const weft_regsrv_desc* d, int fd, uint64_t* addr,
                        void** mapping, char* why, size_t whylen) {
  struct ncclComm* comm = ctx;
  devmem_thread_device(comm->cuda_dev);
  void* base = NULL;
  if (d->how == WEFT_REGSRV_IPC) {
    int e = acquire_after_unmaps(comm, d->handle, REGSERVE_IMPORT_WAIT_MS, &base);
    if (e != cudaSuccess) {
      cudaGetLastError();
      /* Still mapped: commonly its unmap waits for kernels that wait for that peer. */
      if (ipcmap_still_mapped(e))
        snprintf(why, whylen, "%s (%s)", WEFT_REGSRV_STILL_MAPPED, ipcmap_acquire_error(e));
      else
        snprintf(why, whylen, "cudaIpcOpenMemHandle: %s", ipcmap_acquire_error(e));
      return 0;
    }
  } else if (!ipcmap_map_fd(comm->cuda_dev, fd, d->alloc, &base, why, whylen)) {
    return 0;
  }
  *mapping = base;
  *addr = (uint64_t)(uintptr_t)base + d->offset;
  return 1;
}

/* Unmapping a peer's buffer (cudaIpcCloseMemHandle, cuMemUnmap) may wait until this
 * process's GPU work ends, and that work may be waiting for the very peer that released the
 * buffer, or for one whose request is queued behind the release: the service thread hands
 * each unmap to this thread, which may wait. The thread starts with the first unmap: most
 * communicators never register a buffer, and their service never unmaps. */
typedef struct unmap_job {
  weft_regsrv_desc d;
  void* mapping;
  struct unmap_job* next;
} unmap_job;

struct weft_reg_unmapper {
  struct ncclComm* comm;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unmap_job* jobs;
  int pending; /* jobs queued or being unmapped */
  pthread_cond_t idle; /* pending fell to 0 */
  int stop;
  int started; /* the thread runs (from the first job on) */
};

static void unmap_now(struct ncclComm* comm, const weft_regsrv_desc* d, void* mapping) {
  devmem_thread_device(comm->cuda_dev);
  if (d->how == WEFT_REGSRV_IPC)
    ipcmap_release(comm, NULL, mapping);
  else
    ipcmap_unmap_fd(mapping, d->alloc);
}

static void* unmapper_main(void* arg) {
  struct weft_reg_unmapper* u = arg;
  pthread_mutex_lock(&u->mu);
  for (;;) {
    while (!u->jobs && !u->stop) pthread_cond_wait(&u->cv, &u->mu);
    unmap_job* j = u->jobs;
    if (!j) break; /* stopped, nothing left */
    u->jobs = j->next;
    pthread_mutex_unlock(&u->mu);
    unmap_now(u->comm, &j->d, j->mapping);
    free(j);
    pthread_mutex_lock(&u->mu);
    if (--u->pending == 0) pthread_cond_broadcast(&u->idle);
  }
  pthread_mutex_unlock(&u->mu);
  return NULL;
}

static void serve_release(void* ctx, const weft_regsrv_desc* d, void* mapping) {
  struct ncclComm* comm = ctx;
  struct weft_reg_unmapper* u = comm->transport->reg_unmapper;
  unmap_job* j = malloc(sizeof *j);
  if (!j) { /* no memory for the job: unmap here, at the risk of a wait */
    unmap_now(comm, d, mapping);
    return;
  }
  j->d = *d;
  j->mapping = mapping;
  pthread_mutex_lock(&u->mu);
  if (!u->started) {
    int e = pthread_create(&u->thread, NULL, unmapper_main, u);
    if (e != 0) {
      pthread_mutex_unlock(&u->mu);
      free(j);
      WARN("rank %d: the registration service cannot start its unmapping thread (%s): "
           "unmapping a peer's buffer on the service thread, which may wait for this "
           "process's kernels",
           comm->rank, strerror(e));
      unmap_now(comm, d, mapping);
      return;
    }
    u->started = 1;
  }
  j->next = u->jobs;
  u->jobs = j;
  u->pending++;
  pthread_cond_signal(&u->cv);
  pthread_mutex_unlock(&u->mu);
}

/* 1 when nothing is left to unmap (now, or within ms), else 0. */
static int unmapper_wait_idle(struct weft_reg_unmapper* u, int ms) {
  if (!u) return 0;
  struct timespec end = clock_deadline(CLOCK_REALTIME, ms);
  pthread_mutex_lock(&u->mu);
  int had = u->pending > 0;
  while (u->pending > 0)
    if (pthread_cond_timedwait(&u->idle, &u->mu, &end) == ETIMEDOUT) break;
  int idle = u->pending == 0;
  pthread_mutex_unlock(&u->mu);
  return had && idle; /* nothing was pending: waiting changed nothing */
}

static ncclResult_t unmapper_start(struct ncclComm* comm) {
  struct weft_reg_unmapper* u = calloc(1, sizeof *u);
  if (!u) {
    WARN("rank %d: out of memory for the registration service", comm->rank);
    return ncclSystemError;
  }
  u->comm = comm;
  pthread_mutex_init(&u->mu, NULL);
  pthread_cond_init(&u->cv, NULL);
  pthread_cond_init(&u->idle, NULL);
  comm->transport->reg_unmapper = u; /* its thread starts with the first unmap */
  return ncclSuccess;
}

/* After the service stopped (it queued what its connections held): unmap all, join. */
static void unmapper_stop(struct ncclComm* comm) {
  struct weft_reg_unmapper* u = comm->transport->reg_unmapper;
  if (!u) return;
  pthread_mutex_lock(&u->mu);
  u->stop = 1;
  int started = u->started;
  pthread_cond_signal(&u->cv);
  pthread_mutex_unlock(&u->mu);
  if (started) pthread_join(u->thread, NULL);
  pthread_cond_destroy(&u->cv);
  pthread_cond_destroy(&u->idle);
  pthread_mutex_destroy(&u->mu);
  free(u);
  comm->transport->reg_unmapper = NULL;
}

ncclResult_t regserve_start(struct ncclComm* comm) {
  struct weft_transport* t = comm->transport;
  if (!transport_reg_zero_copy(comm)) return ncclSuccess; /* no peer would read in place */
  int other = 0;
  for (int q = 0; q < comm->nranks; q++)
    if (q != comm->rank && !p2p_same_process(comm, q)) other = 1; /* all P2P: checked above */
  if (!other) return ncclSuccess;
  t->reg_conns = malloc((size_t)comm->nranks * sizeof *t->reg_conns);
  if (!t->reg_conns) {
    WARN("rank %d: out of memory for the registration connections", comm->rank);
    return ncclSystemError;
  }
  for (int q = 0; q < comm->nranks; q++) t->reg_conns[q] = -1;
  char name[WEFT_REGSRV_NAME_MAX];
  size_t len;
  regsrv_name(name, &len, comm->peers[comm->rank].p2p.proc_id, comm->comm_hash, comm->rank);
  weft_regsrv_ops ops = {serve_import, serve_release, comm};
  /* Without it peers copy to this rank (zero copy is an optimisation): logged, not fatal. */
  if (unmapper_start(comm) != ncclSuccess ||
      regsrv_start(name, len, comm->comm_hash, comm->rank, &ops, &t->regsrv) != ncclSuccess) {
    unmapper_stop(comm);
    INFO(NCCL_REG, "rank %d: registered buffers of peers in other processes will be copied",
         comm->rank);
  }
  return ncclSuccess;
}

void regserve_fini(struct ncclComm* comm) {
  struct weft_transport* t = comm->transport;
  regsrv_stop(t->regsrv);
  t->regsrv = NULL;
  unmapper_stop(comm);
  if (t->reg_conns)
    for (int q = 0; q < comm->nranks; q++)
      if (t->reg_conns[q] >= 0) close(t->reg_conns[q]);
  free(t->reg_conns);
  t->reg_conns = NULL;
}

#else /* !WEFT_HAVE_CUDA: no device mode, nothing to serve */

ncclResult_t regserve_start(struct ncclComm* comm) {
  (void)comm;
  return ncclSuccess;
}
void regserve_fini(struct ncclComm* comm) { (void)comm; }

#endif
