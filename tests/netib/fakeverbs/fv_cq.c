/* fakeverbs completion queues: a ring of work completions filled by the emulated NIC and
 * drained by poll_cq. An overrun (more completions than the CQ holds) is what a real CQ does
 * with an undersized queue: the CQ turns to error (poll_cq fails from then on) and
 * IBV_EVENT_CQ_ERR is raised. Completion channels are not supported. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fv.h"

FV_EXPORT struct ibv_cq* ibv_create_cq(struct ibv_context* context, int cqe, void* cq_context,
                                       struct ibv_comp_channel* channel, int comp_vector) {
  if (!context || cqe < 1 || cqe > FV_MAX_CQE || comp_vector != 0) {
    errno = EINVAL;
    return NULL;
  }
  if (channel) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  fv_cq* c = calloc(1, sizeof *c);
  struct ibv_wc* ring = calloc((size_t)cqe, sizeof *ring);
  if (!c || !ring) {
    free(c);
    free(ring);
    errno = ENOMEM;
    return NULL;
  }
  c->cq.context = context;
  c->cq.cq_context = cq_context;
  c->cq.cqe = cqe;
  c->ctx = (fv_context*)context;
  c->ring = ring;
  c->cap = cqe;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->cq.mutex, NULL);
  pthread_cond_init(&c->cq.cond, NULL);
  return &c->cq;
}

FV_EXPORT int ibv_destroy_cq(struct ibv_cq* cq) {
  fv_cq* c = (fv_cq*)cq;
  if (__atomic_load_n(&c->nqps, __ATOMIC_ACQUIRE) != 0) return EBUSY;
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->cq.mutex);
  pthread_cond_destroy(&c->cq.cond);
  free(c->ring);
  free(c);
  return 0;
}

void fv_cq_push(fv_cq* c, const struct ibv_wc* wc) {
  int overrun = 0;
  pthread_mutex_lock(&c->lock);
  if (c->overrun) {
    pthread_mutex_unlock(&c->lock);
    return;
  }
  if (c->count == c->cap) {
    c->overrun = overrun = 1;
  } else {
    c->ring[(c->head + c->count) % c->cap] = *wc;
    c->count++;
  }
  pthread_mutex_unlock(&c->lock);
  if (overrun) {
    fv_trace("CQ %p overrun (%d entries)", (void*)c, c->cap);
    struct ibv_async_event ev;
    memset(&ev, 0, sizeof ev);
    ev.event_type = IBV_EVENT_CQ_ERR;
    ev.element.cq = &c->cq;
    fv_async_post(c->ctx, ev);
  }
}

int fv_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
  fv_cq* c = (fv_cq*)cq;
  if (n < 0) return -EINVAL;
  pthread_mutex_lock(&c->lock);
  if (c->overrun) {
    pthread_mutex_unlock(&c->lock);
    return -EIO;
  }
  int k = 0;
  while (k < n && c->count > 0) {
    wc[k++] = c->ring[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
  }
  pthread_mutex_unlock(&c->lock);
  return k;
}
