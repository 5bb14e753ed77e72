/* The data path: isend, irecv, iflush, test and the closes of connected comms. A send is one
 * tagged message to the receiver's comm id carrying the NCCL tag; a receive of n slots is n
 * tagged receives, one per slot tag, posted in call order. Operations the provider refuses for
 * now (-FI_EAGAIN, a full queue) wait in the comm's post queue, so isend/irecv return a request
 * whenever the window has room and never block; test() reads the completion queue, posts what
 * waits and runs the liveness check. */
#include <stdlib.h>
#include <string.h>

#include "net_ofi.h"

static ncclResult_t mh_check(ofi_comm* c, void* mhandle, const void* data, size_t size,
                             const char* fn, void** desc) {
  ofi_mr_handle* h = mhandle;
  *desc = NULL;
  if (h == NULL) {
    if (size > 0 && (c->nic->mr_mode & FI_MR_LOCAL)) {
      OFI_WARN("NET/OFI: %s: a %zu-byte buffer without a memory handle (%s needs registered "
               "buffers)",
               fn, size, net_ofi_provider());
      return ncclInternalError;
    }
    return ncclSuccess;
  }
  if (h->magic != OFI_MR_MAGIC || h->nic != c->nic) {
    OFI_WARN("NET/OFI: %s: invalid memory handle %p", fn, mhandle);
    return ncclInternalError;
  }
  const ofi_mr_entry* e = h->entry;
  if (e && size > 0 &&
      ((uintptr_t)data < e->base || (uintptr_t)data + size > e->base + e->len)) {
    OFI_WARN("NET/OFI: %s: %zu bytes at %p lie outside their registration (%zu bytes at %p)", fn,
             size, data, e->len, (void*)e->base);
    return ncclInternalError;
  }
  if (e == NULL && size > 0 && (c->nic->mr_mode & FI_MR_LOCAL)) {
    OFI_WARN("NET/OFI: %s: the memory handle of %zu bytes at %p has no registration", fn, size,
             data);
    return ncclInternalError;
  }
  *desc = ofi_mr_desc(h);
  return ncclSuccess;
}

ncclResult_t net_ofi_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                           void* phandle, void** request) {
  ofi_comm* c = net_ofi_comm_check(send_comm, OFI_SEND, "isend");
  if (c == NULL || request == NULL) return ncclInternalError;
  void* desc;
  ncclResult_t res = mh_check(c, mhandle, data, size, "isend", &desc);
  if (res != ncclSuccess) return res;
  ofi_nic* nic = c->nic;
  pthread_mutex_lock(&nic->lock);
  res = c->error;
  if (res == ncclSuccess) res = net_ofi_progress(nic);
  ofi_req* r = NULL;
  if (res == ncclSuccess) r = net_ofi_req_get(c, OFI_SEND, 1);
  if (r) {
    ofi_op* op = &r->op[0];
    op->kind = OFI_OP_SEND;
    op->buf = data;
    op->len = size;
    op->desc = desc;
    op->addr = c->peer;
    op->tag = ofi_tag(nic, OFI_KIND_DATA, c->peer_id, (uint32_t)tag);
    op->phandle = c->prof ? phandle : NULL;
    r->sizes[0] = size > INT_MAX ? INT_MAX : (int)size;
    net_ofi_op_queue(c, op);
    res = net_ofi_post_queued(c);
    if (res != ncclSuccess) {
      net_ofi_req_put(r);
      r = NULL;
    }
  }
  pthread_mutex_unlock(&nic->lock);
  if (res == ncclSuccess) *request = r;
  return res;
}

