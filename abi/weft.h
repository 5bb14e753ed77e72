/* weft's own extensions to the NCCL API. Everything here is weft-only: an application that
 * uses it no longer runs on stock NCCL. Plain C, no CUDA headers needed. Each function returns
 * ncclInvalidUsage (with a WARN) where the build lacks what it needs, never a silent success. */
#ifndef WEFT_H_
#define WEFT_H_

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where weftMemAllocTyped places memory. */
typedef enum {
  weftMemHost = 0,   /* host memory */
  weftMemDevice = 1, /* GPU memory of the current device (as ncclMemAlloc) */
  weftMemManaged = 2 /* CUDA managed memory */
} weftMemType_t;

/* Allocates size bytes of the given type into *ptr; *ptr is written only on success.
 * Free with weftMemFreeTyped and the same type. */
ncclResult_t weftMemAllocTyped(void** ptr, size_t size, weftMemType_t type);
ncclResult_t weftMemFreeTyped(void* ptr, weftMemType_t type);

/* A user reduction run on the host: combine count elements of `in` into `inout`, in place.
 * It must be associative and commutative, must not call back into weft, and may run on any
 * weft thread. user is the pointer given at creation. */
typedef void (*weftReduceFn_t)(void* inout, const void* in, size_t count, ncclDataType_t type,
                               void* user);

/* Creates an operator for fn, valid only with comm (like ncclRedOpCreatePreMulSum) and only for
 * communicators on the host executor; release it with ncclRedOpDestroy. */
ncclResult_t weftRedOpCreateCustom(ncclRedOp_t* op, weftReduceFn_t fn, void* user,
                                   ncclComm_t comm);

/* weft's own version, encoded major*10000 + minor*100 + patch (not the NCCL version it
 * advertises through ncclGetVersion), and the same as text, e.g. "0.1.0". */
int weftVersionCode(void);
const char* weftVersionString(void);

/* *isDevice = 1 when comm runs its work on GPUs, 0 when on the host executor. */
ncclResult_t weftCommGetMode(ncclComm_t comm, int* isDevice);

/* Control-plane allgather of small host buffers over the communicator's bootstrap network
 * (not the data path): every rank passes `bytes` bytes in sendbuf and receives nranks*bytes in
 * recvbuf, ordered by rank. For exchanging metadata (addresses, shapes) without MPI. Blocking,
 * bounded by WEFT_TIMEOUT_MS; bytes ≤ 1 MiB. */
ncclResult_t weftCommOobAllGather(ncclComm_t comm, const void* sendbuf, void* recvbuf,
                                  size_t bytes);

/* Logs the hang report of comm now: this rank's line (the operation it is in, with sequence
 * number, count, datatype and root/peer, for how long, and whom it waits for) and the summary
 * naming who waits for whom; the other ranks of this host log their lines within a second (their
 * watchdog reads the request from the communicator's shared status board, not the bootstrap).
 * Safe to call from any thread, also while another thread is blocked in an operation of comm.
 * WEFT_HANG_REPORT_MS (automatic report) and WEFT_HANG_SIGNAL=1 (SIGUSR1) log the same. */
ncclResult_t weftCommHangReport(ncclComm_t comm);

/* weft's algorithms beyond NCCL's seven (NCCL_ALGO names OneShot, TwoShot, RecDoubling,
 * Rabenseifner, Binomial): their ids in weft's cost tables, after NCCL_ALGO_PAT. The log-step
 * AllGather (Bruck) and ReduceScatter (RecHalving) are NCCL_ALGO_PAT's row. */
#define WEFT_ALGO_ONESHOT 7
#define WEFT_ALGO_TWOSHOT 8
#define WEFT_ALGO_RECDOUBLING 9
#define WEFT_ALGO_RABENSEIFNER 10
#define WEFT_ALGO_BINOMIAL 11
#define WEFT_NUM_ALGORITHMS 12
/* Tuner plugins: a library that exports `const int weftTunerAlgorithms = N;` (NCCL's 7 <
 * N <= WEFT_NUM_ALGORITHMS; 9 was this header's value before the log algorithms) gets
 * getCollInfo tables of N rows (numAlgo says so) from weft, so it can cost weft's algorithms
 * too; stock NCCL ignores the symbol and passes its seven rows. A
 * tuner without it sees NCCL's seven rows only: a table it edits picks among them, a table it
 * leaves untouched leaves the choice, weft's algorithms included, to weft. */
#define WEFT_TUNER_ALGORITHMS_SYMBOL "weftTunerAlgorithms"

#ifdef __cplusplus
}
#endif

#endif
