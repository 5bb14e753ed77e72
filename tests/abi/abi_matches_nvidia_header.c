/* abi_matches_nvidia_header: every size, offset, enum value, macro value and initializer field
 * that weft's nccl.h shares with NVIDIA's (abi_table.h) must be equal. Prints each mismatch.
 * Built at test time by scripts/check_layout_wheel.cmake against the header of NVIDIA's wheel;
 * a comparison of two headers, it loads no library. */
#include <stdio.h>
#include <string.h>

#include "abi_table.h"

int main(void) {
  static struct abi_entry nv[ABI_TABLE_MAX], weft[ABI_TABLE_MAX];
  int n_nv = abi_table_nvidia(nv);
  int n_weft = abi_table_weft(weft);
  if (n_nv != n_weft || n_nv > ABI_TABLE_MAX) {
    fprintf(stderr, "table sizes differ: NVIDIA %d, weft %d (max %d)\n", n_nv, n_weft,
            ABI_TABLE_MAX);
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < n_nv; i++) {
    if (strcmp(nv[i].name, weft[i].name) != 0) {
      fprintf(stderr, "entry %d: %s against %s\n", i, nv[i].name, weft[i].name);
      return 1;
    }
    if (nv[i].value != weft[i].value) {
      fprintf(stderr, "mismatch: %s: NVIDIA %lld, weft %lld\n", nv[i].name, nv[i].value,
              weft[i].value);
      bad++;
    }
  }
  printf("%d facts compared with %s, %d mismatches\n", n_nv, WEFT_NVIDIA_NCCL_H, bad);
  return bad ? 1 : 0;
}
