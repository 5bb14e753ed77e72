/* One broken plugin through the loader: `skip` expects the built-in Socket to serve after
 * exactly one WARN that names the file; `load` expects the plugin itself to be chosen (its
 * defect shows only when used). */
#include <stdlib.h>
#include <string.h>

#include "plugin/net.h"
#include "testutil.h"
#include "util/log.h"

int main(int argc, char** argv) {
  test_require_weft_lib();
  EXPECT(argc == 3);
  const char* path = argv[1];
  int want_skip = !strcmp(argv[2], "skip");
  setenv("NCCL_NET_PLUGIN", path, 1);
  unsetenv("NCCL_NET");
  weft_net* net = NULL;
  EXPECT_OK(net_open_for_comm(NULL, 0x1234, -1, &net));
  EXPECT(net != NULL && net->ndev >= 1);
  char last[1024];
  weft_log_last_error(last, sizeof last);
  if (want_skip) {
    EXPECT(strcmp(net->name, "Socket") == 0);
    EXPECT(strcmp(net->path, path) != 0);
    const char* base = strrchr(path, '/');
    EXPECT(strstr(last, base ? base + 1 : path) != NULL);
  } else {
    EXPECT(strcmp(net->path, path) == 0);
  }
  net_close_for_comm(net);
  /* A second communicator: a skipped library is not retried, no second WARN. */
  char before[1024];
  weft_log_last_error(before, sizeof before);
  EXPECT_OK(net_open_for_comm(NULL, 0x5678, -1, &net));
  char after[1024];
  weft_log_last_error(after, sizeof after);
  if (want_skip) EXPECT(strcmp(before, after) == 0 && strcmp(net->name, "Socket") == 0);
  net_close_for_comm(net);
  return 0;
}
