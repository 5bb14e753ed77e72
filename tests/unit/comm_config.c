/* ncclConfig_t resolution: size/magic checks, fields a caller's version predates are reset,
 * ranges, defaults, and environment overrides. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "testutil.h"

int main(void) {
  test_require_weft_lib();
  unsetenv("NCCL_COMM_BLOCKING");
  unsetenv("NCCL_MAX_CTAS");
  unsetenv("NCCL_NET");
  ncclConfig_t out;

  /* NULL: every default. */
  EXPECT_OK(comm_config_resolve(NULL, "t", &out));
  EXPECT_EQ_INT(out.blocking, 1);
  EXPECT_EQ_INT(out.minCTAs, 1);
  EXPECT_EQ_INT(out.maxCTAs, 64);
  EXPECT_EQ_INT(out.cgaClusterSize, 4);
  EXPECT(out.netName == NULL);

  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.blocking = 0;
  c.maxCTAs = 7;
  c.netName = "Socket";
  c.commName = "mycomm";
  EXPECT_OK(comm_config_resolve(&c, "t", &out));
  EXPECT_EQ_INT(out.blocking, 0);
  EXPECT_EQ_INT(out.maxCTAs, 7);
  EXPECT(strcmp(out.netName, "Socket") == 0);
  EXPECT(strcmp(out.commName, "mycomm") == 0);

  /* The environment wins over the config. */
  setenv("NCCL_COMM_BLOCKING", "1", 1);
  setenv("NCCL_MAX_CTAS", "9", 1);
  EXPECT_OK(comm_config_resolve(&c, "t", &out));
  EXPECT_EQ_INT(out.blocking, 1);
  EXPECT_EQ_INT(out.maxCTAs, 9);
  unsetenv("NCCL_COMM_BLOCKING");
  unsetenv("NCCL_MAX_CTAS");

  /* A caller built against NCCL 2.13 never set blocking: it is reset to the default. */
  ncclConfig_t old = c;
  old.version = NCCL_VERSION(2, 13, 0);
  EXPECT_OK(comm_config_resolve(&old, "t", &out));
  EXPECT_EQ_INT(out.blocking, 1);
  EXPECT_EQ_INT(out.maxCTAs, 64); /* and maxCTAs arrived in 2.17 */

  /* A short struct (an older header's size) is read only up to its size. */
  ncclConfig_t shortc = NCCL_CONFIG_INITIALIZER;
  shortc.size = offsetof(ncclConfig_t, splitShare);
  shortc.splitShare = 1; /* beyond size: must be ignored */
  EXPECT_OK(comm_config_resolve(&shortc, "t", &out));
  EXPECT_EQ_INT(out.splitShare, 0);

  /* NCCL 2.29-2.30's fields: read from a 96-byte struct, overridden by NCCL's variables. */
  ncclConfig_t c30 = NCCL_CONFIG_INITIALIZER;
  c30.graphUsageMode = 2;
  c30.numRmaCtx = 3;
  c30.graphStreamOrdering = 1;
  EXPECT_OK(comm_config_resolve(&c30, "t", &out));
  EXPECT_EQ_INT(out.graphUsageMode, 2);
  EXPECT_EQ_INT(out.numRmaCtx, 3);
  EXPECT_EQ_INT(out.maxP2pPeers, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ_INT(out.graphStreamOrdering, 1);
  setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", 1);
  setenv("NCCL_NUM_RMA_CTX", "5", 1);
  setenv("NCCL_P2P_MAX_PEERS", "6", 1);
  setenv("NCCL_GRAPH_STREAM_ORDERING", "0", 1);
  EXPECT_OK(comm_config_resolve(&c30, "t", &out));
  EXPECT_EQ_INT(out.graphUsageMode, 0);
  EXPECT_EQ_INT(out.numRmaCtx, 5);
  EXPECT_EQ_INT(out.maxP2pPeers, 6);
  EXPECT_EQ_INT(out.graphStreamOrdering, 0);
  setenv("NCCL_GRAPH_MIXING_SUPPORT", "1", 1);
  setenv("NCCL_P2P_MAX_PEERS", "0", 1); /* not > 0: the config's stands */
  EXPECT_OK(comm_config_resolve(&c30, "t", &out));
  EXPECT_EQ_INT(out.graphUsageMode, 2);
  EXPECT_EQ_INT(out.maxP2pPeers, NCCL_CONFIG_UNDEF_INT);
  unsetenv("NCCL_GRAPH_MIXING_SUPPORT");
  unsetenv("NCCL_NUM_RMA_CTX");
  unsetenv("NCCL_P2P_MAX_PEERS");
  unsetenv("NCCL_GRAPH_STREAM_ORDERING");
  ncclConfig_t c28 = c30; /* a 2.28 caller's size: the new fields are not read */
  c28.size = offsetof(ncclConfig_t, graphUsageMode);
  EXPECT_OK(comm_config_resolve(&c28, "t", &out));
  EXPECT_EQ_INT(out.graphUsageMode, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ_INT(out.numRmaCtx, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ_INT(out.graphStreamOrdering, NCCL_CONFIG_UNDEF_INT);

  /* Bad inputs. */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x1234;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.size = 4;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.blocking = 2;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.minCTAs = 8;
  bad.maxCTAs = 4;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.cgaClusterSize = 9;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.CTAPolicy = 3;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.graphUsageMode = 3;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.maxP2pPeers = -2;
  EXPECT_RES(comm_config_resolve(&bad, "t", &out), ncclInvalidArgument);
  return 0;
}
