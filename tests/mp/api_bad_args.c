/* Every entry point with bad arguments returns a clear error (and never crashes): NULL
 * pointers, nranks <= 0, rank out of range, bad config magic/size, ncclCommInitAll with ndev 0,
 * a handle that is not a communicator, bad datatype/op/root; valid calls to features not built
 * yet return ncclInvalidUsage, never a silent success. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft.h"

int main(void) {
  test_require_weft_lib();
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  int v;

  EXPECT_RES(ncclGetVersion(NULL), ncclInvalidArgument);
  EXPECT_OK(ncclGetVersion(&v));
  EXPECT_EQ_INT(v, NCCL_VERSION_CODE);
  EXPECT_RES(ncclGetUniqueId(NULL), ncclInvalidArgument);
  EXPECT_OK(ncclGetUniqueId(&id));

  EXPECT_RES(ncclCommInitRank(NULL, 1, id, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitRank(&comm, -3, id, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitRank(&comm, 2, id, -1), ncclInvalidArgument);
  ncclUniqueId zero;
  memset(&zero, 0, sizeof zero);
  EXPECT_RES(ncclCommInitRank(&comm, 1, zero, 0), ncclInvalidArgument);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 0xdeadbeef;
  EXPECT_RES(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ncclInvalidArgument);
  cfg = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  cfg.size = 3;
  EXPECT_RES(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ncclInvalidArgument);
  EXPECT(comm == NULL); /* outputs are written only on success */
  EXPECT_RES(ncclCommInitAll(NULL, 2, NULL), ncclInvalidArgument);
  ncclComm_t comms[2];
  EXPECT_RES(ncclCommInitAll(comms, 0, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitAll(comms, -1, NULL), ncclInvalidArgument);
  int dup[2] = {0, 0};
  EXPECT_RES(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage);
  EXPECT_RES(ncclCommInitRankScalable(&comm, 1, 0, 0, &id, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommInitRankScalable(&comm, 1, 0, 1, NULL, NULL), ncclInvalidArgument);

  /* A 1-rank communicator to exercise the per-comm checks. */
  EXPECT_OK(ncclCommInitRank(&comm, 1, id, 0));
  EXPECT(comm != NULL);
  EXPECT_RES(ncclCommCount(comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommUserRank(comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommCuDevice(comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommGetAsyncError(comm, NULL), ncclInvalidArgument);
  ncclResult_t async;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT_EQ_INT(async, ncclSuccess);

  /* Something that is not a communicator. */
  char fake[256];
  memset(fake, 0x5a, sizeof fake);
  ncclComm_t bogus = (ncclComm_t)(void*)fake;
  EXPECT_RES(ncclCommCount(bogus, &v), ncclInvalidArgument);
  EXPECT_RES(ncclCommCount(NULL, &v), ncclInvalidArgument);
  EXPECT_RES(ncclCommDestroy(bogus), ncclInvalidArgument);
  EXPECT_RES(ncclCommAbort(bogus), ncclInvalidArgument);
  EXPECT_RES(ncclCommFinalize(NULL), ncclInvalidArgument);
  EXPECT_OK(ncclCommDestroy(NULL)); /* as NCCL: destroying NULL is a no-op */

  ncclComm_t child;
  EXPECT_RES(ncclCommSplit(comm, -5, 0, &child, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommSplit(comm, 0, 0, NULL, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommSplit(bogus, 0, 0, &child, NULL), ncclInvalidArgument);
  cfg = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  cfg.magic = 1;
  EXPECT_RES(ncclCommSplit(comm, 0, 0, &child, &cfg), ncclInvalidArgument);

  /* Collectives and p2p: bad arguments fail; valid ones on a 1-rank comm leave the data as is
   * (a sum over one rank is the input). */
  float buf[4] = {1, 2, 3, 4};
  EXPECT_RES(ncclAllReduce(buf, buf, 4, (ncclDataType_t)12, ncclSum, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(buf, buf, 4, ncclFloat, (ncclRedOp_t)5, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(buf, buf, 4, ncclFloat, (ncclRedOp_t)-1, comm, NULL),
             ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(NULL, buf, 4, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, bogus, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL));
  EXPECT(buf[0] == 1 && buf[3] == 4);
  EXPECT_RES(ncclReduce(buf, buf, 4, ncclFloat, ncclSum, 1, comm, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclReduce(buf, buf, 4, ncclFloat, ncclSum, 0, comm, NULL));
  EXPECT_RES(ncclBroadcast(buf, buf, 4, ncclFloat, -1, comm, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclBroadcast(buf, buf, 4, ncclFloat, 0, comm, NULL));
  EXPECT_RES(ncclBcast(buf, 4, ncclFloat, 3, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclAllGather(buf, NULL, 4, ncclFloat, comm, NULL), ncclInvalidArgument);
  EXPECT_OK(ncclAllGather(buf, buf, 4, ncclFloat, comm, NULL));
  EXPECT_RES(ncclReduceScatter(buf, buf, 4, ncclFloat, (ncclRedOp_t)77, comm, NULL),
             ncclInvalidArgument);
  EXPECT_OK(ncclReduceScatter(buf, buf, 4, ncclFloat, ncclMax, comm, NULL));
  EXPECT(buf[1] == 2 && buf[2] == 3);
  EXPECT_RES(ncclAlltoAll(buf, buf, 4, (ncclDataType_t)-2, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclGather(buf, buf, 4, ncclFloat, 5, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclScatter(buf, buf, 4, ncclFloat, 5, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclSend(buf, 4, ncclFloat, 1, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclRecv(buf, 4, ncclFloat, -1, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclSend(NULL, 4, ncclFloat, 0, comm, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclSend(buf, 4, ncclFloat, 0, comm, NULL), ncclInvalidUsage);

  /* Groups: an unmatched End is invalid usage; nesting is fine. */
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclGroupEnd());
  EXPECT_OK(ncclGroupEnd());
  EXPECT_RES(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_RES(ncclGroupSimulateEnd(NULL), ncclInvalidArgument);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  sim.magic = 0;
  EXPECT_RES(ncclGroupSimulateEnd(&sim), ncclInvalidArgument);

  /* Memory, registration, user ops. */
  void* p = NULL;
  EXPECT_RES(ncclMemAlloc(NULL, 16), ncclInvalidArgument);
  EXPECT_RES(ncclMemAlloc(&p, 0), ncclInvalidArgument);
  EXPECT_RES(ncclMemAlloc(&p, 16), ncclInvalidUsage); /* no GPU here */
  EXPECT_OK(ncclMemFree(NULL));
  EXPECT_RES(ncclCommRegister(comm, NULL, 16, &p), ncclInvalidArgument);
  EXPECT_RES(ncclCommRegister(comm, buf, 16, NULL), ncclInvalidArgument);
  EXPECT_RES(ncclCommDeregister(comm, NULL), ncclInvalidArgument);
  /* Sizes past the end of the address space (issue 18, finding 8). */
  EXPECT_RES(ncclCommRegister(comm, buf, SIZE_MAX, &p), ncclInvalidArgument);
  EXPECT_RES(ncclCommRegister(comm, buf, SIZE_MAX / 2 + 1, &p), ncclInvalidArgument);
  ncclWindow_t win;
  EXPECT_RES(ncclCommWindowRegister(comm, buf, SIZE_MAX, &win, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommWindowRegister(comm, buf, 16, &win, 7), ncclInvalidArgument);
  EXPECT_RES(ncclCommWindowRegister(comm, buf, 16, NULL, 0), ncclInvalidArgument);
  EXPECT_RES(ncclCommWindowDeregister(comm, NULL), ncclInvalidArgument);
  ncclRedOp_t op;
  float scalar = 2;
  EXPECT_RES(ncclRedOpCreatePreMulSum(NULL, &scalar, ncclFloat, ncclScalarHostImmediate, comm),
             ncclInvalidArgument);
  EXPECT_RES(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, (ncclScalarResidence_t)9, comm),
             ncclInvalidArgument);
  EXPECT_RES(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
  EXPECT_RES(ncclRedOpDestroy((ncclRedOp_t)42, comm), ncclInvalidArgument);

  /* weft extensions. */
  EXPECT_RES(weftMemAllocTyped(NULL, 8, weftMemHost), ncclInvalidArgument);
  EXPECT_RES(weftMemAllocTyped(&p, 8, (weftMemType_t)7), ncclInvalidArgument);
  EXPECT_OK(weftMemAllocTyped(&p, 8, weftMemHost));
  EXPECT(((uintptr_t)p & 4095) == 0);
  EXPECT_OK(weftMemFreeTyped(p, weftMemHost));
  EXPECT_RES(weftCommOobAllGather(comm, buf, buf, 0), ncclInvalidArgument);
  EXPECT_RES(weftCommOobAllGather(comm, NULL, buf, 4), ncclInvalidArgument);
  EXPECT(weftVersionCode() > 0 && weftVersionString()[0] != '\0');

  /* The device-API teams answer from the communicator. */
  ncclTeam_t world = ncclTeamWorld(comm);
  EXPECT(world.nRanks == 1 && world.rank == 0 && world.stride == 1);
  EXPECT_EQ_INT(ncclTeamRankToWorld(comm, world, 0), 0);
  EXPECT_EQ_INT(ncclTeamRankToWorld(comm, world, 1), -1);

  /* Finalize: then only destroy. */
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_RES(ncclCommFinalize(comm), ncclInvalidUsage);
  EXPECT_RES(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL), ncclInvalidUsage);
  EXPECT_RES(ncclCommSplit(comm, 0, 0, &child, NULL), ncclInvalidUsage);
  EXPECT_OK(ncclCommDestroy(comm));

  EXPECT(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  EXPECT(strstr(ncclGetErrorString(ncclRemoteError), "remote process") != NULL);
  EXPECT(strstr(ncclGetErrorString((ncclResult_t)99), "unknown") != NULL);
  return 0;
}
