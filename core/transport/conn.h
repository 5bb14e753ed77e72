/* One direction of one connection, as every executor sees it: a FIFO of WEFT_NSTEPS slots with
 * a producer counter (tail), a consumer counter (head) and per-slot sizes. Whatever carries the
 * bytes (shared memory mapped from the peer, or a local buffer a proxy thread feeds through a
 * net plugin), the executor code is the same: it only touches what this header describes.
 *
 * Rules (both protocols):
 *  - step s uses slot s % WEFT_NSTEPS; steps count up from 0 for the connection's lifetime;
 *  - the producer may write step s once head + WEFT_NSTEPS > s; it fills the slot, stores
 *    sizes[slot] (bytes), then publishes tail = s + 1 with release order;
 *  - the consumer may read step s once tail > s (Simple) or once every line of the slot carries
 *    flag s + 1 (LL); when done with the slot it publishes head = s + 1 with release order.
 * Simple: a slot holds step_bytes of raw data. LL: a slot holds step_bytes / 16 lines of
 * {u32 data, u32 flag, u32 data, u32 flag}; each {data, flag} pair is stored and loaded as one
 * 8-byte atomic, so a line half is either old or complete. A message of b bytes takes
 * max(1, ceil(b / 8)) lines (the unused tail of the last line is zero). When bytes reach an LL
 * slot through a proxy rather than through stores of the producer (WEFT_CONN_LL_TAIL), the
 * consumer also waits for tail, since a plugin's copy is not made of 8-byte atomics. */
#ifndef WEFT_TRANSPORT_CONN_H
#define WEFT_TRANSPORT_CONN_H

#include <stddef.h>
#include <stdint.h>

#define WEFT_NSTEPS 8
#define WEFT_CACHELINE 64
/* A connection's memory: the control block, then (at this offset) the slots. */
#define WEFT_FIFO_CTRL_BYTES 4096

typedef struct {
  uint64_t tail; /* producer: steps published */
  uint8_t pad0[WEFT_CACHELINE - sizeof(uint64_t)];
  uint64_t head; /* consumer: steps consumed */
  uint8_t pad1[WEFT_CACHELINE - sizeof(uint64_t)];
  int64_t sizes[WEFT_NSTEPS]; /* producer: bytes in each slot, stored before tail */
  /* Either end: WEFT_CONN_BROKEN_* once the connection can carry nothing more. In shared
   * memory the other end sees it at once and fails its wait instead of waiting for a timeout. */
  int32_t broken;
  /* Shared memory: set by the sender once it has mapped the receiver's segment (and unlinked
   * its name), so the receiver knows at close whether its name may still be needed. */
  int32_t attached;
  /* Registered buffers (device P2P, Simple, algo.h WEFT_ZC_REGISTERED): a sender that has its
   * data where the receiver can read it in place stores nothing in slot s % WEFT_NSTEPS and
   * posts here, before sizes and tail, its sendbuff [0] and recvbuff [1] as mapped in the
   * receiver's process, and tag = s + 1. A receiver reads a step's data there only when the tag
   * is its step's: otherwise (a sender that copied) the slot holds it. */
  struct {
    uint64_t buf[2];
    uint64_t tag;
    uint64_t pad;
  } zc_post[WEFT_NSTEPS];
} weft_fifo_ctrl;
enum { WEFT_CONN_BROKEN_ABORT = 1, WEFT_CONN_BROKEN_CLOSED = 2, WEFT_CONN_BROKEN_FAILED = 3 };
#ifdef __cplusplus
static_assert(sizeof(weft_fifo_ctrl) <= WEFT_FIFO_CTRL_BYTES, "control block fits its page");
#else
_Static_assert(sizeof(weft_fifo_ctrl) <= WEFT_FIFO_CTRL_BYTES, "control block fits its page");
#endif

#define WEFT_LL_LINE_BYTES 16
#define WEFT_LL_LINE_PAYLOAD 8
/* LL128 (device P2P only): 128-byte lines of 15 data words and a flag word (flag = step + 1),
 * each line stored by 8 threads of one warp instruction, which NVLink delivers whole. */
#define WEFT_LL128_LINE_BYTES 128
#define WEFT_LL128_LINE_PAYLOAD 120

/* Host executor: the first step an operation sends on a connection starts with its signature
 * (host/host_sig.c) of this many bytes, then the data; step payloads leave room for it. */
#define WEFT_CONN_SIG_BYTES 32

/* Flags of a weft_conn. */
#define WEFT_CONN_LL_TAIL 0x1 /* LL consumer also waits for tail (bytes delivered by a proxy) */

typedef struct weft_conn {
  weft_fifo_ctrl* ctrl; /* head/tail/sizes shared with the other side (or the proxy) */
  char* buff;           /* WEFT_NSTEPS slots of step_bytes */
  size_t step_bytes;
  int proto;            /* NCCL_PROTO_SIMPLE or NCCL_PROTO_LL */
  int flags;            /* WEFT_CONN_* */
  int is_send;          /* this side produces */
  int peer;             /* rank at the other end */
  int channel;
  int watch_pid;        /* same-host peer process to check while waiting (0: none) */
  uint64_t step;        /* executor's position: next step to produce or consume */
  volatile int error;   /* ncclResult_t set by whatever carries the bytes; sticky */
  /* Ops of one channel use a connection in the order they were launched: each op takes a
   * ticket at launch and may touch the connection while ticket_serving equals it. */
  uint64_t ticket_next;
  uint64_t ticket_serving;
} weft_conn;

static inline char* conn_slot(const weft_conn* c, uint64_t step) {
  return c->buff + (size_t)(step % WEFT_NSTEPS) * c->step_bytes;
}

/* Largest payload one step carries. */
static inline size_t conn_payload_max(size_t step_bytes, int ll) {
  return ll ? step_bytes / WEFT_LL_LINE_BYTES * WEFT_LL_LINE_PAYLOAD : step_bytes;
}
static inline size_t conn_payload_max_ll128(size_t step_bytes) {
  return step_bytes / WEFT_LL128_LINE_BYTES * WEFT_LL128_LINE_PAYLOAD;
}

static inline size_t ll_lines_for(size_t bytes) {
  size_t n = (bytes + WEFT_LL_LINE_PAYLOAD - 1) / WEFT_LL_LINE_PAYLOAD;
  return n ? n : 1;
}

/* A connection as the GPU executor's kernels see it (device/device.h says how each transport
 * maps it): the FIFO at device-accessible addresses, plus the kernels' own position in it, kept
 * in device memory between launches. transport/ writes one per connection into the table the
 * kernels read. */
typedef struct weft_dev_conn {
  weft_fifo_ctrl* ctrl; /* head/tail/sizes, device-accessible */
  char* buff;           /* WEFT_NSTEPS slots of step_bytes, device-accessible */
  uint64_t step_bytes;
  uint64_t step;  /* next step this side produces or consumes; advanced by the kernels */
  uint64_t head_seen; /* send side: the last head read (saves a remote read per launch) */
  int32_t proto;  /* NCCL_PROTO_SIMPLE or NCCL_PROTO_LL */
  int32_t flags;  /* WEFT_CONN_* */
  int32_t is_send;
  int32_t host_mem; /* 1: SHM or NET (a host agent reads the FIFO): stores need a system fence */
} weft_dev_conn;

#endif
