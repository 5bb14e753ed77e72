/* TCP helpers (see socket.h). */
#include "util/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/param.h"
#include "util/check.h"

socklen_t socket_addr_len(const weft_sockaddr* a) {
  return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int socket_addr_port(const weft_sockaddr* a) {
  return a->sa.sa_family == AF_INET6 ? ntohs(a->sin6.sin6_port) : ntohs(a->sin.sin_port);
}

void socket_addr_set_port(weft_sockaddr* a, int port) {
  if (a->sa.sa_family == AF_INET6)
    a->sin6.sin6_port = htons((uint16_t)port);
  else
    a->sin.sin_port = htons((uint16_t)port);
}

int socket_addr_equal(const weft_sockaddr* a, const weft_sockaddr* b) {
  if (a->sa.sa_family != b->sa.sa_family) return 0;
  if (a->sa.sa_family == AF_INET)
    return a->sin.sin_port == b->sin.sin_port && a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
  if (a->sa.sa_family == AF_INET6)
    return a->sin6.sin6_port == b->sin6.sin6_port &&
           !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, sizeof a->sin6.sin6_addr);
  return 0;
}

const char* socket_addr_str(const weft_sockaddr* a, char* buf, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (a->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a->sin.sin_addr, host, sizeof host);
    snprintf(buf, len, "%s:%d", host, socket_addr_port(a));
  } else if (a->sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a->sin6.sin6_addr, host, sizeof host);
    snprintf(buf, len, "[%s]:%d", host, socket_addr_port(a));
  } else {
    snprintf(buf, len, "<family %d>", a->sa.sa_family);
  }
  return buf;
}

ncclResult_t socket_parse_hostport(const char* text, weft_sockaddr* out) {
  char host[256];
  const char* port_str;
  if (text == NULL || *text == '\0') {
    WARN("empty address: expected host:port");
    return ncclInvalidArgument;
  }
  if (text[0] == '[') {
    const char* close = strchr(text, ']');
    if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof host) {
      WARN("bad address '%s': expected [ipv6]:port", text);
      return ncclInvalidArgument;
    }
    memcpy(host, text + 1, (size_t)(close - text - 1));
    host[close - text - 1] = '\0';
    port_str = close + 2;
  } else {
    const char* colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host || colon == text) {
      WARN("bad address '%s': expected host:port", text);
      return ncclInvalidArgument;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    port_str = colon + 1;
  }
  char* end;
  long port = strtol(port_str, &end, 10);
  if (*port_str == '\0' || *end != '\0' || port < 0 || port > 65535) {
    WARN("bad port in address '%s'", text);
    return ncclInvalidArgument;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0 || res == NULL) {
    WARN("cannot resolve '%s': %s", host, gai_strerror(rc));
    return ncclInvalidArgument;
  }
  weft_sockaddr a;
  memset(&a, 0, sizeof a);
  memcpy(&a, res->ai_addr,
         res->ai_addrlen < sizeof a ? res->ai_addrlen : sizeof a);
  freeaddrinfo(res);
  socket_addr_set_port(&a, (int)port);
  *out = a;
  return ncclSuccess;
}

int socket_ifname_match(const char* spec, const char* ifname) {
  if (spec == NULL || *spec == '\0') return 1;
  int exclude = 0, exact = 0;
  if (*spec == '^') {
    exclude = 1;
    spec++;
  }
  if (*spec == '=') {
    exact = 1;
    spec++;
  }
  int hit = 0;
  const char* p = spec;
  while (*p && !hit) {
    const char* comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    const char* colon = memchr(p, ':', n);
    size_t nlen = colon ? (size_t)(colon - p) : n;
    if (nlen > 0) {
      if (exact)
        hit = strlen(ifname) == nlen && !strncmp(ifname, p, nlen);
      else
        hit = !strncmp(ifname, p, nlen);
    }
    p += n;
    if (*p == ',') p++;
  }
  return exclude ? !hit : hit;
}

static int family_allowed(int family) {
  const char* f = param_str(WEFT_PARAM_SOCKET_FAMILY);
  if (!strcasecmp(f, "AF_INET")) return family == AF_INET;
  if (!strcasecmp(f, "AF_INET6")) return family == AF_INET6;
  return family == AF_INET || family == AF_INET6;
}