ncclResult_t net_ofi_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                           void** mhandles, void** phandles, void** request) {
  ofi_comm* c = net_ofi_comm_check(recv_comm, OFI_RECV, "irecv");
  if (c == NULL || request == NULL) return ncclInternalError;
  if (n < 1 || n > OFI_MAX_RECVS || data == NULL || sizes == NULL) {
    OFI_WARN("NET/OFI: irecv: %d receives (1 to %d) with data %p and sizes %p", n, OFI_MAX_RECVS,
             (void*)data, (void*)sizes);
    return ncclInternalError;
  }
  void* desc[OFI_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    ncclResult_t res =
        mh_check(c, mhandles ? mhandles[i] : NULL, data[i], sizes[i], "irecv", &desc[i]);
    if (res != ncclSuccess) return res;
  }
  ofi_nic* nic = c->nic;
  pthread_mutex_lock(&nic->lock);
  ncclResult_t res = c->error;
  if (res == ncclSuccess) res = net_ofi_progress(nic);
  ofi_req* r = NULL;
  if (res == ncclSuccess) r = net_ofi_req_get(c, OFI_RECV, n);
  if (r) {
    for (int i = 0; i < n; i++) {
      ofi_op* op = &r->op[i];
      op->kind = OFI_OP_RECV;
      op->buf = data[i];
      op->len = sizes[i];
      op->desc = desc[i];
      op->addr = FI_ADDR_UNSPEC;
      /* Without tags every slot takes any tag of this connection, in order. */
      op->tag = ofi_tag(nic, OFI_KIND_DATA, c->id, tags ? (uint32_t)tags[i] : 0);
      op->ignore = tags ? 0 : 0xffffffffull;
      op->phandle = c->prof && phandles ? phandles[i] : NULL;
      net_ofi_op_queue(c, op);
    }
    res = net_ofi_post_queued(c);
    if (res != ncclSuccess) {
      net_ofi_req_put(r);
      r = NULL;
    }
  }
  pthread_mutex_unlock(&nic->lock);
  if (res == ncclSuccess) *request = r;
  return res;
}

/* Received data is in place when the receive completes: the providers this plugin drives copy
 * device memory themselves (FI_HMEM) or write host memory. The request completes at once. */
ncclResult_t net_ofi_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                            void** request) {
  (void)n, (void)data, (void)sizes, (void)mhandles;
  ofi_comm* c = net_ofi_comm_check(recv_comm, OFI_RECV, "iflush");
  if (c == NULL || request == NULL) return ncclInternalError;
  pthread_mutex_lock(&c->nic->lock);
  ofi_req* r = c->error == ncclSuccess ? net_ofi_req_get(c, 0, 0) : NULL;
  ncclResult_t res = c->error;
  pthread_mutex_unlock(&c->nic->lock);
  if (res == ncclSuccess) *request = r;
  return res;
}

ncclResult_t net_ofi_test(void* request, int* done, int* sizes) {
  ofi_req* r = request;
  if (r == NULL || r->magic != OFI_REQ_MAGIC || r->state != OFI_REQ_ACTIVE || done == NULL) {
    OFI_WARN("NET/OFI: test: invalid request %p", request);
    return ncclInternalError;
  }
  ofi_comm* c = r->comm;
  ofi_nic* nic = c->nic;
  pthread_mutex_lock(&nic->lock);
  ncclResult_t res = net_ofi_progress(nic);
  if (res == ncclSuccess && r->ndone < r->n) {
    net_ofi_post_queued(c);
    net_ofi_liveness(c);
  }
  *done = 0;
  if (r->ndone == r->n || r->error != ncclSuccess) {
    res = r->error;
    if (res == ncclSuccess) {
      *done = 1;
      if (sizes)
        for (int i = 0; i < r->n; i++) sizes[i] = r->sizes[i];
    }
    net_ofi_req_put(r);
  } else if (c->error != ncclSuccess || res != ncclSuccess) {
    if (res == ncclSuccess) res = c->error;
    net_ofi_req_put(r);
  }
  pthread_mutex_unlock(&nic->lock);
  return res;
}

ncclResult_t net_ofi_close_send(void* send_comm) {
  ofi_comm* c = net_ofi_comm_check(send_comm, OFI_SEND, "closeSend");
  if (c == NULL) return ncclInternalError;
  net_ofi_comm_close(c);
  return ncclSuccess;
}

ncclResult_t net_ofi_close_recv(void* recv_comm) {
  ofi_comm* c = net_ofi_comm_check(recv_comm, OFI_RECV, "closeRecv");
  if (c == NULL) return ncclInternalError;
  net_ofi_comm_close(c);
  return ncclSuccess;
}
