/* fakeverbs wire: socket helpers, the listening socket of a QP, and starting/stopping its
 * three NIC threads (fv_responder.c: rx; fv_requester.c: tx and ack). Blocked threads are
 * released by shutdown() of their socket and the wake eventfd. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fv_wire.h"

void fv_qp_name(struct sockaddr_un* a, socklen_t* len, const fv_device* d, uint32_t qpn) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "fakeverbs.%u.%s.%06x",
                   (unsigned)getuid(), d->dev.name, qpn);
  *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int fv_read_full(int fd, void* buf, uint64_t len) {
  char* p = buf;
  while (len > 0) {
    size_t chunk = len > (1u << 30) ? (1u << 30) : (size_t)len;
    ssize_t r = recv(fd, p, chunk, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    len -= (uint64_t)r;
  }
  return 0;
}

int fv_write_full(int fd, const void* buf, uint64_t len) {
  const char* p = buf;
  while (len > 0) {
    size_t chunk = len > (1u << 30) ? (1u << 30) : (size_t)len;
    ssize_t r = send(fd, p, chunk, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    len -= (uint64_t)r;
  }
  return 0;
}

int fv_discard(int fd, uint64_t len) {
  char buf[16384];
  while (len > 0) {
    uint64_t n = len < sizeof buf ? len : sizeof buf;
    if (fv_read_full(fd, buf, n) != 0) return -1;
    len -= n;
  }
  return 0;
}

int fv_reply(int fd, uint32_t type, const fv_pkt* req, uint32_t status, uint64_t len) {
  fv_pkt p;
  memset(&p, 0, sizeof p);
  p.type = type;
  p.psn = req->psn;
  p.gen = req->gen;
  p.status = status;
  p.len = len;
  return fv_write_full(fd, &p, sizeof p);
}

int fv_wire_listen(fv_qp* q) {
  struct sockaddr_un a;
  socklen_t len;
  fv_qp_name(&a, &len, q->ctx->dev, q->qp.qp_num);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (bind(fd, (struct sockaddr*)&a, len) != 0 || listen(fd, 8) != 0) {
    int e = errno;
    close(fd);
    return e;
  }
  int w = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w < 0) {
    int e = errno;
    close(fd);
    return e;
  }
  q->listen_fd = fd;
  q->wake_fd = w;
  return 0;
}

int fv_stopping(fv_qp* q) { return __atomic_load_n(&q->stop, __ATOMIC_ACQUIRE); }

void fv_timed_wait(fv_qp* q, uint64_t until_ns) {
  uint64_t now = fv_now_ns();
  uint64_t d = until_ns > now ? until_ns - now : 0;
  if (d > 100000000ull) d = 100000000ull; /* re-check at least every 100 ms */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)(d / 1000000000ull);
  ts.tv_nsec += (long)(d % 1000000000ull);
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  pthread_cond_timedwait(&q->cond, &q->lock, &ts);
}

int fv_wire_start_rx(fv_qp* q) {
  if (pthread_create(&q->rx_thread, NULL, fv_rx_main, q) != 0) return -1;
  q->rx_started = 1;
  return 0;
}

int fv_wire_start_tx(fv_qp* q) {
  if (pthread_create(&q->tx_thread, NULL, fv_tx_main, q) != 0) return -1;
  if (pthread_create(&q->ack_thread, NULL, fv_ack_main, q) != 0) {
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->tx_thread, NULL);
    q->tx_started = 0;
    return -1;
  }
  return 0;
}

void fv_wire_stop(fv_qp* q) {
  pthread_mutex_lock(&q->lock);
  __atomic_store_n(&q->stop, 1, __ATOMIC_RELEASE);
  if (q->in_fd >= 0) shutdown(q->in_fd, SHUT_RDWR);
  if (q->out_fd >= 0) shutdown(q->out_fd, SHUT_RDWR);
  pthread_cond_broadcast(&q->cond);
  int started = q->tx_started;
  pthread_mutex_unlock(&q->lock);
  if (q->wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t w = write(q->wake_fd, &one, sizeof one);
    (void)w;
  }
  if (q->rx_started) pthread_join(q->rx_thread, NULL);
  if (started) {
    pthread_join(q->tx_thread, NULL);
    pthread_join(q->ack_thread, NULL);
  }
  if (q->out_fd >= 0) close(q->out_fd);
  if (q->listen_fd >= 0) close(q->listen_fd);
  if (q->wake_fd >= 0) close(q->wake_fd);
  q->out_fd = q->listen_fd = q->wake_fd = -1;
}
