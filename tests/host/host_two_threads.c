/* Two communicators of the same ranks (the second from ncclCommSplit), each driven by its own
 * thread at the same time: AllReduce, AllGather and Send/Recv loops with results checked on
 * both. The channel workers, proxies and FIFOs of the two communicators are independent. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct {
  ncclComm_t comm;
  int rank, n, salt;
} job;

static void* loop(void* arg) {
  job* j = arg;
  enum { C = 40000, ITERS = 40 };
  int32_t* s = malloc(C * sizeof *s);
  int32_t* r = malloc((size_t)C * (size_t)j->n * sizeof *r);
  for (int it = 0; it < ITERS; it++) {
    int c = 1 + (it * 977 + j->salt * 31) % C;
    for (int i = 0; i < c; i++) s[i] = j->rank * 100 + i % 97 + j->salt + it;
    EXPECT_OK(ncclAllReduce(s, r, (size_t)c, ncclInt32, ncclSum, j->comm, NULL));
    for (int i = 0; i < c; i++)
      EXPECT_EQ_INT(r[i], 100 * j->n * (j->n - 1) / 2 + j->n * (i % 97 + j->salt + it));
    EXPECT_OK(ncclAllGather(s, r, (size_t)c, ncclInt32, j->comm, NULL));
    for (int k = 0; k < j->n; k++)
      for (int i = 0; i < c; i += 101)
        EXPECT_EQ_INT(r[(size_t)k * c + i], k * 100 + i % 97 + j->salt + it);
    int next = (j->rank + 1) % j->n, prev = (j->rank + j->n - 1) % j->n;
    EXPECT_OK(ncclGroupStart());
    EXPECT_OK(ncclSend(s, (size_t)c, ncclInt32, next, j->comm, NULL));
    EXPECT_OK(ncclRecv(r, (size_t)c, ncclInt32, prev, j->comm, NULL));
    EXPECT_OK(ncclGroupEnd());
    for (int i = 0; i < c; i += 7) EXPECT_EQ_INT(r[i], prev * 100 + i % 97 + j->salt + it);
  }
  free(s);
  free(r);
  return NULL;
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t a, b;
  EXPECT_OK(ncclCommInitRank(&a, n, *id, rank));
  EXPECT_OK(ncclCommSplit(a, 7, n - rank, &b, NULL)); /* reversed order in b */
  int rb;
  EXPECT_OK(ncclCommUserRank(b, &rb));
  job ja = {a, rank, n, 1}, jb = {b, rb, n, 2};
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, loop, &jb) == 0);
  loop(&ja);
  pthread_join(t, NULL);
  EXPECT_OK(ncclCommDestroy(b));
  EXPECT_OK(ncclCommDestroy(a));
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  if (argc > 1) setenv("NCCL_SHM_DISABLE", strcmp(argv[1], "net") == 0 ? "1" : "0", 1);
  setenv("NCCL_BUFFSIZE", "131072", 1);
  return test_fork_ranks(3, rank_main, NULL, 120);
}
