/* One-sided operations over libfabric RMA: the ofi plugin's RMA tables (v15, v14). Host memory.
 *
 * listen opens an RDM endpoint of its own on the device's provider and domain (fi_getinfo asked
 * again for FI_RMA | FI_ATOMIC; a provider without them refuses listen, naming what it lacks),
 * with a directory: a registered array of (rank, registration slot) entries each peer writes
 * into. The handle carries the endpoint's address and the directory's address and key; connect
 * takes the endpoint over and inserts every rank's address. regMrSym registers the buffer and
 * writes its (address, key, size) into that slot of every peer's directory (fi_inject_write),
 * then waits until every peer's entry for the same registration has landed in its own: so a put
 * finds the target's address and key for the n-th registration, as on every rank.
 *
 * Data: iput is fi_writemsg with FI_DELIVERY_COMPLETE (complete once the data is at the
 * target); iget fi_readmsg. iputSignal writes the data, and once every put this group issued to
 * that rank has completed (so every signal is strong), adds to the signal word with
 * fi_inject_atomic (FI_SUM, FI_UINT64): the provider orders nothing for us, completion does. A
 * flush completes when no put to that rank is outstanding. A progress thread reads the
 * completion queue (providers with manual progress move data only when someone does, also at
 * the target), issues signals whose puts are done and completes flushes. Every libfabric call
 * is made under the group's lock. Naming: ro_* (hidden), rma_ofi_* (the table's entries). */
#ifndef WEFT_RMA_OFI_H
#define WEFT_RMA_OFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "nccl_rma.h"
#include "net_ofi.h"

#define RO_MAX_RANKS 64
#define RO_DIR_SLOTS 64 /* registrations live at once in a group */
#define RO_ADDR_MAX 72  /* endpoint address bytes a handle carries */

/* A registration as its owner announces it to the others. */
typedef struct {
  uint64_t base; /* what a remote access adds the offset to (an address, or 0) */
  uint64_t key;
  uint64_t size;
  uint64_t seq;   /* registration id + 1 */
  uint64_t check; /* of the four above: a torn entry is not taken */
} ro_entry;

typedef struct {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  uint64_t mr_mode;
  uint64_t next_key;
  ro_entry* dir; /* [RO_MAX_RANKS][RO_DIR_SLOTS] */
  struct fid_mr* dir_mr;
  uint8_t addr[OFI_ADDR_MAX];
  size_t addrlen;
} ro_ep;

typedef struct {
  uint32_t id;
  char* base;
  size_t size;
  struct fid_mr* mr;
  void* desc;
  ro_entry* remote; /* per rank */
} ro_mr;

enum { RO_PUT = 1, RO_PUT_SIGNAL, RO_GET, RO_FLUSH };

typedef struct ro_req {
  struct fi_context2 fctx; /* first: the completion's op_context */
  struct ro_req* next;     /* the group's requests not yet tested done */
  int kind, peer;
  int done;     /* atomic */
  int waiting;  /* a signal or flush the progress thread must finish */
  int in_fabric; /* a write or read not completed yet */
  ncclResult_t error;
  uint64_t sig_addr, sig_key, sig_add;
} ro_req;

typedef struct {
  uint64_t magic;
  int nranks, rank;
  ro_ep* e;
  fi_addr_t* peers;
  uint64_t* dir_base; /* per rank: its directory */
  uint64_t* dir_key;
  int* outstanding; /* per rank: puts not completed */
  ofi_ident* ident; /* per rank: to tell a peer process that ended on this host */
  int* dead;        /* per rank: it ended; what waits on it failed */
  double next_check;
  pthread_mutex_t lock;
  ro_mr** mrs; /* by id; NULL once deregistered */
  uint32_t nmrs, cap_mrs;
  ro_req* reqs;
  int error, stop; /* atomic */
  pthread_t progress;
  int thread;
} ro_group;

/* rma_ofi_group.c */
ncclResult_t rma_ofi_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t logger);
ncclResult_t rma_ofi_finalize(void* ctx);
ncclResult_t rma_ofi_devices(int* ndev);
ncclResult_t rma_ofi_get_properties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t rma_ofi_listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t rma_ofi_connect(void* ctx, void* handles[], int nranks, int rank, void* listen_comm,
                             void** coll);
ncclResult_t rma_ofi_close_coll(void* coll);
ncclResult_t rma_ofi_close_listen(void* listen_comm);
ro_group* ro_group_check(void* p, const char* fn);
/* With g->lock held: read completions and finish what waits (the progress thread's step). */
void ro_progress_locked(ro_group* g);
uint64_t ro_entry_check(const ro_entry* e);
/* Register for local and remote access (bound to the endpoint where the provider asks). */
ncclResult_t ro_mr_reg(ro_ep* e, void* base, size_t len, struct fid_mr** out);
/* What a peer's remote access to p names: its address (FI_MR_VIRT_ADDR) or 0 (offsets). */
uint64_t ro_remote_base(const ro_ep* e, const void* p);

/* rma_ofi_ops.c */
ncclResult_t rma_ofi_create_context(void* coll, ncclRmaConfig_v15_t* config, void** ctx);
ncclResult_t rma_ofi_destroy_context(void* ctx);
ncclResult_t rma_ofi_reg(void* coll, void* data, size_t size, int type, uint64_t flags, void** mh);
ncclResult_t rma_ofi_reg_dmabuf(void* coll, void* data, size_t size, int type, uint64_t offset,
                                int fd, uint64_t flags, void** mh);
ncclResult_t rma_ofi_dereg(void* coll, void* mh);
ncclResult_t rma_ofi_iput(void* ctx, int context, uint64_t src_off, void* src_mh, size_t size,
                          uint64_t dst_off, void* dst_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t rma_ofi_iput_signal(void* ctx, int context, uint64_t src_off, void* src_mh,
                                 size_t size, uint64_t dst_off, void* dst_mh, uint32_t rank,
                                 uint64_t sig_off, void* sig_mh, uint64_t value, uint32_t op,
                                 bool strong, uint32_t opt, void** req);
ncclResult_t rma_ofi_iget(void* ctx, int context, uint64_t r_off, void* r_mh, size_t size,
                          uint64_t l_off, void* l_mh, uint32_t rank, uint32_t opt, void** req);
ncclResult_t rma_ofi_iflush(void* ctx, int context, void* mh, uint32_t rank, void** req);
ncclResult_t rma_ofi_test(void* coll, void* request, int* done);
ncclResult_t rma_ofi_progress(void* ctx);
ncclResult_t rma_ofi_last_error(void* ctx, bool* has_error);
/* The waiting requests' step: issue the signals whose puts are done, complete flushes. */
void ro_finish_waiting(ro_group* g);

#endif
