/* The GPU executor's host side: turns the work items of a launch into kernel launches on the
 * caller's stream, orders launches of one communicator across streams, and watches the words
 * the kernels report through (abort in, error out). Nothing here waits for a kernel, except
 * destroy. */
#ifndef WEFT_DEVICE_EXEC_H
#define WEFT_DEVICE_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "algo/work.h"

struct ncclComm;
struct weft_device;

/* Per communicator: the host-mapped abort/error words and the events that order launches.
 * max_blocks: the blocks one launch may use (1..WEFT_DEV_MAX_BLOCKS, agreed across ranks). */
ncclResult_t device_exec_create(struct ncclComm* comm, int max_blocks, struct weft_device** out);
/* Wait (bounded by WEFT_TIMEOUT_MS) for the last launch, or stop the kernels at once when
 * abort is set. The proxy must still run meanwhile (kernels may wait on net connections). */
void device_exec_wait_idle(struct ncclComm* comm, struct weft_device* d, int abort);
/* device_exec_wait_idle, then free (after the proxy has stopped: it may call
 * device_exec_stop). */
void device_exec_destroy(struct ncclComm* comm, struct weft_device* d, int abort);
/* Make running and later kernels of the communicator give up their waits (a connection
 * failed under them: the proxy calls this). Thread-safe. */
void device_exec_stop(struct weft_device* d);
/* The word device_exec_stop sets, as kernels address it (host-mapped; nonzero: give up), for
 * NCCL's device communicator (ncclDevComm.abortFlag): device-API kernels' waits end with it. */
uint32_t* device_exec_abort_word(struct weft_device* d);

/* Enqueue the works of one communicator's group (ops: the group's ops, in call order). */
ncclResult_t device_exec_launch(struct ncclComm* comm, const weft_op* ops, weft_work* works,
                                int nworks);
/* A copy on the op's stream (send to self, one-rank collectives): the copy engine. */
ncclResult_t device_exec_copy(struct ncclComm* comm, void* dst, const void* src, size_t bytes,
                              void* stream);
/* dst[0..count) = scalar * src[..] in type's arithmetic on stream (one-rank PreMulSum);
 * scalar_ptr, when not NULL, is a device scalar read by the kernel instead of scalar. */
ncclResult_t device_exec_scale(struct ncclComm* comm, void* dst, const void* src, size_t count,
                               ncclDataType_t type, uint64_t scalar, const void* scalar_ptr,
                               void* stream);
/* One-sided calls (rma/): copy bytes from src to dst (a peer's window as mapped here; none when
 * bytes is 0), then add one to slot (the peer's signal counter for this rank, as mapped here),
 * on stream. */
ncclResult_t device_exec_rma_put(struct ncclComm* comm, void* dst, const void* src, size_t bytes,
                                 uint64_t* slot, void* stream);
/* On stream, wait until sig[peers[i]] reaches consumed[peers[i]] + counts[i] for every i < n
 * (peers distinct; sig and consumed device memory of this GPU), then consume those counts.
 * Bounded like every kernel wait (abort, WEFT_TIMEOUT_MS: then device_exec_error says so). */
ncclResult_t device_exec_rma_wait(struct ncclComm* comm, const uint64_t* sig, uint64_t* consumed,
                                  int n, const int* peers, const uint64_t* counts, void* stream);
/* What the kernels reported: ncclSuccess, or the error a wait ended with. */
ncclResult_t device_exec_error(struct ncclComm* comm);
/* The peer whose signals a one-sided wait gave up on (ncclWaitSignal), or -1: none did. */
int device_exec_error_peer(struct ncclComm* comm);

/* Channels a device communicator proposes (NCCL_MIN/MAX_NCHANNELS, config CTAs applied by the
 * caller). */
int device_default_channels(void);
/* Blocks of weft's kernel that can be resident on GPU cuda_dev at once, counted low (one per
 * SM: the kernel is built for at least that, __launch_bounds__(NT, 1)); 0 when unknown. Ranks
 * that share a GPU must fit together, since a rank's blocks spin until its peers' blocks run. */
int device_resident_blocks(int cuda_dev);
/* The protocols the kernels can run on this communicator (NCCL_PROTO_* bits); LL128 only when
 * every rank reaches every other peer-to-peer (ll128_ok, agreed across ranks). */
unsigned device_protocols(int ll128_ok);

#endif
