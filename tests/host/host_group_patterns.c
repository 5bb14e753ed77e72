/* Groups that only complete when every operation of the group progresses at once:
 *  - outside groups, both peers send first (a message the FIFO holds);
 *  - both peers send first in a group, with messages many times larger than the FIFO;
 *  - all-to-all in one group on 4 ranks with a different size for every pair (and self);
 *  - 1000 small operations in one group (AllReduces and sends/receives mixed);
 *  - nested groups, and an empty group;
 *  - one thread driving two communicators (ncclCommInitAll) in one group.
 * NCCL_BUFFSIZE is small so that every FIFO wraps many times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm_check.h"
#include "testutil.h"

static uint32_t val(int from, int to, size_t i) {
  return (uint32_t)(from * 1000003u) ^ (uint32_t)(to * 7919u) ^ (uint32_t)(i * 2654435761u);
}

static void both_send_first(ncclComm_t comm, int rank, int n) {
  const size_t count = 300000; /* 1.2 MB against a 64 KiB FIFO */
  int peer = rank ^ 1;
  if (peer >= n) return;
  uint32_t* s = malloc(count * 4);
  uint32_t* r = malloc(count * 4);
  for (size_t i = 0; i < count; i++) s[i] = val(rank, peer, i);
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclSend(s, count, ncclUint32, peer, comm, NULL));
  EXPECT_OK(ncclRecv(r, count, ncclUint32, peer, comm, NULL));
  EXPECT_OK(ncclGroupEnd());
  for (size_t i = 0; i < count; i++) EXPECT(r[i] == val(peer, rank, i));
  free(s);
  free(r);
}

/* Outside any group, both peers send before they receive (small enough for the FIFO, as in
 * NCCL): the first send sets up the pair's FIFOs both ways, so neither waits for the other. */
static void send_then_recv_ungrouped(ncclComm_t comm, int rank, int n) {
  int peer = rank ^ 1;
  if (peer >= n) return;
  for (int round = 0; round < 3; round++) {
    uint32_t s[64], r[64];
    for (int i = 0; i < 64; i++) s[i] = val(rank, peer, (size_t)(i + round));
    EXPECT_OK(ncclSend(s, 64, ncclUint32, peer, comm, NULL));
    EXPECT_OK(ncclRecv(r, 64, ncclUint32, peer, comm, NULL));
    for (int i = 0; i < 64; i++) EXPECT(r[i] == val(peer, rank, (size_t)(i + round)));
  }
}

static size_t pair_count(int from, int to) { return (size_t)(1 + from * 37 + to * 20011); }

static void alltoallv(ncclComm_t comm, int rank, int n) {
  uint32_t** s = calloc((size_t)n, sizeof *s);
  uint32_t** r = calloc((size_t)n, sizeof *r);
  EXPECT_OK(ncclGroupStart());
  for (int p = 0; p < n; p++) {
    size_t cs = pair_count(rank, p), cr = pair_count(p, rank);
    s[p] = malloc(cs * 4);
    r[p] = malloc(cr * 4);
    for (size_t i = 0; i < cs; i++) s[p][i] = val(rank, p, i);
    EXPECT_OK(ncclSend(s[p], cs, ncclUint32, p, comm, NULL));
    EXPECT_OK(ncclRecv(r[p], cr, ncclUint32, p, comm, NULL));
  }
  EXPECT_OK(ncclGroupEnd());
  for (int p = 0; p < n; p++) {
    for (size_t i = 0; i < pair_count(p, rank); i++) EXPECT(r[p][i] == val(p, rank, i));
    free(s[p]);
    free(r[p]);
  }
  free(s);
  free(r);
}

