/* The async event thread of a verbs device. It sleeps in poll() on the context's async fd and
 * a stop eventfd, and turns events into state the data path checks:
 *  - a QP or CQ event is stored in the int its qp_context / cq_context points to (a comm's
 *    async_event → its next test fails with ncclSystemError naming the event; an RMA group's);
 *  - port error / port active mark the port down / up → every comm on it fails while down;
 *  - device fatal marks the device.
 * Every event is acknowledged at once (ibv_destroy_qp waits for that). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net_ib_internal.h"

/* The first event of the object whose context is slot (-1 until then). */
static void mark(int* slot, int event) {
  if (slot == NULL) return;
  int none = -1;
  __atomic_compare_exchange_n(slot, &none, event, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void handle(ib_hw* hw, const struct ibv_async_event* ev) {
  const char* what = net_ib_event_str(ev->event_type);
  switch (ev->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
      IB_WARN("NET/IB: %s: async event on QP %#x: %s", hw->name, ev->element.qp->qp_num, what);
      mark(ev->element.qp->qp_context, ev->event_type);
      break;
    case IBV_EVENT_CQ_ERR:
      IB_WARN("NET/IB: %s: async event on a CQ: %s", hw->name, what);
      mark(ev->element.cq->cq_context, ev->event_type);
      break;
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE: {
      int down = ev->event_type == IBV_EVENT_PORT_ERR;
      for (int i = 0; i < net_ib_ndevs(); i++) {
        ib_dev* d = net_ib_dev_get(i);
        if (d->hw == hw && d->port == ev->element.port_num)
          __atomic_store_n(&d->port_down, down, __ATOMIC_RELEASE);
      }
      if (down)
        IB_WARN("NET/IB: %s:%d: async event: %s", hw->name, ev->element.port_num, what);
      else
        IB_INFO(NCCL_NET, "NET/IB: %s:%d: async event: %s", hw->name, ev->element.port_num, what);
      break;
    }
    case IBV_EVENT_DEVICE_FATAL:
      __atomic_store_n(&hw->fatal, 1, __ATOMIC_RELEASE);
      IB_WARN("NET/IB: %s: async event: %s", hw->name, what);
      break;
    default:
      IB_INFO(NCCL_NET, "NET/IB: %s: async event: %s", hw->name, what);
      break;
  }
}

static void* async_main(void* arg) {
  ib_hw* hw = arg;
  const ib_verbs* v = net_ib_verbs();
  for (;;) {
    struct pollfd pf[2] = {{hw->ctx->async_fd, POLLIN, 0}, {hw->stop_fd, POLLIN, 0}};
    int r = poll(pf, 2, -1);
    if (r < 0 && errno != EINTR) break;
    if (pf[1].revents) break;
    if (!(pf[0].revents & (POLLIN | POLLERR | POLLHUP))) continue;
    struct ibv_async_event ev;
    while (v->get_async_event(hw->ctx, &ev) == 0) {
      handle(hw, &ev);
      v->ack_async_event(&ev);
    }
  }
  return NULL;
}

/* The async threads outlive any one context: loaders of the v6..v10 tables (stock NCCL up to
 * 2.27, weft-conformance's reload test) have no finalize to call and may dlclose the library
 * with the threads asleep in poll(). Once a thread exists, the library pins itself
 * (RTLD_NODELETE), so its code stays mapped for as long as the process lives. */
static void pin_library(void) {
  Dl_info di;
  if (dladdr((void*)pin_library, &di) && di.dli_fname)
    (void)dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

ncclResult_t net_ib_async_start(ib_hw* hw) {
  /* Non-blocking, so the thread drains what poll announced and never sits in the read. */
  int fl = fcntl(hw->ctx->async_fd, F_GETFL);
  if (fl < 0 || fcntl(hw->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    IB_WARN("NET/IB: %s: cannot make the async event fd non-blocking: %s", hw->name,
            strerror(errno));
    return ncclSystemError;
  }
  hw->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (hw->stop_fd < 0) {
    IB_WARN("NET/IB: %s: eventfd failed: %s", hw->name, strerror(errno));
    return ncclSystemError;
  }
  int e = pthread_create(&hw->async_thread, NULL, async_main, hw);
  if (e) {
    IB_WARN("NET/IB: %s: cannot start the async event thread: %s", hw->name, strerror(e));
    close(hw->stop_fd);
    hw->stop_fd = -1;
    return ncclSystemError;
  }
  hw->async_started = 1;
  pin_library();
  return ncclSuccess;
}

void net_ib_async_stop(ib_hw* hw) {
  if (hw->async_started) {
    uint64_t one = 1;
    ssize_t w = write(hw->stop_fd, &one, sizeof one);
    (void)w;
    pthread_join(hw->async_thread, NULL);
    hw->async_started = 0;
  }
  if (hw->stop_fd >= 0) close(hw->stop_fd);
  hw->stop_fd = -1;
}
