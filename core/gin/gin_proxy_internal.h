/* The proxy's state (gin_proxy.h), shared by gin_proxy.c (life cycle, thread) and
 * gin_proxy_exec.c (reading, executing and completing GFDs). */
#ifndef WEFT_GIN_PROXY_INTERNAL_H
#define WEFT_GIN_PROXY_INTERNAL_H

#include <pthread.h>

#include "gin/gin_proxy.h"

/* One slot of a queue once read: what completing it needs. */
typedef struct {
  uint32_t op;
  uint32_t counter_id;
  int done;
  void* request;
} gin_slot;

/* Per context. */
typedef struct {
  uint32_t* seen;      /* [nranks]: GFDs read from each queue */
  uint32_t* completed; /* [nranks]: the proxy's copy of cis */
  gin_slot* slots;     /* [nranks][queue_size] */
  uint64_t* inlines;   /* [nranks][queue_size]: putValue's sources, registered */
  void* inlines_mh;
} gin_context;

struct gin_proxy {
  gin_proxy_config cfg;
  gin_context* contexts;
  int outstanding;  /* GFDs read and not completed (proxy thread only) */
  ncclResult_t error; /* atomic */
  int stop;         /* atomic */
  int thread_started;
  int draining;     /* destroy: complete what is out, read no new GFD */
  pthread_t thread;
};

/* gin_proxy_exec.c: one pass over every queue (gin_proxy_progress's body). */
ncclResult_t gin_proxy_pass(gin_proxy* p, int* busy);
/* Keep the first failure, log nothing (the caller did), tell on_error. */
void gin_proxy_fail(gin_proxy* p, ncclResult_t why);

#endif
