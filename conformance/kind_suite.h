/* The GIN and RMA suites' shared state and the group harness (kind_group.c): a test forks the
 * other ranks of a group, each rank inits the plugin, listens, exchanges handles with the others
 * over socketpairs (the out-of-band channel NCCL's bootstrap would be), connects, creates a
 * context and runs the test's body; rank 0 (the test process) collects every rank's verdict and
 * reports the first failure with the rank that saw it. GIN control calls go through the GIN
 * view; data calls (the puts of GIN v11..v13, every RMA version) through the RMA view. */
#ifndef WEFT_CONF_KIND_SUITE_H
#define WEFT_CONF_KIND_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/kind_shim.h"
#include "runner.h"

#define KG_MAX_RANKS 8

enum { KIND_SUITE_GIN = 0, KIND_SUITE_RMA = 1, KIND_SUITE_COLLNET = 2 };

typedef struct {
  int suite;         /* KIND_SUITE_* */
  int is_gin;        /* the gin suite */
  const char* path;
  void* dl;
  char load_error[512];
  unsigned exported; /* bit v: the kind's table vN is exported */
  int gin13_as_rma;  /* rma suite: only ncclGinPlugin_v13 is there (NCCL reads it as RMA v13) */
  int version;       /* under test */
  int requested_version;
  const void* raw[WEFT_GIN_MAX_VERSION + 1];
  weft_gin_view gin; /* adapted in each test process */
  ncclRma_v15_t rma;
  weft_collnet_view collnet;
  const ncclRma_v15_t* data; /* NULL: no host data path (GIN v14/v15) */
  char adapt_error[256];
  double wait_s; /* bound on one request */
  const void* net_raw; /* the library's own newest ncclNetPlugin_vN, NCCL inits it first */
  int net_version;
} kind_ctx;

extern kind_ctx* kc; /* the suite's context */

/* One rank of a group. */
typedef struct {
  int rank, nranks;
  void* ictx;   /* init's */
  void* coll;   /* connect's */
  void* ctx;    /* createContext's */
  int ncontexts;
  ncclNetDeviceHandle_v11_t* dev_handle; /* GIN */
  int oob[KG_MAX_RANKS]; /* rank 0: one socket per other rank; others: [0] to rank 0 */
  uint64_t seed;
} kg_rank;

/* The body of a test, run on every rank after the group is up (kg_open). */
typedef conf_result (*kg_body)(kg_rank* r, void* arg);

/* Fork ranks 1..nranks-1, run body on every rank with a connected group whose context has
 * ncontexts contexts (0: no group at all, the body opens what it needs), and merge the verdicts.
 * The seed of the random data is printed with a failure. */
conf_result kg_run(int nranks, int ncontexts, kg_body body, void* arg);

/* When the library also exports a net plugin, init it once in this process, as NCCL has by the
 * time it opens the GIN/RMA tables of the same library (some plugins depend on it). A net that
 * fails is INCONCLUSIVE: it is not what the suite tests. */
conf_result kind_co_net_init(void);

/* Steps of kg_run for bodies that open themselves (ncontexts 0). Each names the failing call. */
conf_result kg_init(kg_rank* r);
conf_result kg_connect(kg_rank* r);
conf_result kg_context(kg_rank* r, int ncontexts);
conf_result kg_close(kg_rank* r); /* destroyContext, closeColl, finalize (what is open) */

/* Out-of-band: every rank's len bytes into all (rank order); a barrier is an allgather of 1. */
conf_result kg_allgather(kg_rank* r, const void* mine, void* all, size_t len);
conf_result kg_barrier(kg_rank* r);

/* Collective registration of host memory through the kind's regMrSym. */
conf_result kg_reg(kg_rank* r, void* buf, size_t len, uint64_t flags, void** mh);
conf_result kg_dereg(kg_rank* r, void* mh);
/* nt_alloc'ed memory, registered (free with kg_dereg and nt_free). */
conf_result kg_buffer(kg_rank* r, size_t len, uint64_t flags, void** buf, void** mh);
/* test() until done, at most kc->wait_s; FAIL naming what (the call that posted it). */
conf_result kg_wait(kg_rank* r, void* req, const char* what);

/* A non-zero rank leaves the group at once, without closing anything (a PASS for its part). */
void kg_leave(kg_rank* r) __attribute__((noreturn));
/* "ncclRemoteError", … */
const char* kind_result_name(ncclResult_t r);


/* The test tables: loading (every suite), GIN and RMA (kind_tests.c), CollNet
 * (collnet_tests.c). */
extern const conf_test kind_load_tests[];
extern const int kind_load_tests_count;
extern const conf_test collnet_tests[];
extern const int collnet_tests_count;
extern const conf_test kind_tests[];
extern const int kind_tests_count;
extern const conf_test kind_gin_tests[]; /* the gin suite's only */
extern const int kind_gin_tests_count;

int kind_suite_main(int suite, int argc, char** argv);

#endif
