/* Field case: a plugin that takes a send only once the receiver has posted for it (libfabric's
 * rxm behaves so): each irecv sends the sender one credit byte back over the connection; isend
 * returns a NULL request ("retry") while the sender holds no credit. */
#include <pthread.h>
#include <sys/socket.h>

#include "refnet.h"

#define MAX_COMMS 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  void* comm;
  int credits;
} table[MAX_COMMS];

static int* credits_of(void* comm) {
  for (int i = 0; i < MAX_COMMS; i++)
    if (table[i].comm == comm) return &table[i].credits;
  for (int i = 0; i < MAX_COMMS; i++)
    if (table[i].comm == NULL) {
      table[i].comm = comm;
      table[i].credits = 0;
      return &table[i].credits;
    }
  return NULL;
}

static ncclResult_t pp_irecv(void* comm, int n, void** data, size_t* sizes, int* tags,
                             void** mhandles, void** phandles, void** request) {
  ncclResult_t r = refnet_irecv(comm, n, data, sizes, tags, mhandles, phandles, request);
  if (r == ncclSuccess && *request) {
    char credit = 1;
    (void)send(refnet_comm_fd(comm), &credit, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  return r;
}

static ncclResult_t pp_isend(void* comm, void* data, size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  pthread_mutex_lock(&lock);
  int* c = credits_of(comm);
  char buf[64];
  ssize_t got = recv(refnet_comm_fd(comm), buf, sizeof buf, MSG_DONTWAIT);
  if (c && got > 0) *c += (int)got;
  int ok = c && *c > 0;
  if (ok) --*c;
  pthread_mutex_unlock(&lock);
  if (!ok) {
    *request = NULL;
    return c ? ncclSuccess : ncclInternalError;
  }
  ncclResult_t r = refnet_isend(comm, data, size, tag, mhandle, phandle, request);
  if (r != ncclSuccess || *request == NULL) { /* give the credit back */
    pthread_mutex_lock(&lock);
    ++*c;
    pthread_mutex_unlock(&lock);
  }
  return r;
}

static ncclResult_t pp_close_send(void* comm) {
  /* Unread credits would make close() reset the connection under data still in flight. */
  char buf[256];
  while (recv(refnet_comm_fd(comm), buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_COMMS; i++)
    if (table[i].comm == comm) table[i].comm = NULL;
  pthread_mutex_unlock(&lock);
  return refnet_closeSend(comm);
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "field-peerprogress", .isend = pp_isend, .irecv = pp_irecv,
                  .closeSend = pp_close_send)
