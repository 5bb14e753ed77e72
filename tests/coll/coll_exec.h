/* Running cases of the correctness matrix on a communicator, through the public API only.
 *
 * One case runs in four steps, so that many cases can share one ncclGroupStart/End:
 *   coll_run_prepare  allocate buffers (guard zones around each, start misaligned by 0..3
 *                     elements), fill inputs, poison outputs, create the PreMulSum or custom op
 *   coll_run_issue    the API call(s); SendRecv is its own ncclGroupStart/Send/Recv/GroupEnd
 *   coll_run_verify   outputs against the reference; inputs of out-of-place calls unchanged;
 *                     buffers the API leaves alone (Reduce/Gather recvbuff off the root, Scatter
 *                     sendbuff off the root) unchanged; guard zones intact. Prints what differs
 *                     and a line to rerun the case alone.
 *   coll_run_release  destroy the op, free the buffers.
 *
 * Layouts: in-place AllReduce/Reduce/Broadcast use one buffer (sendbuff == recvbuff); in-place
 * AllGather passes sendbuff = recvbuff + rank*count, in-place ReduceScatter recvbuff = sendbuff
 * + rank*recvcount. Per case (from its key) the runner also varies: NULL recvbuff off the root
 * (Reduce, Gather) and NULL sendbuff off the root (Scatter); ncclBcast instead of ncclBroadcast
 * for in-place broadcasts; Recv before Send inside the SendRecv group. */
#ifndef COLL_EXEC_H
#define COLL_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coll_case.h"
#include "coll_ref.h"

/* Results of prepare/issue. */
#define COLL_OK 0
#define COLL_NA 1    /* the library answered "not available yet" */
#define COLL_FATAL 2 /* any other error: the communicator cannot be trusted any more */

typedef struct {
  uint64_t magic;
  ncclDataType_t type;
} coll_custom_user;

typedef struct {
  coll_case c;
  char name[COLL_CASE_STR];
  uint64_t seed, key;
  int rank;
  size_t count, esz;
  coll_gen gen;
  unsigned char *alloc_a, *alloc_b; /* raw allocations, guard zones included */
  size_t raw_a, raw_b;              /* their sizes */
  size_t la, lb;                    /* usable elements of a and b */
  int has_a, has_b;                 /* 0: the call gets NULL there */
  unsigned char *a, *b;             /* usable regions */
  void* sendbuff;
  void* recvbuff;
  size_t nsend; /* elements of this rank's input at sendbuff */
  int variant; /* bits from the key, see above */
  ncclRedOp_t op;
  int op_made;
  coll_custom_user user;
  int misuse0; /* coll_custom_misuse() before the call */
} coll_run;

/* The binary's path, for rerun lines. */
void coll_set_argv0(const char* argv0);

/* comm may be NULL (the self-test's simulation): no operator is created then. */
int coll_run_prepare(coll_run* r, const coll_case* c, uint64_t seed, int rank, ncclComm_t comm);
int coll_run_issue(coll_run* r, ncclComm_t comm);
/* Number of problems found (0: the case passed on this rank). */
size_t coll_run_verify(coll_run* r);
void coll_run_release(coll_run* r, ncclComm_t comm);

/* Prints "rerun: WEFT_TEST_SEED=… WEFT_COLL_CASE=… <binary>" for a case. */
void coll_print_rerun(FILE* f, uint64_t seed, const coll_case* c);

/* 1 when a call's result means "not available yet" (ncclInvalidUsage and that phrase in
 * ncclGetLastError). */
int coll_not_available(ncclResult_t res, ncclComm_t comm);

/* Custom ops whose callback saw a wrong user pointer or datatype, since start (per process). */
int coll_custom_misuse(void);

/* What the library offers, probed on a 1-rank communicator in a child process. */
enum {
  FEAT_PREMULSUM = COLL_NUM, /* features 0..COLL_NUM-1 are the collectives */
  FEAT_CUSTOM,
  FEAT_NUM
};
#define FEAT_OK 0
#define FEAT_NA 1
#define FEAT_ERROR 2
extern const char* const coll_feature_name[FEAT_NUM];
/* Fills status[FEAT_NUM]; returns 0, or -1 when the probe itself could not run. */
int coll_probe(int status[FEAT_NUM], char* na_message, size_t na_len);

/* Sets NCCL_ALGO, NCCL_PROTO, NCCL_SHM_DISABLE (and NCCL_SOCKET_IFNAME=lo unless set) for the
 * configuration of c, in this process: call before forking the ranks. */
void coll_apply_config_env(const coll_case* c);

/* Runs cases[0..n) (all of one configuration) on freshly forked ranks with one communicator.
 * status[i] gets COLL_STATUS_* bits from every rank. Returns 0 when every rank exited 0. */
#define COLL_STATUS_RUN 1
#define COLL_STATUS_FAIL 2
#define COLL_STATUS_NA 4
int coll_run_config(const coll_case* cases, int n, uint64_t seed, int* status, int timeout_s,
                    int verbose);

#endif
