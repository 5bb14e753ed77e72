/* Net connections through the communicator's net plugin. The receiver listens and sends the
 * handle over bootstrap; the sender connects; transport_netconn.c drives connect/accept until
 * the plugin hands back a comm. Each side then allocates its own control block + slots in
 * host memory, registers the slots with regMr (and, in device mode, pins and maps them into the
 * GPU) and gives the connection to the proxy, which moves the slots with isend/irecv (proxy/).
 * In device mode the slots may live in GPU memory instead (GPUDirect, transport_gdr.c). */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "plugin/net.h"
#include "transport/transport_internal.h"
#include "util/check.h"
#include "util/names.h"

static const ncclNet_v12_t* api_of(struct ncclComm* comm) { return comm->net->api; }

static int dev_for(struct ncclComm* comm, const tconn* c) {
  int ndev = comm->net->ndev > 0 ? comm->net->ndev : 1;
  return c->key.channel % ndev;
}

ncclResult_t net_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info) {
  c->dev = dev_for(comm, c);
  ncclResult_t res = api_of(comm)->listen(comm->net->ctx, c->dev, c->handle, &c->listen_comm);
  if (res != ncclSuccess || c->listen_comm == NULL) {
    WARN("rank %d: net %s: listen on device %d for a connection from rank %d failed (%s)",
         comm->rank, comm->net->name, c->dev, c->key.peer, weft_result_str(res));
    c->listen_comm = NULL;
    return res != ncclSuccess ? res : ncclInternalError;
  }
  memcpy(info->net_handle, c->handle, sizeof info->net_handle);
  return ncclSuccess;
}

ncclResult_t net_send_setup(struct ncclComm* comm, tconn* c, const conn_info* info) {
  c->dev = dev_for(comm, c);
  memcpy(c->handle, info->net_handle, sizeof c->handle);
  return ncclSuccess;
}

ncclResult_t net_finish(struct ncclComm* comm, tconn* c) {
  const ncclNet_v12_t* api = api_of(comm);
  size_t slots = (size_t)WEFT_NSTEPS * c->conn.step_bytes;
  /* GPUDirect (device mode, plugin and path permitting): the slots live in GPU memory and are
   * registered already; only the control block is host memory. */
  int gdr = comm->transport->device && gdr_setup(comm, c, slots);
  size_t bytes = gdr ? WEFT_FIFO_CTRL_BYTES : conn_mem_bytes(c->conn.step_bytes);
  if (posix_memalign(&c->mem, 4096, bytes) != 0) {
    c->mem = NULL;
    WARN("rank %d: out of memory for a %zu-byte net connection buffer (rank %d)", comm->rank,
         bytes, c->key.peer);
    return ncclSystemError;
  }
  memset(c->mem, 0, WEFT_FIFO_CTRL_BYTES);
  c->conn.ctrl = c->mem;
  c->conn.buff = gdr ? (char*)c->gdr_mem : (char*)c->mem + WEFT_FIFO_CTRL_BYTES;
  if (!c->conn.is_send) c->conn.flags |= WEFT_CONN_LL_TAIL;
  /* Device mode: the kernels reach the same host memory through a mapping; the proxy keeps
   * working on the host addresses (and on the GPU slots' own addresses). */
  if (comm->transport->device) {
    WEFT_CHECK(devmem_register_host(comm, c, c->mem, bytes));
    if (gdr) c->dev_buff = c->gdr_mem;
  }
  if (gdr) return ncclSuccess;
  ncclResult_t res = api->regMr(c->net_comm, c->conn.buff, slots, NCCL_PTR_HOST, &c->mhandle);
  if (res != ncclSuccess) {
    WARN("rank %d: net %s: regMr of %zu bytes for rank %d failed (%s)", comm->rank,
         comm->net->name, slots, c->key.peer, weft_result_str(res));
    c->mhandle = NULL;
    return res;
  }
  return ncclSuccess;
}

ncclResult_t net_start(struct ncclComm* comm, tconn* c) {
  weft_net_start_fn start = comm->transport->p.net_start;
  if (start == NULL) {
    WARN("rank %d: net connection to peer %d has no progress engine (internal)", comm->rank,
         c->conn.peer);
    return ncclInternalError;
  }
  return start(comm, &c->conn, c->net_comm, c->mhandle, c->gdr_flush);
}

void net_close_comms(struct ncclComm* comm, tconn* c) {
  const ncclNet_v12_t* api = api_of(comm);
  if (c->net_comm) {
    if (c->mhandle) api->deregMr(c->net_comm, c->mhandle);
    if (c->conn.is_send)
      api->closeSend(c->net_comm);
    else
      api->closeRecv(c->net_comm);
  }
  if (c->listen_comm) api->closeListen(c->listen_comm);
  c->net_comm = c->listen_comm = c->mhandle = NULL;
}

void net_close(struct ncclComm* comm, tconn* c) {
  net_close_comms(comm, c);
  gdr_free(comm, c);
  free(c->mem);
  c->mem = NULL;
}