static void thousand_ops(ncclComm_t comm, int rank, int n) {
  enum { OPS = 1000 };
  int32_t* buf = malloc(OPS * 16 * sizeof *buf);
  int32_t* out = malloc(OPS * 16 * sizeof *out);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  EXPECT_OK(ncclGroupStart());
  for (int k = 0; k < OPS; k++) {
    int32_t* b = buf + k * 16;
    size_t c = (size_t)(k % 16) + 1;
    for (size_t i = 0; i < c; i++) b[i] = rank + k + (int)i;
    if (k % 3 == 0) {
      EXPECT_OK(ncclSend(b, c, ncclInt32, next, comm, NULL));
      EXPECT_OK(ncclRecv(out + k * 16, c, ncclInt32, prev, comm, NULL));
    } else {
      EXPECT_OK(ncclAllReduce(b, out + k * 16, c, ncclInt32, ncclSum, comm, NULL));
    }
  }
  EXPECT_OK(ncclGroupEnd());
  for (int k = 0; k < OPS; k++) {
    size_t c = (size_t)(k % 16) + 1;
    for (size_t i = 0; i < c; i++) {
      int32_t want = k % 3 == 0 ? prev + k + (int)i : n * (k + (int)i) + n * (n - 1) / 2;
      EXPECT_EQ_INT(out[k * 16 + (int)i], want);
    }
  }
  free(buf);
  free(out);
}

static void nested(ncclComm_t comm, int rank, int n) {
  int32_t a = rank + 1, b = 0;
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupEnd()); /* empty inner group: nothing runs yet */
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(&a, &b, 1, ncclInt32, ncclSum, comm, NULL));
  EXPECT_OK(ncclGroupEnd());
  EXPECT_EQ_INT(b, 0); /* still queued: only the outermost End launches */
  EXPECT_OK(ncclGroupEnd());
  EXPECT_EQ_INT(b, n * (n + 1) / 2);
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupEnd());
}

static int rank_main(int rank, int n, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, n, *id, rank));
  send_then_recv_ungrouped(comm, rank, n);
  both_send_first(comm, rank, n);
  alltoallv(comm, rank, n);
  thousand_ops(comm, rank, n);
  nested(comm, rank, n);
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

/* One process, one thread, two ranks: both communicators progress inside one group. Destroy
 * gives back every thread (channel workers, proxies, socket helpers) and fd. */
static void one_thread_two_comms(void) {
  int fds0 = test_count_fds(), threads0 = test_count_threads();
  ncclComm_t comms[2];
  EXPECT_OK(ncclCommInitAll(comms, 2, NULL));
  enum { C = 100000 };
  int32_t* s[2];
  int32_t* r[2];
  for (int k = 0; k < 2; k++) {
    s[k] = malloc(C * sizeof(int32_t));
    r[k] = malloc(C * sizeof(int32_t));
    for (int i = 0; i < C; i++) s[k][i] = i * (k + 1);
  }
  EXPECT_OK(ncclGroupStart());
  for (int k = 0; k < 2; k++)
    EXPECT_OK(ncclAllReduce(s[k], r[k], C, ncclInt32, ncclSum, comms[k], NULL));
  EXPECT_OK(ncclGroupEnd());
  EXPECT_OK(ncclGroupStart()); /* and p2p both ways between them */
  EXPECT_OK(ncclSend(s[0], C, ncclInt32, 1, comms[0], NULL));
  EXPECT_OK(ncclRecv(s[1], C, ncclInt32, 0, comms[1], NULL));
  EXPECT_OK(ncclGroupEnd());
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < C; i++) EXPECT(r[k][i] == 3 * i);
  for (int i = 0; i < C; i++) EXPECT(s[1][i] == i);
  for (int k = 0; k < 2; k++) {
    EXPECT_OK(ncclCommDestroy(comms[k]));
    free(s[k]);
    free(r[k]);
  }
  EXPECT_EQ_INT(test_settle_threads(threads0), threads0);
  EXPECT_EQ_INT(test_count_fds(), fds0);
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) setenv("NCCL_SHM_DISABLE", strcmp(argv[2], "net") == 0 ? "1" : "0", 1);
  setenv("NCCL_BUFFSIZE", "65536", 1);
  int rc = test_fork_ranks(n, rank_main, NULL, 120);
  if (rc) return rc;
  one_thread_two_comms();
  return shm_orphan_segments() ? 1 : 0;
}
