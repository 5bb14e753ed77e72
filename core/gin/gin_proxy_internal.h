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
  int waiting; /* staged get: not complete until its last reply is copied in (gin_stage.c) */
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

/* Staged mode (gin_stage.c). A message is a header and up to slot_bytes - GIN_STAGE_HEADER
 * bytes; each ordered pair of ranks has `slots` slots. */
#define GIN_STAGE_HEADER 128
typedef struct {
  uint64_t base, size;
} gin_window;

typedef struct {
  uint32_t slots, slot_bytes;
  char* ring;        /* [nranks][slots][slot_bytes]: what each peer sends here */
  void* ring_mh;
  char* bounce;      /* [nranks][slots][slot_bytes]: what this rank sends to each peer */
  void* bounce_mh;
  uint64_t* words;   /* [nranks] arrivals from each peer, then [nranks] credits from each */
  void* words_mh;
  uint64_t* sent;     /* [nranks] messages sent to each peer */
  uint64_t* consumed; /* [nranks] messages applied from each peer */
  void** slot_req;    /* [nranks][slots] the send out of that bounce slot, until done */
  void** pending;     /* credit returns not yet tested done */
  int npending, cap_pending;
  /* staged gets: requests peers sent here, answered after the pass that read them */
  struct gin_stage_reply* replies;
  int nreplies, cap_replies;
  int serving; /* answering replies now: a nested pass (waiting for credit) only queues */
  gin_window windows[GIN_PROXY_MAX_WINDOWS];
  int nwindows; /* atomic: entries below it are complete */
} gin_stage;

struct gin_proxy {
  gin_proxy_config cfg;
  gin_context* contexts;
  int outstanding;  /* GFDs read and not completed (proxy thread only) */
  ncclResult_t error; /* atomic */
  int stop;         /* atomic */
  int thread_started;
  gin_stage* stage; /* staged mode */
  int draining;     /* destroy: complete what is out, read no new GFD */
  pthread_t thread;
};

/* gin_proxy_exec.c: one pass over every queue (gin_proxy_progress's body). */
ncclResult_t gin_proxy_pass(gin_proxy* p, int* busy);
/* gin_stage.c */
ncclResult_t gin_stage_create(gin_proxy* p);
void gin_stage_destroy(gin_proxy* p);
/* Send what one GFD asks (put, putValue, signal, VA signal, get) through the staged path; a put
 * is complete when this returns (its source was copied out), a get once its reply is copied in
 * (slot->waiting goes back to 0). */
ncclResult_t gin_stage_issue(gin_proxy* p, int x, int peer, uint32_t index,
                             const ncclGinProxyGfd_v2_30_t* g, gin_slot* slot);
/* Apply what peers sent; return credits; test credit returns. */
ncclResult_t gin_stage_pass(gin_proxy* p, int* busy);

/* Keep the first failure, log nothing (the caller did), tell on_error. */
void gin_proxy_fail(gin_proxy* p, ncclResult_t why);

#endif
