/* The proxy GIN type of one communicator (gin_comm.c): what ncclDevCommCreate sets up when a
 * device communicator asks for GIN, and what destroy, abort and revoke take down.
 *
 * One GIN setup per communicator at a time (one device communicator with GIN; a second is
 * refused until the first is destroyed). The backend is the first of: a loaded RMA plugin
 * (plugin/kind.h: NCCL_RMA_PLUGIN, libnccl-rma.so, a GIN v13 library, the net library), the
 * built-in socket net's RMA table (plugin/net.h). Every rank must end up with the same backend.
 * The proxy runs direct where every rank's backend registers GPU memory (NCCL_PTR_CUDA), else
 * staged (gin_proxy.h: the proxies carry the bytes, copying between the windows and their
 * rings with cudaMemcpy on a non-blocking stream of their own).
 *
 * Memory (device mode, GPU of the communicator): queues, cis, counters and signals in mapped
 * host memory (the kernel writes the queues, the proxy the rest); pis, signal offsets, the get
 * indices, the signal shadows and the per-context structs ginHandles[0] points to in device
 * memory, zeroed. Without CUDA every call refuses (ncclInvalidUsage, a WARN). */
#ifndef WEFT_GIN_COMM_H
#define WEFT_GIN_COMM_H

#include <stdint.h>

#include "comm/comm.h"
#include "nccl.h"

typedef struct {
  int ncontexts, nsignals, ncounters; /* per context; signals/counters may be 0 */
  /* Called once, on the proxy thread, when the proxy fails (meant to fail the communicator and
   * set the abort word device-API kernels poll). */
  void (*on_error)(void* arg, ncclResult_t why);
  void* on_error_arg;
} gin_comm_req;

/* What the device communicator holds. */
typedef struct {
  uintptr_t handle;  /* device: ncclGinProxyGpuCtx_v2_30_t[ncontexts] (ginHandles[0]) */
  uintptr_t shadows; /* device: ncontexts * nsignals uint64 (ginSignalShadows) */
  uint32_t queue_size;
  int staged;
} gin_comm_dev;

/* Whether this communicator can offer the proxy GIN type: device mode, built with CUDA, and a
 * backend at hand (the built-in socket net's RMA table is always registered in the libraries). */
int gin_comm_possible(const struct ncclComm* comm);

/* Collective: choose and connect the backend, allocate the shared memory, create and start the
 * proxy, register every symmetric window of comm->regs (the caller writes their ginWins: see
 * gin_comm_window_handle). ncclInvalidUsage when GIN is already set up; a failure on any rank
 * fails it on every rank (a WARN naming the rank and step). */
ncclResult_t gin_comm_create(struct ncclComm* comm, const gin_comm_req* req, gin_comm_dev* out);

/* 1 while a GIN setup exists. */
int gin_comm_active(const struct ncclComm* comm);

/* Collective (symmetric windows are registered in the same order on every rank): make window r
 * reachable by the proxy; *handle is its ginWins[0]. A no-op (handle 0) without a GIN setup. */
ncclResult_t gin_comm_window_add(struct ncclComm* comm, weft_mem_reg* r, uint64_t* handle);
/* The handle r got (0: none). */
uint64_t gin_comm_window_handle(const struct ncclComm* comm, const weft_mem_reg* r);
/* r is being deregistered: forget it (direct mode: deregister it from the backend). */
void gin_comm_window_remove(struct ncclComm* comm, weft_mem_reg* r);

/* Revoke: stop the proxy thread (kernels' waits end on the abort word); memory stays until
 * gin_comm_destroy. */
void gin_comm_stop(struct ncclComm* comm);

/* Take everything down (no-op without a setup). */
void gin_comm_destroy(struct ncclComm* comm);

#endif
