/* TCP sockets for bootstrap and the socket net plugin: address parsing and printing, interface
 * choice by NCCL_SOCKET_IFNAME, and listen/connect/accept/send/recv with bounded waits.
 * Functions log their own failures (with the peer address) and return ncclSystemError or
 * ncclRemoteError (peer closed, or a timeout: errno is then ETIMEDOUT). */
#ifndef WEFT_UTIL_SOCKET_H
#define WEFT_UTIL_SOCKET_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include "nccl.h"

/* 28 bytes: the largest of sockaddr_in / sockaddr_in6, as NCCL's unique id stores it. */
typedef union {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
} weft_sockaddr;

#define WEFT_SOCKADDR_STRLEN (INET6_ADDRSTRLEN + 16)

/* "host:port", "[v6addr]:port", "v4addr:port" or a resolvable host name. */
ncclResult_t socket_parse_hostport(const char* text, weft_sockaddr* out);
/* "1.2.3.4:5" or "[::1]:5". */
const char* socket_addr_str(const weft_sockaddr* a, char* buf, size_t len);
socklen_t socket_addr_len(const weft_sockaddr* a);
int socket_addr_port(const weft_sockaddr* a);
/* 1 for 127.0.0.0/8 and ::1 (and ::ffff:127.x): reachable from this host only. */
int socket_addr_is_loopback(const weft_sockaddr* a);
void socket_addr_set_port(weft_sockaddr* a, int port);
/* Same family, address and port. */
int socket_addr_equal(const weft_sockaddr* a, const weft_sockaddr* b);

/* NCCL_SOCKET_IFNAME grammar: comma list of prefixes, leading '^' excludes, leading '='
 * (after '^') matches names exactly; ":port" suffixes are accepted and ignored. Returns 1 when
 * ifname is selected by spec. */
int socket_ifname_match(const char* spec, const char* ifname);

/* Up to max usable interfaces in NCCL's preference order (NCCL_SOCKET_IFNAME when set; else
 * ib*, then anything but docker/lo/virbr, then docker*, then lo), honouring
 * NCCL_SOCKET_FAMILY. Ports are 0. Returns ncclSystemError when none is found. */
ncclResult_t socket_find_interfaces(char (*names)[IF_NAMESIZE], weft_sockaddr* addrs, int max,
                                    int* count);

/* Listen on addr (port 0: any free port); *bound gets the address peers should use. */
ncclResult_t socket_listen(const weft_sockaddr* addr, int* fd, weft_sockaddr* bound);
/* Connect, retrying refused/unreachable attempts until timeout_ms. */
ncclResult_t socket_connect(const weft_sockaddr* addr, int timeout_ms, int* fd);
/* Start a non-blocking connect; *fd is valid and connecting. Finish with socket_connect_poll. */
ncclResult_t socket_connect_start(const weft_sockaddr* addr, int* fd);
/* *done = 1 when connected; ncclRemoteError when refused (caller may retry with a new fd). */
ncclResult_t socket_connect_poll(int fd, int* done);
/* Wait up to timeout_ms for a connection (0: just check). *fd = -1 when none came. */
ncclResult_t socket_accept(int listen_fd, int timeout_ms, int* fd);

/* Whole-buffer transfers on a blocking or non-blocking fd; each waits at most timeout_ms
 * (< 0: forever) between bytes of progress. A closed peer is ncclRemoteError. */
ncclResult_t socket_send_all(int fd, const void* buf, size_t len, int timeout_ms);
ncclResult_t socket_recv_all(int fd, void* buf, size_t len, int timeout_ms);
/* One non-blocking step: moves what it can, adds to *done. ncclRemoteError on close/error. */
ncclResult_t socket_progress(int fd, int send, void* buf, size_t len, size_t* done);

ncclResult_t socket_set_nonblocking(int fd, int on);
void socket_set_nodelay(int fd);
/* Close a connected socket without leaving a TIME_WAIT entry (which holds a local port for a
 * minute: a loop of communicators used to run a host out of ephemeral ports) where that loses
 * nothing: when the peer has closed already (its FIN is here), this end answers with a reset
 * (SO_LINGER 0), which also ends the peer's FIN_WAIT2 at once, so neither end waits. A peer
 * that closed reads nothing more, and what it sent before its FIN is in this end's queue. When
 * the peer has not closed, a normal close: this end sends the FIN first (after everything it
 * queued) and its FIN_WAIT ends when the peer resets. Both ends closing this way at once both
 * send a FIN and both keep a TIME_WAIT: a connection that carries bytes one way closes its
 * sending end with socket_close and its receiving end with socket_reset, which never races.
 * Old segments of a connection ended this way cannot reach a later one of the same ports
 * unnoticed: TCP timestamps (PAWS) drop them, and weft's handshakes (bootstrap secret, net
 * plugin magic) refuse strangers. -1 is ignored. */
void socket_close(int fd);
/* Close a connected socket with a reset (SO_LINGER 0), whatever the peer's state: neither end
 * keeps a TIME_WAIT, and a FIN the peer has in flight is answered with a reset too. For the end
 * that wants nothing more from the connection (it can no longer read, so what is still on the
 * way is lost anyway) and sends nothing that is still undelivered: a receiving end of a
 * one-way stream, or a connection dropped before it carried anything. -1 is ignored. */
void socket_reset(int fd);

#endif