/* Default preference classes: 0 ib*, 1 anything else, 2 docker*, 3 lo, 4 virbr* (never). */
static int default_class(const char* name) {
  if (!strncmp(name, "ib", 2)) return 0;
  if (!strncmp(name, "docker", 6)) return 2;
  if (!strncmp(name, "lo", 2)) return 3;
  if (!strncmp(name, "virbr", 5)) return 4;
  return 1;
}

ncclResult_t socket_find_interfaces(char (*names)[IF_NAMESIZE], weft_sockaddr* addrs, int max,
                                    int* count) {
  struct ifaddrs* list = NULL;
  if (getifaddrs(&list) != 0) {
    char e[160];
    WARN("getifaddrs failed: %s", weft_sys_error(errno, e, sizeof e));
    return ncclSystemError;
  }
  const char* spec = param_is_set(WEFT_PARAM_SOCKET_IFNAME) ? param_str(WEFT_PARAM_SOCKET_IFNAME)
                                                            : NULL;
  int n = 0;
  /* With a spec: one pass in system order. Without: one pass per preference class, stopping at
   * the first class that yields something (as NCCL does), virbr never. */
  for (int cls = spec ? -1 : 0; cls <= (spec ? -1 : 3) && n == 0; cls++) {
    for (struct ifaddrs* i = list; i && n < max; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      int fam = i->ifa_addr->sa_family;
      if (!family_allowed(fam)) continue;
      if (spec ? !socket_ifname_match(spec, i->ifa_name) : default_class(i->ifa_name) != cls)
        continue;
      if (fam == AF_INET6) {
        struct sockaddr_in6* s6 = (struct sockaddr_in6*)i->ifa_addr;
        if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) continue; /* needs a scope to be useful */
      }
      int dup = 0;
      for (int k = 0; k < n; k++)
        if (!strcmp(names[k], i->ifa_name)) dup = 1;
      if (dup) continue;
      memset(&addrs[n], 0, sizeof addrs[n]);
      memcpy(&addrs[n], i->ifa_addr,
             fam == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
      snprintf(names[n], IF_NAMESIZE, "%s", i->ifa_name);
      n++;
    }
  }
  freeifaddrs(list);
  if (n == 0) {
    WARN("no usable network interface%s%s", spec ? " matches NCCL_SOCKET_IFNAME=" : "",
         spec ? spec : "");
    return ncclSystemError;
  }
  *count = n;
  return ncclSuccess;
}

ncclResult_t socket_set_nonblocking(int fd, int on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl == -1 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == -1) {
    WARN("fcntl(O_NONBLOCK) failed: %s", strerror(errno));
    return ncclSystemError;
  }
  return ncclSuccess;
}

void socket_set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

