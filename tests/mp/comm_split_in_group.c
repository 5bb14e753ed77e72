/* ncclCommSplit inside a group (issue 50), as NCCL allows: the splits run at the outermost
 * ncclGroupEnd and *newcomm is NULL until then. Two splits per rank in one group (halves with
 * reversed keys; odd/even with rank 0 NCCL_SPLIT_NOCOLOR) beside an AllReduce on the parent;
 * each child's membership and order are checked by an allgather of parent ranks against a
 * reference computed here, and an AllReduce on each child against sums computed here on random
 * data.
 *
 * Usage: comm_split_in_group NRANKS procs|onethread
 *   procs: one forked process per rank; onethread: one process and one thread drive every rank
 *   (group inits, then the splits of every parent in one group, then the children's
 *   collectives in one group). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

#define COUNT 3001
#define NSPLIT 2
#define MAXR 8

/* color and key of parent rank r in split s */
static void split_of(int s, int r, int nranks, int* color, int* key) {
  if (s == 0) {
    *color = r < (nranks + 1) / 2 ? 0 : 1;
    *key = -r;
  } else {
    *color = r == 0 ? NCCL_SPLIT_NOCOLOR : r % 2;
    *key = 7;
  }
}

/* Expected child rank and size of parent rank `rank` in split s. */
static int expect_rank(int s, int nranks, int rank, int* size) {
  int c, k, pos = 0, n = 0;
  split_of(s, rank, nranks, &c, &k);
  for (int r = 0; r < nranks; r++) {
    int cr, kr;
    split_of(s, r, nranks, &cr, &kr);
    if (cr != c) continue;
    n++;
    if (kr < k || (kr == k && r < rank)) pos++;
  }
  *size = n;
  return pos;
}

static float value(uint64_t seed, int rank, int i) {
  uint64_t s = seed ^ ((uint64_t)(rank + 1) << 32) ^ (uint64_t)i * 0x9e3779b97f4a7c15ull;
  return (float)(test_rand(&s) % 1000);
}

/* Membership and order of child (split s of parent rank `rank`). */
static void check_members(ncclComm_t child, int s, int rank, int nranks) {
  int c, k;
  split_of(s, rank, nranks, &c, &k);
  if (c == NCCL_SPLIT_NOCOLOR) {
    EXPECT(child == NULL);
    return;
  }
  EXPECT(child != NULL);
  int size, want = expect_rank(s, nranks, rank, &size), n, r;
  EXPECT_OK(ncclCommCount(child, &n));
  EXPECT_OK(ncclCommUserRank(child, &r));
  EXPECT_EQ_INT(n, size);
  EXPECT_EQ_INT(r, want);
}

static void check_parents(ncclComm_t child, int s, int rank, int nranks) {
  int n;
  EXPECT_OK(ncclCommCount(child, &n));
  int parents[MAXR];
  EXPECT_OK(weftCommOobAllGather(child, &rank, parents, sizeof rank));
  for (int i = 0; i < n; i++) {
    int sz;
    EXPECT_EQ_INT(expect_rank(s, nranks, parents[i], &sz), i);
  }
}

