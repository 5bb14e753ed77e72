/* Broken: every 7th send is reported complete but never sent (a lossy transport that does not
 * notice). The receiver of that message waits for it forever; every later message lands in
 * the wrong receive. */
#include <pthread.h>
#include <stdlib.h>

#include "refnet.h"

#define DROP_MAX 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long sends;
static struct {
  void* req;
  size_t size;
} dropped[DROP_MAX];

static ncclResult_t isend_drop7(void* comm, void* data, size_t size, int tag, void* mh, void* ph,
                                void** request) {
  pthread_mutex_lock(&lock);
  int drop = ++sends % 7 == 0;
  int slot = -1;
  for (int i = 0; drop && i < DROP_MAX && slot < 0; i++)
    if (dropped[i].req == NULL) slot = i;
  if (slot >= 0) {
    dropped[slot].req = malloc(1);
    dropped[slot].size = size;
    *request = dropped[slot].req;
  }
  pthread_mutex_unlock(&lock);
  if (slot >= 0 && *request) return ncclSuccess;
  return refnet_isend(comm, data, size, tag, mh, ph, request);
}

static ncclResult_t test_drop7(void* request, int* done, int* sizes) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < DROP_MAX; i++)
    if (dropped[i].req && dropped[i].req == request) {
      if (sizes) sizes[0] = (int)dropped[i].size;
      free(dropped[i].req);
      dropped[i].req = NULL;
      pthread_mutex_unlock(&lock);
      *done = 1;
      return ncclSuccess;
    }
  pthread_mutex_unlock(&lock);
  return refnet_test(request, done, sizes);
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-drop7", .isend = isend_drop7, .test = test_drop7)
