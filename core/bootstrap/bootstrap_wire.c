/* The handshake every bootstrap connection starts with, and the set of accepted connections that
 * have not finished it yet. The set is read without blocking and each entry has its own
 * deadline: a client that sends garbage, closes early or never speaks costs one fd for at most
 * BS_HELLO_TIMEOUT_MS and one INFO line, and never delays the others. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/clock.h"
#include "util/log.h"

ncclResult_t bs_random(void* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t k = getrandom((char*)buf + got, len - got, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      WARN("bootstrap: getrandom failed: %s", strerror(errno));
      return ncclSystemError;
    }
    got += (size_t)k;
  }
  return ncclSuccess;
}

void bs_hello_init(bs_hello* h, const weft_bootstrap_id* id, uint32_t kind, int rank,
                   int nranks) {
  memset(h, 0, sizeof *h);
  h->magic = id->magic;
  h->secret = id->secret;
  h->version = BS_WIRE_VERSION;
  h->kind = kind;
  h->rank = rank;
  h->nranks = nranks;
}

/* Constant-time: how long the comparison takes says nothing about how much of it matched. */
static int secret_equal(uint64_t a, uint64_t b) {
  uint64_t d = a ^ b;
  volatile uint64_t fold = d | (d >> 32);
  return (uint32_t)fold == 0;
}

const char* bs_hello_check(const bs_hello* h, uint64_t magic, uint64_t secret) {
  if (h->magic != magic) return "wrong magic";
  if (!secret_equal(h->secret, secret)) return "wrong secret";
  if (h->version != BS_WIRE_VERSION) return "unknown wire version";
  if (h->kind < BS_KIND_CHECKIN || h->kind > BS_KIND_QUERY) return "unknown connection kind";
  if (h->nranks < 1 || h->nranks > BS_MAX_RANKS) return "nranks out of range";
  if (h->rank < 0 || h->rank >= h->nranks) return "rank out of range";
  if (h->kind == BS_KIND_CHECKIN) {
    int fam = h->addr.sa.sa_family;
    if (fam != AF_INET && fam != AF_INET6) return "bad listener address";
    if (h->timeout_ms < 0) return "negative timeout";
  }
  return NULL;
}

int bs_missing_ranges(const unsigned char* present, int nranks, bs_range* out, int max,
                      uint32_t* total) {
  int n = 0;
  uint32_t missing = 0;
  for (int r = 0; r < nranks; r++) {
    if (present[r]) continue;
    missing++;
    if (n > 0 && out[n - 1].last == r - 1) {
      out[n - 1].last = r;
    } else if (n < max) {
      out[n].first = out[n].last = r;
      n++;
    }
  }
  *total = missing;
  return n;
}

void bs_format_ranges(const bs_range* r, int nranges, uint32_t total, char* buf, size_t len) {
  size_t o = (size_t)snprintf(buf, len, "%s ", total == 1 ? "rank" : "ranks");
  uint32_t listed = 0;
  for (int i = 0; i < nranges && o < len; i++) {
    char one[32];
    if (r[i].first == r[i].last)
      snprintf(one, sizeof one, "%s%d", i ? "," : "", r[i].first);
    else
      snprintf(one, sizeof one, "%s%d-%d", i ? "," : "", r[i].first, r[i].last);
    if (o + strlen(one) + 5 >= len) break;
    o += (size_t)snprintf(buf + o, len - o, "%s", one);
    listed += (uint32_t)(r[i].last - r[i].first + 1);
  }
  if (listed < total && o < len) snprintf(buf + o, len - o, ",...");
}

/* ---- pending handshakes ---- */

static void pending_drop(bs_pending_set* s, int i, const char* who, const char* why) {
  char a[WEFT_SOCKADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "%s: dropped connection from %s: %s", who,
       socket_addr_str(&s->v[i].from, a, sizeof a), why);
  socket_reset(s->v[i].fd); /* accepted: a receiving end (bs_reset_fd) */
  s->v[i].fd = -1;
}

static void pending_compact(bs_pending_set* s) {
  int w = 0;
  for (int i = 0; i < s->n; i++)
    if (s->v[i].fd >= 0) s->v[w++] = s->v[i];
  s->n = w;
}

void bs_pending_accept(bs_pending_set* s, int listen_fd, const char* who) {
  /* A few at a time: between bursts the caller reads the hellos of those already accepted, so
   * a flood cannot push a real client out before it had its turn. */
  for (int burst = 0; burst < 16; burst++) {
    weft_sockaddr from;
    socklen_t len = sizeof from;
    memset(&from, 0, sizeof from);
    int fd = accept4(listen_fd, &from.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      /* Out of fds or memory: the connection stays in the backlog and poll would report it
       * again at once, so pause instead of spinning. */
      char e[160];
      WARN_ONCE("%s: accept failed: %s", who, weft_sys_error(errno, e, sizeof e));
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
      return;
    }
    if (s->n == BS_MAX_PENDING) { /* a flood: the oldest unanswered client goes first */
      pending_drop(s, 0, who, "too many connections waiting for a handshake");
      pending_compact(s);
    }
    socket_set_nodelay(fd);
    bs_pending* p = &s->v[s->n++];
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->from = from;
    p->deadline = clock_ms() + BS_HELLO_TIMEOUT_MS;
  }
}

int bs_pending_pollfds(const bs_pending_set* s, struct pollfd* pfd) {
  for (int i = 0; i < s->n; i++) {
    pfd[i].fd = s->v[i].fd;
    pfd[i].events = POLLIN;
    pfd[i].revents = 0;
  }
  return s->n;
}

void bs_pending_advance(bs_pending_set* s, const struct pollfd* pfd, uint64_t magic,
                        uint64_t secret, const char* who, bs_hello_fn fn, void* ctx) {
  uint64_t now = clock_ms();
  for (int i = 0; i < s->n; i++) {
    bs_pending* p = &s->v[i];
    if (!pfd || pfd[i].revents) {
      ncclResult_t r = socket_progress(p->fd, 0, &p->hello, sizeof p->hello, &p->done);
      if (r != ncclSuccess) {
        pending_drop(s, i, who, p->done ? "closed during the handshake" : "closed before a hello");
        continue;
      }
      if (p->done == sizeof p->hello) {
        const char* bad = magic ? bs_hello_check(&p->hello, magic, secret)
                                : bs_hello_check(&p->hello, p->hello.magic, p->hello.secret);
        if (bad) {
          pending_drop(s, i, who, bad);
          continue;
        }
        int fd = p->fd;
        p->fd = -1; /* handed over (or closed below) */
        if (!fn(ctx, fd, &p->hello, &p->from)) socket_reset(fd);
        continue;
      }
    }
    if (now >= p->deadline)
      pending_drop(s, i, who, p->done ? "incomplete hello" : "no hello within the deadline");
  }
  pending_compact(s);
}

uint64_t bs_pending_next_deadline(const bs_pending_set* s) {
  uint64_t d = UINT64_MAX;
  for (int i = 0; i < s->n; i++)
    if (s->v[i].deadline < d) d = s->v[i].deadline;
  return d;
}

void bs_pending_close_all(bs_pending_set* s) {
  for (int i = 0; i < s->n; i++)
    socket_reset(s->v[i].fd);
  s->n = 0;
}
