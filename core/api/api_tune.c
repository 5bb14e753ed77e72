/* weftCommTuneQuery, a weft extension: what a communicator would run for one collective call,
 * asked exactly as the plan asks (tune_op: same bytes, masks, rule, model and tuner), without
 * running or logging it. weft-perf --explain prints it next to the measured time.
 *
 *   ncclResult_t weftCommTuneQuery(ncclComm_t comm, int coll, size_t count,
 *                                  ncclDataType_t datatype, int* algorithm, int* protocol,
 *                                  int* nChannels, float* predictedUs);
 *
 * coll is an ncclFunc_t (ncclFuncBroadcast .. ncclFuncAllReduce); count as passed to that call
 * (AllGather: sendcount, ReduceScatter: recvcount); the operator is taken as ncclSum (it
 * matters only to CollNet, which runs what the plugin reduces). Outputs may be NULL when not
 * wanted and are written only on success. ncclInvalidUsage on a communicator without a data path. */
#include "api/api.h"
#include "comm/comm.h"
#include "plan/plan.h"
#include "tune/tune.h"
#include "util/check.h"
#include "util/names.h"

WEFT_EXT ncclResult_t weftCommTuneQuery(ncclComm_t comm, int coll, size_t count,
                                        ncclDataType_t datatype, int* algorithm, int* protocol,
                                        int* nChannels, float* predictedUs);

WEFT_EXT ncclResult_t weftCommTuneQuery(ncclComm_t comm, int coll, size_t count,
                                        ncclDataType_t datatype, int* algorithm, int* protocol,
                                        int* nChannels, float* predictedUs) {
  const char* fn = "weftCommTuneQuery";
  WEFT_CHECK(comm_check(comm, fn));
  WEFT_CHECK(arg_check_datatype(fn, datatype));
  if (coll < ncclFuncBroadcast || coll > ncclFuncAllReduce) {
    WARN("%s: coll %d is not a collective (ncclFuncBroadcast %d .. ncclFuncAllReduce %d)", fn,
         coll, (int)ncclFuncBroadcast, (int)ncclFuncAllReduce);
    return ncclInvalidArgument;
  }
  if (comm->tune == NULL || comm->plan == NULL) {
    WARN("%s: comm %p has no data path to tune", fn, (void*)comm);
    return ncclInvalidUsage;
  }
  size_t nbytes = count * dtype_size(datatype);
  if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) nbytes *= (size_t)comm->nranks;
  weft_tune_ask ask = comm->plan->ask;
  ask.quiet = 1;
  ask.dtype = (int)datatype; /* CollNet: answered as for ncclSum */
  ask.redop = (int)ncclSum;
  weft_op_choice d;
  WEFT_CHECK(tune_op(comm->tune, &ask, coll, nbytes, &d));
  if (algorithm) *algorithm = d.algo;
  if (protocol) *protocol = d.proto;
  if (nChannels) *nChannels = d.nchannels;
  if (predictedUs) *predictedUs = (float)d.predicted_us;
  return ncclSuccess;
}
