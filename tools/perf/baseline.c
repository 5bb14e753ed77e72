/* Baselines (see baseline.h).
 * memcpy: page-aligned source and destination of the largest size (at most 1 GiB), both
 *   faulted in; copies repeated until 0.2 s have passed (at least 3); bandwidth = bytes
 *   copied / time.
 * TCP: a forked receiver connects to a listener on 127.0.0.1; the sender write()s 4 MiB
 *   chunks over the one connection. 32 MiB go first untimed (slow start, buffer growth), the
 *   receiver acknowledges them, then 256 MiB (or 8x the largest size, up to 1 GiB) are timed
 *   from the first write to the receiver's final one-byte acknowledgement. */
#include "baseline.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chan.h" /* perf_write_all */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void* page_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1)) return NULL;
  memset(p, 1, bytes);
  return p;
}

static void memcpy_baseline(size_t bytes, struct perf_baseline* b) {
  if (bytes == 0) return;
  char* src = page_alloc(bytes);
  char* dst = page_alloc(bytes);
  if (!src || !dst) {
    snprintf(b->why_not, sizeof b->why_not, "memcpy: cannot allocate 2 x %zu bytes", bytes);
    free(src);
    free(dst);
    return;
  }
  memcpy(dst, src, bytes); /* warm */
  int reps = 0;
  double t0 = now_s(), t;
  do {
    memcpy(dst, src, bytes);
    /* Keep the copy observable so it is not optimised away. */
    __asm__ __volatile__("" : : "r"(dst) : "memory");
    reps++;
    t = now_s() - t0;
  } while (reps < 3 || t < 0.2);
  b->have_memcpy = 1;
  b->memcpy_bytes = bytes;
  b->memcpy_gbps = (double)bytes * reps / t / 1e9;
  free(src);
  free(dst);
}

/* The receiving process: reads `warm` bytes, acks, reads `timed` bytes, acks, exits. */
static void tcp_receiver(int port, size_t chunk, size_t warm, size_t timed) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a)) _exit(1);
  char* buf = malloc(chunk);
  if (!buf) _exit(1);
  size_t phases[2] = {warm, timed};
  for (int p = 0; p < 2; p++) {
    size_t left = phases[p];
    while (left) {
      ssize_t n = read(fd, buf, left < chunk ? left : chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(1);
      left -= (size_t)n;
    }
    if (perf_write_all(fd, "k", 1)) _exit(1);
  }
  _exit(0);
}

static int read_ack(int fd) {
  char c;
  for (;;) {
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    return n == 1 ? 0 : -1;
  }
}

static void tcp_baseline(size_t maxbytes, struct perf_baseline* b) {
  const size_t chunk = 4u << 20, warm = 32u << 20;
  size_t timed = 256u << 20;
  if (maxbytes > timed / 8) timed = maxbytes > (1u << 30) / 8 ? 1u << 30 : maxbytes * 8;
  timed -= timed % chunk;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {
      .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr*)&a, sizeof a) || listen(lfd, 1) ||
      getsockname(lfd, (struct sockaddr*)&a, &alen)) {
    snprintf(b->why_not, sizeof b->why_not, "tcp: cannot listen on 127.0.0.1: %s", strerror(errno));
    if (lfd >= 0) close(lfd);
    return;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(lfd);
    tcp_receiver(ntohs(a.sin_port), chunk, warm, timed);
  }
  char* buf = pid > 0 ? page_alloc(chunk) : NULL;
  int fd = pid > 0 ? accept(lfd, NULL, NULL) : -1;
  close(lfd);
  int ok = 0;
  double t = 0;
  if (fd >= 0 && buf) {
    ok = 1;
    for (size_t sent = 0; ok && sent < warm; sent += chunk)
      ok = perf_write_all(fd, buf, chunk) == 0;
    ok = ok && read_ack(fd) == 0;
    double t0 = now_s();
    for (size_t sent = 0; ok && sent < timed; sent += chunk)
      ok = perf_write_all(fd, buf, chunk) == 0;
    ok = ok && read_ack(fd) == 0;
    t = now_s() - t0;
  }
  if (fd >= 0) close(fd);
  free(buf);
  if (pid > 0) {
    int status;
    if (!ok) kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!ok || t <= 0) {
    snprintf(b->why_not, sizeof b->why_not, "tcp: loopback stream failed");
    return;
  }
  b->have_tcp = 1;
  b->tcp_bytes = timed;
  b->tcp_chunk = chunk;
  b->tcp_gbps = (double)timed / t / 1e9;
}

void perf_baseline_run(size_t maxbytes, struct perf_baseline* b) {
  memset(b, 0, sizeof *b);
  /* Past 1 GiB a copy says nothing new, and two such buffers may not fit. */
  memcpy_baseline(maxbytes > (1u << 30) ? 1u << 30 : maxbytes, b);
  tcp_baseline(maxbytes, b);
}

void perf_baseline_print(FILE* out, const struct perf_baseline* b) {
  if (b->have_memcpy)
    fprintf(out, "# Baseline memcpy      : %.3f GB/s (1 thread, %zu bytes per copy)\n",
            b->memcpy_gbps, b->memcpy_bytes);
  if (b->have_tcp)
    fprintf(out,
            "# Baseline TCP loopback: %.3f GB/s (2 processes, 1 socket, %zu-byte writes, %zu "
            "bytes timed)\n",
            b->tcp_gbps, b->tcp_chunk, b->tcp_bytes);
  if (b->why_not[0]) fprintf(out, "# Baseline: %s\n", b->why_not);
}
