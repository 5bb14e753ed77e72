/* The GPU executor: what the host side (device_exec.c) hands the kernels (device_kernel.cu),
 * and what the transports give it. Plain C, included by C and CUDA files alike.
 *
 * A connection as the kernels see it is a weft_dev_conn in device memory (one per connected
 * transport/ connection, owned by the communicator's transport table): the FIFO of conn.h at
 * device-accessible addresses, plus the kernels' own position in it, which stays in device
 * memory between launches (so a captured CUDA graph replays with fresh steps).
 *   P2P:  the receiver's GPU memory holds the control block and the slots; the sender's GPU
 *         writes slots, sizes and tail there over NVLink/PCIe and polls head there.
 *   SHM:  pinned host shared memory mapped into both GPUs (cudaHostRegister).
 *   NET:  each side's local host slots (pinned, mapped); the proxy moves them through the net
 *         plugin exactly as in host mode (WEFT_CONN_LL_TAIL set on the receive side). With
 *         GPUDirect the slots are in the GPU's own memory and only the control block is host
 *         memory; the kernels see no difference (host_mem stays 1: a host agent reads the FIFO,
 *         so sends fence at system scope). */
#ifndef WEFT_DEVICE_H
#define WEFT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"
#include "transport/conn.h"


/* Reduction kinds the kernels implement (host/reduce.h's weft_red_kind, minus Custom). */
enum {
  WEFT_DRED_SUM = 0,
  WEFT_DRED_PROD = 1,
  WEFT_DRED_MAX = 2,
  WEFT_DRED_MIN = 3,
  WEFT_DRED_PREMULSUM = 4,
  WEFT_DRED_SUMPOSTDIV = 5
};

/* One work item: one op's share of one channel (or one point-to-point transfer's). */
typedef struct {
  weft_algo alg;
  /* By role (algo.h): 1 + the connection's index in the communicator's table of weft_dev_conn
   * (weft_dev_comm.conns), 0 when unused. Indices, not pointers: 16 roles in the bytes of 8.
   * The host executor's roles 16.. (log algorithms beyond WEFT_LOG_DEV_MAX_RANKS) have none. */
  uint32_t conns[WEFT_DEV_MAX_CONNS];
  int32_t dtype;           /* ncclDataType_t */
  int32_t redop;           /* WEFT_DRED_* */
  int32_t proto;           /* NCCL_PROTO_* */
  int32_t nranks_div;      /* SumPostDiv divisor */
  uint64_t scalar;         /* PreMulSum scalar, the datatype's own bytes (host scalar) */
  const void* scalar_ptr;  /* PreMulSum device scalar (NULL: use scalar) */
} weft_dev_work;

/* Shared by every launch of a communicator: abort and error words (host-mapped). */
typedef struct {
  weft_dev_conn* conns;          /* the communicator's table of connections (device memory) */
  volatile uint32_t* abort_flag; /* set by the host on ncclCommAbort */
  volatile uint32_t* error;      /* set by a kernel: 1 = a wait timed out, 2 = aborted */
  uint64_t timeout_ns;           /* bound on one wait (WEFT_TIMEOUT_MS) */
  /* Profiler (KernelCh asked for, device_prof.c): block b stores its %globaltimer start at
   * [2b] and stop at [2b+1] (host-mapped); NULL: not timed, one branch per block. */
  unsigned long long* prof_ts;
} weft_dev_comm;

/* One kernel launch: blocks run their works in order; a block's works never share a
 * connection with another block's. Sized to fit a kernel's parameter space; launches of up to
 * WEFT_DEV_SMALL works go through a kernel with a small parameter block instead, because a
 * launch's cost grows with the bytes of its parameters. */
#define WEFT_DEV_MAX_WORKS 128
#define WEFT_DEV_MAX_BLOCKS 128
#define WEFT_DEV_SMALL 16
typedef struct {
  weft_dev_comm comm;
  int32_t nblocks;
  int32_t nworks;
  uint16_t block_first[WEFT_DEV_MAX_BLOCKS]; /* block b runs works [first[b], end[b]) */
  uint16_t block_end[WEFT_DEV_MAX_BLOCKS];
  weft_dev_work works[WEFT_DEV_MAX_WORKS];
} weft_dev_launch;
typedef struct {
  weft_dev_comm comm;
  int32_t nblocks;
  int32_t nworks;
  uint16_t block_first[WEFT_DEV_SMALL];
  uint16_t block_end[WEFT_DEV_SMALL];
  weft_dev_work works[WEFT_DEV_SMALL];
} weft_dev_launch_small;

#ifdef __cplusplus
extern "C" {
#endif
/* Launchers (kernel_<type>.cu): enqueue the kernel of (datatype, redop: WEFT_DRED_*) on stream
 * (a cudaStream_t). Return 0 or the cudaError_t of the launch. */
typedef int (*weft_dev_launcher)(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_int8(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_uint8(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_int32(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_uint32(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_int64(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_uint64(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_half(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_float(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_double(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_bf16(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_e4m3(int redop, const weft_dev_launch* l, void* stream);
int weft_dev_launch_e5m2(int redop, const weft_dev_launch* l, void* stream);
/* kernel_local.cu: an SM copy of bytes (dst and src 16-byte aligned) on stream. */
int weft_dev_copy(void* dst, const void* src, size_t bytes, void* stream);
/* kernel_local.cu: dst[i] = scalar * src[i] for count elements of dtype (an ncclDataType_t);
 * scalar is the datatype's own bytes, or read from scalar_ptr on the GPU when it is not NULL. */
int weft_dev_scale(int dtype, void* dst, const void* src, size_t count, uint64_t scalar,
                   const void* scalar_ptr, void* stream);
#ifdef __cplusplus
}
#endif

#endif
