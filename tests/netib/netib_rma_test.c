/* net-ib's one-sided table (ncclRmaPlugin_v15) over fakeverbs, on what weft-conformance rma does
 * not reach, two forked ranks per case:
 *  - dma-buf registrations (a memfd stands in for a GPU's dma-buf, which fakeverbs maps as a
 *    driver would) carrying puts and gets: rank 0 puts seeded bytes from its dma-buf into rank
 *    1's with a signal on a host word; rank 1 waits for the signal, checks every byte against the
 *    same generator, reads rank 0's dma-buf back with iget and checks it again; and the refusals
 *    the design promises: a signal word in dma-buf memory (the target's host adds signals), GPU
 *    memory without GPUDirect RDMA;
 *  - a put's completion error (injected), surfacing on the side it hit only. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl_rma.h"
#include "netib_harness.h"

#define BOUND 30.0
#define LEN (3u << 20)

static uint64_t seed;

static uint8_t byte_at(uint64_t s, size_t i) {
  uint64_t x = s + 0x9e3779b97f4a7c15ull * (uint64_t)(i / 8 + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return (uint8_t)(x >> (8 * (i % 8)));
}

static ncclRma_v15_t* load(void) {
  void* dl = dlopen(NETIB_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", NETIB_PLUGIN_PATH, dlerror());
    exit(1);
  }
  ncclRma_v15_t* t = dlsym(dl, "ncclRmaPlugin_v15");
  NB_CHECK(t != NULL);
  return t;
}

static void exchange(int ctl, const void* mine, void* theirs, size_t len) {
  NB_CHECK(send(ctl, mine, len, MSG_NOSIGNAL) == (ssize_t)len);
  size_t got = 0;
  while (got < len) {
    ssize_t k = recv(ctl, (char*)theirs + got, len - got, 0);
    NB_CHECK(k > 0);
    got += (size_t)k;
  }
}

static void barrier(int ctl) {
  char c = 'b', d;
  exchange(ctl, &c, &d, 1);
}

static ncclResult_t wait_req(ncclRma_v15_t* t, void* coll, void* req) {
  double end = nb_now() + BOUND;
  int done = 0;
  ncclResult_t r = ncclSuccess;
  while (!done && r == ncclSuccess && nb_now() < end) r = t->test(coll, req, &done);
  return done || r != ncclSuccess ? r : ncclInProgress;
}

/* A dma-buf of LEN bytes: a memfd mapped here, registered from file offset 4096. */
static char* dmabuf(ncclRma_v15_t* t, void* coll, int* fd, void** mh) {
  *fd = memfd_create("netib-rma-dmabuf", 0);
  NB_CHECK(*fd >= 0 && ftruncate(*fd, (off_t)LEN + 8192) == 0);
  char* map = mmap(NULL, LEN + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  NB_CHECK(map != MAP_FAILED);
  NB_CHECK(t->regMrSymDmaBuf(coll, map + 4096, LEN, NCCL_PTR_CUDA, 4096, *fd, 0, mh) ==
           ncclSuccess);
  return map + 4096;
}

typedef struct {
  ncclRma_v15_t* t;
  void *ctx, *lc, *coll, *rctx;
} group;

static void group_open(group* gr, int rank, int ctl) {
  memset(gr, 0, sizeof *gr);
  gr->t = load();
  NB_CHECK(gr->t->init(&gr->ctx, 7, nb_logger) == ncclSuccess);
  char handles[2][NCCL_NET_HANDLE_MAXSIZE];
  NB_CHECK(gr->t->listen(gr->ctx, 0, handles[rank], &gr->lc) == ncclSuccess);
  exchange(ctl, handles[rank], handles[1 - rank], NCCL_NET_HANDLE_MAXSIZE);
  void* hs[2] = {handles[0], handles[1]};
  NB_CHECK(gr->t->connect(gr->ctx, hs, 2, rank, gr->lc, &gr->coll) == ncclSuccess);
  ncclRmaConfig_v15_t cfg = {.nContexts = 1};
  NB_CHECK(gr->t->createContext(gr->coll, &cfg, &gr->rctx) == ncclSuccess);
}

static void group_close(group* gr) {
  NB_CHECK(gr->t->destroyContext(gr->rctx) == ncclSuccess);
  NB_CHECK(gr->t->closeColl(gr->coll) == ncclSuccess);
  NB_CHECK(gr->t->closeListen(gr->lc) == ncclSuccess);
  NB_CHECK(gr->t->finalize(gr->ctx) == ncclSuccess);
}

static int dmabuf_side(int rank, int ctl) {
  group gr;
  group_open(&gr, rank, ctl);
  ncclRma_v15_t* t = gr.t;
  void *coll = gr.coll, *rctx = gr.rctx;

  int fd;
  void *dmh, *smh, *hmh;
  char* buf = dmabuf(t, coll, &fd, &dmh);
  uint64_t* sig = aligned_alloc(4096, 4096);
  char* host = malloc(LEN);
  NB_CHECK(sig && host);
  memset(sig, 0, 4096);
  NB_CHECK(t->regMrSym(coll, sig, 4096, NCCL_PTR_HOST, 0, &smh) == ncclSuccess);
  NB_CHECK(t->regMrSym(coll, host, LEN, NCCL_PTR_HOST, 0, &hmh) == ncclSuccess);

  /* Refusals: a signal word in dma-buf memory; GPU memory without GPUDirect (WEFT_IB_GDR=0). */
  void* req = NULL;
  NB_CHECK(t->iputSignal(rctx, 0, 0, NULL, 0, 0, NULL, (uint32_t)(1 - rank), 0, dmh, 1,
                         NCCL_GIN_SIGNAL_OP_INC, true, 0, &req) == ncclInvalidUsage);
  NB_CHECK(nb_log_has("must be host memory"));
  void* gmh = NULL;
  NB_CHECK(t->regMrSym(coll, host, 4096, NCCL_PTR_CUDA, 0, &gmh) == ncclInvalidUsage);
  NB_CHECK(nb_log_has("cannot register GPU memory"));

  if (rank == 0) {
    for (size_t i = 0; i < LEN; i++) buf[i] = (char)byte_at(seed, i);
  }
  barrier(ctl);
  if (rank == 0) { /* dma-buf to dma-buf, then the signal on a host word */
    NB_CHECK(t->iputSignal(rctx, 0, 0, dmh, LEN, 0, dmh, 1, 8, smh, 1, NCCL_GIN_SIGNAL_OP_INC,
                           true, 0, &req) == ncclSuccess);
    NB_CHECK(wait_req(t, coll, req) == ncclSuccess);
  } else {
    double end = nb_now() + BOUND;
    while (__atomic_load_n(&sig[1], __ATOMIC_ACQUIRE) == 0 && nb_now() < end) {
    }
    NB_CHECK(__atomic_load_n(&sig[1], __ATOMIC_ACQUIRE) == 1);
    for (size_t i = 0; i < LEN; i++)
      if ((uint8_t)buf[i] != byte_at(seed, i)) {
        fprintf(stderr, "rank 1: byte %zu of the put into the dma-buf is %u, expected %u\n", i,
                (uint8_t)buf[i], byte_at(seed, i));
        exit(1);
      }
    /* And back: rank 0's dma-buf read into host memory. */
    NB_CHECK(t->iget(rctx, 0, 0, dmh, LEN, 0, hmh, 0, 0, &req) == ncclSuccess);
    NB_CHECK(wait_req(t, coll, req) == ncclSuccess);
    NB_CHECK(memcmp(host, buf, LEN) == 0);
    printf("rank 1: %u bytes dma-buf to dma-buf with a host signal, and back by iget, match\n",
           LEN);
    fflush(stdout);
  }
  barrier(ctl);
  NB_CHECK(t->deregMrSym(coll, hmh) == ncclSuccess);
  NB_CHECK(t->deregMrSym(coll, smh) == ncclSuccess);
  NB_CHECK(t->deregMrSym(coll, dmh) == ncclSuccess);
  group_close(&gr);
  return 0;
}

/* Rank 0's first work request completes with a remote access error (FAKEVERBS_WC_ERROR): the
 * put's test fails with ncclRemoteError, queryLastError says so, and a later put to that rank is
 * refused at once; rank 1 is untouched and closes normally. */
static int wc_error_side(int rank, int ctl) {
  group gr;
  group_open(&gr, rank, ctl);
  ncclRma_v15_t* t = gr.t;
  char* buf = calloc(1, 65536);
  void* mh;
  NB_CHECK(buf && t->regMrSym(gr.coll, buf, 65536, NCCL_PTR_HOST, 0, &mh) == ncclSuccess);
  barrier(ctl);
  if (rank == 0) {
    void* req = NULL;
    NB_CHECK(t->iput(gr.rctx, 0, 0, mh, 4096, 0, mh, 1, 0, &req) == ncclSuccess);
    NB_CHECK(wait_req(t, gr.coll, req) == ncclRemoteError);
    NB_CHECK(nb_log_has("a put to rank 1 failed: remote access error"));
    bool has = false;
    NB_CHECK(t->queryLastError(gr.rctx, &has) == ncclSuccess && has);
    NB_CHECK(t->iput(gr.rctx, 0, 0, mh, 4096, 0, mh, 1, 0, &req) == ncclRemoteError);
  }
  barrier(ctl);
  if (rank == 1) {
    bool has = true;
    NB_CHECK(t->queryLastError(gr.rctx, &has) == ncclSuccess && !has);
  }
  NB_CHECK(t->deregMrSym(gr.coll, mh) == ncclSuccess);
  group_close(&gr);
  free(buf);
  return 0;
}

typedef int (*side_fn)(int rank, int ctl);

static int rank0(nb_plugin* p, int ctl, void* arg) {
  (void)p;
  return (*(side_fn*)arg)(0, ctl);
}

static int rank1(nb_plugin* p, int ctl, void* arg) {
  (void)p;
  return (*(side_fn*)arg)(1, ctl);
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    side_fn fn;
    const char* env0; /* rank 0's fault */
  } cases[] = {
      {"dmabuf_puts_and_gets_land_and_refusals_hold", dmabuf_side, NULL},
      {"completion_error_fails_the_put_and_is_reported", wc_error_side,
       "FAKEVERBS_WC_ERROR=REM_ACCESS_ERR@1"},
  };
  for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++) {
    if (strcmp(argv[1], cases[i].name) != 0) continue;
    const char* s = getenv("WEFT_TEST_SEED");
    seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    printf("seed %llu (WEFT_TEST_SEED)\n", (unsigned long long)seed);
    fflush(stdout);
    const char* env1[] = {"WEFT_IB_GDR=0", NULL};
    const char* env0[] = {"WEFT_IB_GDR=0", cases[i].env0, NULL};
    side_fn fn = cases[i].fn;
    return nb_run_pair(env1, rank1, env0, rank0, &fn, 60) == 0 ? 0 : 1;
  }
  fprintf(stderr, "usage: %s CASE\n", argv[0]);
  return 2;
}
