/* Bootstrap test helpers (see bs_testutil.h). */
#include "bs_testutil.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static unsigned char byte_at(size_t i, uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t w = mix(seed ^ mix(a * 0x9e3779b97f4a7c15ull ^ mix(b + 1)) ^ (uint64_t)(i / 8));
  return (unsigned char)(w >> (8 * (i % 8)));
}

void bs_fill(void* buf, size_t len, uint64_t seed, uint64_t a, uint64_t b) {
  unsigned char* p = buf;
  for (size_t i = 0; i < len; i++) p[i] = byte_at(i, seed, a, b);
}

int bs_check(const void* buf, size_t len, uint64_t seed, uint64_t a, uint64_t b) {
  const unsigned char* p = buf;
  for (size_t i = 0; i < len; i++)
    if (p[i] != byte_at(i, seed, a, b)) {
      fprintf(stderr, "byte %zu of %zu differs (a=%llu b=%llu)\n", i, len,
              (unsigned long long)a, (unsigned long long)b);
      return 0;
    }
  return 1;
}

uint64_t bs_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void bs_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int bs_last_error_has(const char* label, ...) {
  char err[1024];
  weft_log_last_error(err, sizeof err);
  fprintf(stderr, "[%s] last error: %s\n", label, err);
  va_list ap;
  va_start(ap, label);
  int ok = 1;
  for (const char* n = va_arg(ap, const char*); n; n = va_arg(ap, const char*))
    if (!strstr(err, n)) {
      fprintf(stderr, "[%s] missing \"%s\"\n", label, n);
      ok = 0;
    }
  va_end(ap);
  return ok;
}

int bs_wait_settled(int want_threads, int ms) {
  uint64_t end = bs_now_ms() + (uint64_t)ms;
  for (;;) {
    int roots = bs_root_threads_live();
    int threads = test_count_threads();
    if (roots == 0 && (want_threads < 0 || threads == want_threads)) return 1;
    if (bs_now_ms() > end) {
      fprintf(stderr, "not settled after %d ms: %d root threads live, %d threads (want %d)\n",
              ms, roots, threads, want_threads);
      return 0;
    }
    bs_sleep_ms(5);
  }
}

int bs_have_ipv6_loopback(void) {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  int ok = bind(fd, (struct sockaddr*)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

static void* nothing(void* arg) { return arg; }

int bs_baseline_threads(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
  bs_sleep_ms(20);
  return test_count_threads();
}
