/* The example plugin's one-sided tables (RMA v15, whose calls also make RMA v14/v13 and GIN
 * v13): host memory over TCP, for the host to drive (a GIN "proxy" device, no GPU code).
 *
 * A group (connect) is a full mesh of TCP sockets, one per pair of ranks (the lower rank
 * connects). Registration is collective: every rank registers in the same order, so the n-th
 * registration has id n everywhere and a put names its target by (id, offset). A put is one
 * message (header, then data) sent before the call returns; each group runs a receiver thread
 * that applies every peer's messages in order — data, then the signal — so a signal is seen only
 * after its own data and every earlier put to that rank (every signal is "strong"). Gets and
 * flushes are answered by a responder thread, so the receiver never blocks on a send (two
 * receivers each sending a large reply to the other would otherwise wait forever).
 *
 * A vendor replaces the sockets with RDMA: a put is an RDMA write, a signal an RDMA atomic (or
 * write with immediate) ordered after it by the NIC, a get an RDMA read, a flush a read that
 * completes after the earlier writes. The rules stay: registration ids agree across ranks, a
 * signal never overtakes its data, a peer that leaves fails what waits on it (never a hang). */
#ifndef EXAMPLE_RMA_H
#define EXAMPLE_RMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <nccl_rma.h>

#include "example_net.h"

enum { EXR_PUT = 1, EXR_GET, EXR_GET_REPLY, EXR_FLUSH, EXR_FLUSH_ACK, EXR_BYE };

/* On the wire, before a put's data or a get reply's data. Host byte order: a group spans one
 * architecture. */
struct exr_msg {
  uint32_t op;
  uint32_t mr; /* registration id; UINT32_MAX: a signal without data */
  uint64_t off, size;
  uint64_t token; /* get/flush: the request the reply completes */
  uint32_t has_signal, sig_mr;
  uint64_t sig_off, sig_add; /* the signal word gets += sig_add */
  uint32_t refused, pad;     /* get reply: the target could not serve it */
};

struct exr_mr {
  uint32_t id;
  char* base;
  size_t size;
};

struct exr_req {
  struct exr_req* next; /* the group's requests not yet tested done */
  uint64_t token;
  int peer;
  int done; /* atomic */
  ncclResult_t error;
  char* dst; /* get: where the reply lands */
  size_t size;
};

struct exr_reply {
  struct exr_reply* next;
  int peer;
  struct exr_msg msg;
  const char* data; /* get reply: the registered bytes sent back */
};

struct exr_group {
  uint64_t magic;
  int nranks, rank;
  int* fds;                   /* per rank; -1 for this rank */
  int* dead;                  /* per rank, under lock: left (BYE or a broken socket) */
  pthread_mutex_t* send_lock; /* per rank: one message at a time on a socket */
  pthread_mutex_t lock;       /* mrs, reqs, replies, dead */
  pthread_cond_t cond;        /* replies queued, or stop */
  struct exr_mr** mrs;        /* by id; NULL once deregistered */
  uint32_t nmrs, cap_mrs;
  struct exr_req* reqs;
  struct exr_reply* replies;
  uint64_t next_token;
  int error, stop; /* atomic */
  int threads;
  pthread_t receiver, responder;
};

/* example_rma_group.c: init, devices, listen, connect, the two threads, close. */
ncclResult_t exr_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger);
ncclResult_t exr_finalize(void* ctx);
ncclResult_t exr_devices(int* ndev);
ncclResult_t exr_get_properties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t exr_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t exr_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                         void** coll);
ncclResult_t exr_close_coll(void* coll);
ncclResult_t exr_close_listen(void* listen_comm);
struct exr_group* exr_group_check(void* p, const char* fn);
/* Send all of buf (send != 0) or receive all of it, waiting at most EXR_IO_MS between bytes. */
ncclResult_t exr_io(int fd, void* buf, size_t len, int send);
/* Mark peer gone and fail what waits on it; why != NULL: unexpected (a WARN, queryLastError). */
void exr_peer_gone(struct exr_group* g, int peer, const char* why);

/* example_rma_ops.c: contexts, registration, put/get/flush, test, and the receiver's side. */
ncclResult_t exr_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx);
ncclResult_t exr_destroy_context(void* ctx);
ncclResult_t exr_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh);
ncclResult_t exr_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                            int fd, uint64_t flags, void** mh);
ncclResult_t exr_dereg(void* coll, void* mh);
ncclResult_t exr_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                      uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t exr_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                             uint64_t dst_off, void* dst_mh, uint32_t rank, uint64_t sig_off,
                             void* sig_mh, uint64_t value, uint32_t op, bool strong, uint32_t opt,
                             void** req);
ncclResult_t exr_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                      uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t exr_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req);
ncclResult_t exr_test(void* coll, void* request, int* done);
ncclResult_t exr_progress(void* ctx);
ncclResult_t exr_last_error(void* ctx, bool* has_error);
/* The receiver: one message from peer, header read; an error when its socket broke. */
ncclResult_t exr_apply(struct exr_group* g, int peer, const struct exr_msg* m);
/* Fail every request still waiting on peer (-1: on anyone). Caller holds g->lock. */
void exr_fail_waiting(struct exr_group* g, int peer, ncclResult_t why);

#endif
