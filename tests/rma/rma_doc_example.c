/* Runs docs/one-sided.md's example (extracted by rma.cmake, its main renamed) after checking
 * that weft's library is the one loaded. */
#include "testutil.h"

int one_sided_example_main(void);

int main(void) {
  test_require_weft_lib();
  return one_sided_example_main();
}
