/* abi_matches_nvidia_header: every size, offset, enum value, macro value and initializer field
 * that weft's nccl.h shares with NVIDIA's installed nccl.h must be equal. Prints each mismatch.
 * Built without NVIDIA's header (WEFT_NO_NVIDIA_NCCL_H), it skips. */
#include <stdio.h>
#include <string.h>

#include "abi_table.h"
#include "testutil.h"

int main(void) {
  test_require_weft_lib();
#ifdef WEFT_NO_NVIDIA_NCCL_H
  fprintf(stderr, "skip: NVIDIA's nccl.h was not found at configure time (%s)\n",
          WEFT_NO_NVIDIA_NCCL_H);
  return TEST_SKIP_RC;
#else
  static struct abi_entry nv[ABI_TABLE_MAX], weft[ABI_TABLE_MAX];
  int n_nv = abi_table_nvidia(nv);
  int n_weft = abi_table_weft(weft);
  EXPECT_EQ_INT(n_nv, n_weft);
  EXPECT(n_nv <= ABI_TABLE_MAX);

  int bad = 0;
  for (int i = 0; i < n_nv; i++) {
    EXPECT(strcmp(nv[i].name, weft[i].name) == 0);
    if (nv[i].value != weft[i].value) {
      fprintf(stderr, "mismatch: %s: NVIDIA %lld, weft %lld\n", nv[i].name, nv[i].value,
              weft[i].value);
      bad++;
    }
  }
  printf("%d facts compared with %s, %d mismatches\n", n_nv, WEFT_NVIDIA_NCCL_H, bad);
  return bad ? 1 : 0;
#endif
}
