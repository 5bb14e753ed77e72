/* refnet (tests/plugins/broken/refnet.*) seen as a v6 table: the entries of a v6 plugin built
 * on refnet's v11 ones (one process-wide context, int sizes, no device handles). Field plugins
 * of tests/fieldnet use it to export ncclNetPlugin_v6. */
#ifndef WEFT_TEST_FIELDNET_V6_H
#define WEFT_TEST_FIELDNET_V6_H

#include "refnet.h"

ncclResult_t fieldnet_v6_init(ncclDebugLogger_t log);
ncclResult_t fieldnet_v6_get_properties(int dev, ncclNetProperties_v6_t* props);
ncclResult_t fieldnet_v6_listen(int dev, void* handle, void** listen_comm);
ncclResult_t fieldnet_v6_connect(int dev, void* handle, void** send_comm);
ncclResult_t fieldnet_v6_accept(void* listen_comm, void** recv_comm);
ncclResult_t fieldnet_v6_reg_mr(void* comm, void* data, int size, int type, void** mhandle);
ncclResult_t fieldnet_v6_isend(void* send_comm, void* data, int size, int tag, void* mhandle,
                               void** request);
ncclResult_t fieldnet_v6_irecv(void* recv_comm, int n, void** data, int* sizes, int* tags,
                               void** mhandles, void** request);

/* The whole v6 table over refnet; later designated initializers replace entries. */
#define FIELDNET_V6_ENTRIES                                                                    \
  .init = fieldnet_v6_init, .devices = refnet_devices,                                         \
  .getProperties = fieldnet_v6_get_properties, .listen = fieldnet_v6_listen,                   \
  .connect = fieldnet_v6_connect, .accept = fieldnet_v6_accept, .regMr = fieldnet_v6_reg_mr,   \
  .regMrDmaBuf = NULL, .deregMr = refnet_deregMr, .isend = fieldnet_v6_isend,                  \
  .irecv = fieldnet_v6_irecv, .iflush = refnet_iflush, .test = refnet_test,                    \
  .closeSend = refnet_closeSend, .closeRecv = refnet_closeRecv,                                \
  .closeListen = refnet_closeListen

#endif
