/* One-sided operations over verbs: the ib plugin's RMA tables (v15, v14, v13) and GIN v13 (the
 * v13 shape of the same calls, a proxy device: the host issues every transfer).
 *
 * A group (connect) is a full mesh of RC QPs on one port, one QP per rank (this rank's own QP
 * is connected to itself), all on one CQ. Their numbers and addresses travel over a TCP mesh
 * (the lower rank connects, its hello carries the listener's secret), which stays open: it
 * carries the registrations (regMrSym is collective: every rank sends its (address, R_Key,
 * size) to every other, then reads theirs, so the n-th live registration has the same id
 * everywhere) and the goodbye of closeColl; its end without a goodbye is how a peer that died is
 * noticed.
 *
 * Data: iput is IBV_WR_RDMA_WRITE (cut at the port's message size), iget IBV_WR_RDMA_READ. A
 * signal is an IBV_WR_SEND of a 24-byte record (registration id, offset, amount) on the same QP
 * after the data: RC executes a QP's requests in order at the target, so the record's receive
 * completion comes after every earlier write to that rank has been placed (every signal is
 * strong). The target's progress thread applies the record: an atomic add on the host's signal
 * word, then posts the receive again. (No RDMA atomics: fakeverbs, what CI runs on, has none, and
 * a SEND's receive buffer, unlike a write-with-immediate's slot, is never reused before the
 * target has read it.) iflush is an 8-byte RDMA read from the peer after the earlier writes on
 * the QP: its completion means they are placed. A request completes when all its work
 * requests have (every WR is signaled).
 *
 * Memory: host memory (and, data only, CUDA memory through nvidia-peermem or dma-bufs where the
 * port can register them); a signal word must be host memory, since the target's host adds to
 * it. Naming: ri_* (hidden), rma_ib_* (the table's entries). */
#ifndef WEFT_RMA_IB_H
#define WEFT_RMA_IB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "nccl_rma.h"
#include "net_ib_internal.h"

#define RI_MAX_RANKS 512
#define RI_SQ_DEPTH 256 /* send WRs in flight per QP */
#define RI_RQ_DEPTH 128 /* signal receives posted per QP */
#define RI_SLOT 32      /* bytes of one signal receive buffer */
#define RI_RECV_BIT (1ull << 63) /* wr_id of a receive: bit, peer << 20, slot */

/* What a signal SEND carries. */
typedef struct {
  uint32_t mr;  /* registration id */
  uint32_t pad;
  uint64_t off; /* of the 64-bit word in it */
  uint64_t add;
} ri_sig;

/* The side channel's messages (host byte order: a group spans one architecture). */
enum { RI_MSG_REG = 'R', RI_MSG_BYE = 'B' };
typedef struct {
  uint32_t type;
  uint32_t id;
  uint64_t addr;
  uint64_t size;
  uint32_t rkey;
  uint32_t pad;
} ri_msg;

typedef struct {
  uint64_t addr, size;
  uint32_t rkey;
} ri_remote;

typedef struct {
  uint32_t id;
  int type; /* NCCL_PTR_HOST, _CUDA or _DMABUF */
  char* base;
  size_t size;
  struct ibv_mr* mr;
  ri_remote* remote; /* per rank */
} ri_mr;

enum { RI_PUT = 1, RI_GET, RI_FLUSH };

typedef struct ri_req {
  struct ri_req* next; /* every request not yet freed */
  int kind, peer;
  int pending;  /* work requests not completed */
  int done;     /* atomic */
  int released; /* tested done while WRs were still out: freed when they complete */
  ncclResult_t error;
} ri_req;

typedef struct {
  int fd; /* the side channel; -1 for this rank */
  struct ibv_qp* qp;
  int sq_used;
  int dead;   /* its channel ended without a goodbye */
  int closed; /* it said goodbye */
  int failed; /* a completion error put the QP in error */
  pthread_mutex_t io; /* the channel's reads and writes (the progress thread only tries it) */
  uint64_t flush_addr;
  uint32_t flush_rkey;
} ri_peer;

typedef struct {
  uint64_t magic;
  int nranks, rank;
  ib_dev* d;
  struct ibv_cq* cq;
  ri_peer* peers;
  char* buf; /* [nranks][RI_RQ_DEPTH] receive slots, then 64 flush-source and 64 flush bytes */
  size_t buf_len;
  struct ibv_mr* buf_mr;
  pthread_mutex_t lock; /* everything below, the CQ and every post */
  ri_mr** mrs;          /* by id; NULL once deregistered */
  uint32_t nmrs, cap_mrs;
  ri_req* reqs;
  uint64_t next_check_ns;
  int async_event; /* atomic: the first async event on its QPs or CQ (-1: none); their context */
  int async_seen;  /* that event was reported */
  int error, stop; /* atomic */
  pthread_t progress;
  int thread;
} ri_group;

/* rma_ib_group.c */
ncclResult_t rma_ib_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger);
ncclResult_t rma_ib_finalize(void* ctx);
ncclResult_t rma_ib_devices(int* ndev);
ncclResult_t rma_ib_get_properties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t rma_ib_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t rma_ib_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                            void** coll);
ncclResult_t rma_ib_close_coll(void* coll);
ncclResult_t rma_ib_close_listen(void* listen_comm);
ri_group* ri_group_check(void* p, const char* fn);
/* Lock held: drain the CQ (apply signals, complete requests) and, every few ms, look for
 * peers whose side channel ended. */
void ri_progress_locked(ri_group* g);
/* Lock held: post receive slot of peer's QP. */
int ri_post_recv(ri_group* g, int peer, int slot);

/* rma_ib_ops.c */
ncclResult_t rma_ib_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx);
ncclResult_t rma_ib_destroy_context(void* ctx);
ncclResult_t rma_ib_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh);
ncclResult_t rma_ib_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                               int fd, uint64_t flags, void** mh);
ncclResult_t rma_ib_dereg(void* coll, void* mh);
ncclResult_t rma_ib_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                         uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t rma_ib_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                bool strong, uint32_t opt, void** req);
ncclResult_t rma_ib_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                         uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t rma_ib_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req);
ncclResult_t rma_ib_test(void* coll, void* request, int* done);
ncclResult_t rma_ib_progress(void* ctx);
ncclResult_t rma_ib_last_error(void* ctx, bool* has_error);
/* Lock held: a receive completion of peer's QP carrying a signal record. */
void ri_apply_signal(ri_group* g, int peer, const ri_sig* s, uint32_t len);
/* Lock held: fail every request still waiting on peer. */
void ri_fail_waiting(ri_group* g, int peer, ncclResult_t why);
/* Lock held: unlink and free q. */
void ri_req_free(ri_group* g, ri_req* q);

#endif
