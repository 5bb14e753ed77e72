/* refnet as a v6 plugin (see fieldnet_v6.h). */
#include "fieldnet_v6.h"

static void* ctx; /* v6 has no per-communicator context: one, made by the first init */

ncclResult_t fieldnet_v6_init(ncclDebugLogger_t log) {
  if (ctx) return ncclSuccess;
  return refnet_init(&ctx, 0, NULL, log, NULL);
}

ncclResult_t fieldnet_v6_get_properties(int dev, ncclNetProperties_v6_t* props) {
  ncclNetProperties_v11_t p;
  ncclResult_t r = refnet_getProperties(dev, &p);
  if (r != ncclSuccess) return r;
  *props = (ncclNetProperties_v6_t){.name = p.name, .pciPath = p.pciPath, .guid = p.guid,
                                    .ptrSupport = p.ptrSupport, .speed = p.speed,
                                    .port = p.port, .latency = p.latency,
                                    .maxComms = p.maxComms, .maxRecvs = p.maxRecvs};
  return ncclSuccess;
}

ncclResult_t fieldnet_v6_listen(int dev, void* handle, void** listen_comm) {
  return refnet_listen(ctx, dev, handle, listen_comm);
}

ncclResult_t fieldnet_v6_connect(int dev, void* handle, void** send_comm) {
  return refnet_connect(ctx, dev, handle, send_comm, NULL);
}

ncclResult_t fieldnet_v6_accept(void* listen_comm, void** recv_comm) {
  return refnet_accept(listen_comm, recv_comm, NULL);
}

ncclResult_t fieldnet_v6_reg_mr(void* comm, void* data, int size, int type, void** mhandle) {
  return refnet_regMr(comm, data, (size_t)size, type, mhandle);
}

ncclResult_t fieldnet_v6_isend(void* send_comm, void* data, int size, int tag, void* mhandle,
                               void** request) {
  return refnet_isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

ncclResult_t fieldnet_v6_irecv(void* recv_comm, int n, void** data, int* sizes, int* tags,
                               void** mhandles, void** request) {
  size_t s[8];
  void* ph[8] = {NULL};
  if (n < 1 || n > 8) return ncclInvalidArgument;
  for (int i = 0; i < n; i++) s[i] = (size_t)sizes[i];
  return refnet_irecv(recv_comm, n, data, s, tags, mhandles, ph, request);
}
