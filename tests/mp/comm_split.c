/* ncclCommSplit on 8 ranks: halves, reversed keys, equal keys (ties by parent rank) and
 * NCCL_SPLIT_NOCOLOR. Membership and order are checked by an allgather of parent ranks inside
 * each child against a reference computed here. */
#include <stdlib.h>

#include "testutil.h"
#include "weft.h"

/* Expected child rank of `rank` among ranks with the same color, ordered by (key, rank). */
static int expect_rank(int nranks, int rank, const int* color, const int* key, int* size) {
  int pos = 0, n = 0;
  for (int r = 0; r < nranks; r++) {
    if (color[r] != color[rank]) continue;
    n++;
    if (key[r] < key[rank] || (key[r] == key[rank] && r < rank)) pos++;
  }
  *size = n;
  return pos;
}

static void check_split(ncclComm_t parent, int rank, int nranks, const int* color,
                        const int* key) {
  ncclComm_t child = (ncclComm_t)(uintptr_t)1;
  EXPECT_OK(ncclCommSplit(parent, color[rank], key[rank], &child, NULL));
  if (color[rank] == NCCL_SPLIT_NOCOLOR) {
    EXPECT(child == NULL);
    return;
  }
  EXPECT(child != NULL);
  int size, want = expect_rank(nranks, rank, color, key, &size);
  int n, r;
  EXPECT_OK(ncclCommCount(child, &n));
  EXPECT_OK(ncclCommUserRank(child, &r));
  EXPECT_EQ_INT(n, size);
  EXPECT_EQ_INT(r, want);
  int* parents = calloc((size_t)n, sizeof *parents);
  EXPECT_OK(weftCommOobAllGather(child, &rank, parents, sizeof rank));
  for (int i = 0; i < n; i++) {
    int p = parents[i], sz;
    EXPECT(color[p] == color[rank]);
    EXPECT_EQ_INT(expect_rank(nranks, p, color, key, &sz), i);
  }
  free(parents);
  EXPECT_OK(ncclCommDestroy(child));
}

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  enum { N = 8 };
  int color[N] = {0}, key[N] = {0};
  EXPECT(nranks == N);
  for (int r = 0; r < N; r++) color[r] = r / (nranks / 2), key[r] = r; /* halves */
  check_split(comm, rank, nranks, color, key);
  for (int r = 0; r < N; r++) color[r] = r % 2, key[r] = -r; /* reversed keys */
  check_split(comm, rank, nranks, color, key);
  uint64_t s = test_seed(99);
  for (int r = 0; r < N; r++) /* random colors, equal keys: order by parent rank */
    color[r] = (int)(test_rand(&s) % 3), key[r] = 5;
  color[0] = NCCL_SPLIT_NOCOLOR;
  check_split(comm, rank, nranks, color, key);
  for (int r = 0; r < N; r++) color[r] = 0, key[r] = (int)(test_rand(&s) % 4);
  check_split(comm, rank, nranks, color, key); /* everyone, shuffled */
  EXPECT_OK(ncclCommDestroy(comm));
  return 0;
}

int main(void) {
  test_require_weft_lib();
  return test_fork_ranks(8, rank_main, NULL, 90);
}