/* The sums of an AllReduce over the members of rank's child in split s. */
static void check_sums(const float* r, uint64_t seed, int s, int rank, int nranks) {
  int c, k;
  split_of(s, rank, nranks, &c, &k);
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int p = 0; p < nranks; p++) {
      int cp, kp;
      split_of(s, p, nranks, &cp, &kp);
      if (cp == c) want += value(seed, p, i);
    }
    if (r[i] != want) {
      fprintf(stderr, "rank %d split %d: r[%d] = %g, expected %g\n", rank, s, i, r[i], want);
      exit(1);
    }
  }
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  uint64_t seed = test_seed(5050);
  ncclComm_t parent;
  EXPECT_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  float *s = malloc(COUNT * sizeof *s), *r = malloc(COUNT * sizeof *r);
  for (int i = 0; i < COUNT; i++) s[i] = value(seed, rank, i);
  ncclComm_t child[NSPLIT] = {(ncclComm_t)(uintptr_t)1, (ncclComm_t)(uintptr_t)1};
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, parent, NULL));
  for (int k = 0; k < NSPLIT; k++) {
    int c, key;
    split_of(k, rank, nranks, &c, &key);
    EXPECT_OK(ncclCommSplit(parent, c, key, &child[k], NULL));
    EXPECT(child[k] == NULL); /* set at ncclGroupEnd */
  }
  EXPECT_OK(ncclGroupEnd());
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int p = 0; p < nranks; p++) want += value(seed, p, i);
    EXPECT(r[i] == want);
  }
  for (int k = 0; k < NSPLIT; k++) {
    check_members(child[k], k, rank, nranks);
    if (!child[k]) continue;
    check_parents(child[k], k, rank, nranks);
    EXPECT_OK(ncclAllReduce(s, r, COUNT, ncclFloat, ncclSum, child[k], NULL));
    check_sums(r, seed, k, rank, nranks);
    EXPECT_OK(ncclCommDestroy(child[k]));
  }
  EXPECT_OK(ncclCommDestroy(parent));
  free(s);
  free(r);
  return 0;
}

/* One thread drives every rank: NCCL's use of split in a group. */
static int one_thread(int nranks) {
  uint64_t seed = test_seed(5050);
  ncclUniqueId id;
  ncclComm_t parent[MAXR], child[NSPLIT][MAXR];
  float *s[MAXR], *r[MAXR];
  EXPECT_OK(ncclGetUniqueId(&id));
  EXPECT_OK(ncclGroupStart());
  for (int k = 0; k < nranks; k++) EXPECT_OK(ncclCommInitRank(&parent[k], nranks, id, k));
  EXPECT_OK(ncclGroupEnd());
  EXPECT_OK(ncclGroupStart());
  for (int k = 0; k < NSPLIT; k++)
    for (int p = 0; p < nranks; p++) {
      int c, key;
      split_of(k, p, nranks, &c, &key);
      EXPECT_OK(ncclCommSplit(parent[p], c, key, &child[k][p], NULL));
    }
  EXPECT_OK(ncclGroupEnd());
  for (int p = 0; p < nranks; p++) {
    s[p] = malloc(COUNT * sizeof *s[p]);
    r[p] = malloc(COUNT * sizeof *r[p]);
    for (int i = 0; i < COUNT; i++) s[p][i] = value(seed, p, i);
  }
  for (int k = 0; k < NSPLIT; k++) {
    for (int p = 0; p < nranks; p++) check_members(child[k][p], k, p, nranks);
    EXPECT_OK(ncclGroupStart());
    for (int p = 0; p < nranks; p++)
      if (child[k][p])
        EXPECT_OK(ncclAllReduce(s[p], r[p], COUNT, ncclFloat, ncclSum, child[k][p], NULL));
    EXPECT_OK(ncclGroupEnd());
    for (int p = 0; p < nranks; p++) {
      if (!child[k][p]) continue;
      check_sums(r[p], seed, k, p, nranks);
      EXPECT_OK(ncclCommDestroy(child[k][p]));
    }
  }
  for (int p = 0; p < nranks; p++) {
    EXPECT_OK(ncclCommDestroy(parent[p]));
    free(s[p]);
    free(r[p]);
  }
  return 0;
}

int main(int argc, char** argv) {
  test_require_weft_lib();
  int n = argc > 1 ? atoi(argv[1]) : 2;
  EXPECT(n >= 2 && n <= MAXR);
  fprintf(stderr, "seed %llu\n", (unsigned long long)test_seed(5050));
  if (argc > 2 && strcmp(argv[2], "onethread") == 0) return one_thread(n);
  return test_fork_ranks(n, rank_main, NULL, 90);
}
