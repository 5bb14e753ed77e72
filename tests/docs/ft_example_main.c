/* docs/fault-tolerance.md's example program (examples/fault-tolerance/ft_train.c, compiled with
 * its main renamed ft_example_main) run as a test: after the check that weft's library is the
 * one loaded, the example's own checks decide (every step's sum, the recovery calls). */
#include "testutil.h"

int ft_example_main(int argc, char** argv);

int main(int argc, char** argv) {
  test_require_weft_lib();
  return ft_example_main(argc, argv);
}