ncclResult_t socket_listen(const weft_sockaddr* addr, int* fd_out, weft_sockaddr* bound) {
  char buf[WEFT_SOCKADDR_STRLEN];
  /* Non-blocking: a connection reset between poll and accept must not block accept. */
  int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    char e[160];
    WARN("socket() failed: %s", weft_sys_error(errno, e, sizeof e));
    return ncclSystemError;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  weft_sockaddr a = *addr;
  if (bind(fd, &a.sa, socket_addr_len(&a)) != 0 || listen(fd, 1024) != 0) {
    WARN("cannot listen on %s: %s", socket_addr_str(addr, buf, sizeof buf), strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  socklen_t len = sizeof a;
  if (getsockname(fd, &a.sa, &len) != 0) {
    WARN("getsockname failed: %s", strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  *fd_out = fd;
  if (bound) *bound = a;
  return ncclSuccess;
}

ncclResult_t socket_connect_start(const weft_sockaddr* addr, int* fd_out) {
  int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    char e[160];
    WARN("socket() failed: %s", weft_sys_error(errno, e, sizeof e));
    return ncclSystemError;
  }
  socket_set_nodelay(fd);
  if (connect(fd, &addr->sa, socket_addr_len(addr)) != 0 && errno != EINPROGRESS) {
    int err = errno;
    close(fd);
    if (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == EAGAIN) {
      errno = err; /* callers tell a refusal from the rest */
      return ncclRemoteError;
    }
    char buf[WEFT_SOCKADDR_STRLEN];
    WARN("connect to %s failed: %s", socket_addr_str(addr, buf, sizeof buf), strerror(err));
    return ncclSystemError;
  }
  *fd_out = fd;
  return ncclSuccess;
}

ncclResult_t socket_connect_poll(int fd, int* done) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  *done = 0;
  int rc = poll(&p, 1, 0);
  if (rc < 0) return errno == EINTR ? ncclSuccess : ncclSystemError;
  if (rc == 0) return ncclSuccess;
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    errno = err;
    return ncclRemoteError;
  }
  *done = 1;
  return ncclSuccess;
}

ncclResult_t socket_connect(const weft_sockaddr* addr, int timeout_ms, int* fd_out) {
  uint64_t deadline = clock_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
  char buf[WEFT_SOCKADDR_STRLEN];
  weft_backoff b = {0};
  for (;;) {
    int fd = -1, done = 0;
    ncclResult_t r = socket_connect_start(addr, &fd);
    if (r == ncclSystemError) return r;
    while (r == ncclSuccess) {
      r = socket_connect_poll(fd, &done);
      if (r != ncclSuccess || done) break;
      if (clock_ms() > deadline) break;
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      poll(&p, 1, 10);
    }
    if (r == ncclSuccess && done) {
      if (socket_set_nonblocking(fd, 0) != ncclSuccess) {
        close(fd);
        return ncclSystemError;
      }
      *fd_out = fd;
      return ncclSuccess;
    }
    if (fd >= 0) close(fd);
    if (clock_ms() > deadline) {
      WARN("connect to %s: no answer within %d ms", socket_addr_str(addr, buf, sizeof buf),
           timeout_ms);
      return ncclRemoteError;
    }
    backoff_wait(&b);
  }
}

ncclResult_t socket_accept(int listen_fd, int timeout_ms, int* fd_out) {
  *fd_out = -1;
  struct pollfd p = {.fd = listen_fd, .events = POLLIN};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    WARN("poll on listening socket failed: %s", strerror(errno));
    return ncclSystemError;
  }
  if (rc == 0) return ncclSuccess;
  int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return ncclSuccess;
    char e[160];
    WARN("accept failed: %s", weft_sys_error(errno, e, sizeof e));
    return ncclSystemError;
  }
  socket_set_nodelay(fd);
  *fd_out = fd;
  return ncclSuccess;
}

ncclResult_t socket_progress(int fd, int send_dir, void* buf, size_t len, size_t* done) {
  while (*done < len) {
    ssize_t k = send_dir ? send(fd, (char*)buf + *done, len - *done, MSG_NOSIGNAL | MSG_DONTWAIT)
                         : recv(fd, (char*)buf + *done, len - *done, MSG_DONTWAIT);
    if (k > 0) {
      *done += (size_t)k;
      continue;
    }
    if (k == 0 && !send_dir) return ncclRemoteError; /* orderly close by the peer */
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (k < 0 && errno == EINTR) continue;
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static ncclResult_t transfer_all(int fd, int send_dir, void* buf, size_t len, int timeout_ms) {
  size_t done = 0;
  while (done < len) {
    size_t before = done;
    WEFT_CHECK(socket_progress(fd, send_dir, buf, len, &done));
    if (done == len) break;
    if (done == before) {
      struct pollfd p = {.fd = fd, .events = send_dir ? POLLOUT : POLLIN};
      int rc = poll(&p, 1, timeout_ms);
      if (rc == 0) { /* timed out; the caller names the peer */
        errno = ETIMEDOUT;
        return ncclRemoteError;
      }
      if (rc < 0 && errno != EINTR) return ncclSystemError;
    }
  }
  return ncclSuccess;
}

ncclResult_t socket_send_all(int fd, const void* buf, size_t len, int timeout_ms) {
  return transfer_all(fd, 1, (void*)buf, len, timeout_ms);
}

ncclResult_t socket_recv_all(int fd, void* buf, size_t len, int timeout_ms) {
  return transfer_all(fd, 0, buf, len, timeout_ms);
}

void socket_close(int fd) {
  if (fd < 0) return;
  struct pollfd q = {.fd = fd, .events = POLLIN | POLLRDHUP};
  if (poll(&q, 1, 0) == 1 && (q.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l); /* a failure: a normal close */
  }
  close(fd);
}

void socket_reset(int fd) {
  if (fd < 0) return;
  struct linger l = {.l_onoff = 1, .l_linger = 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l); /* a failure: a normal close */
  close(fd);
}

int socket_addr_is_loopback(const weft_sockaddr* a) {
  if (a->sa.sa_family == AF_INET) return (ntohl(a->sin.sin_addr.s_addr) >> 24) == 127;
  if (a->sa.sa_family != AF_INET6) return 0;
  const struct in6_addr* x = &a->sin6.sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(x)) return 1;
  return IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127;
}
