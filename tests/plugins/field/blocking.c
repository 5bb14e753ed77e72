/* Field case: a v6 plugin whose accept blocks until a connection has arrived and whose connect
 * blocks until the peer has accepted it (the ABI says neither may block; such plugins are in
 * use): the accepting side answers each connection with one byte, which connect waits for. Two
 * ranks that each call connect first, or accept first, deadlock unless the caller drives
 * connects and accepts from separate contexts.
 * Bounded so a deadlock fails instead of hanging: FIELDNET_BLOCK_S (default 60) seconds, then
 * ncclSystemError. FIELDNET_ACCEPT_NEVER=1: accept blocks that long and returns no comm. */
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "fieldnet_v6.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double bound_s(void) {
  const char* s = getenv("FIELDNET_BLOCK_S");
  return s ? atof(s) : 60.0;
}

static void nap(void) {
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
}

static ncclResult_t accept_blocking(void* listen_comm, void** recv_comm) {
  double end = now_s() + bound_s();
  int never = getenv("FIELDNET_ACCEPT_NEVER") != NULL;
  for (;;) {
    *recv_comm = NULL;
    if (!never) {
      ncclResult_t r = fieldnet_v6_accept(listen_comm, recv_comm);
      if (r != ncclSuccess) return r;
      if (*recv_comm) {
        char ack = 1;
        return send(refnet_comm_fd(*recv_comm), &ack, 1, MSG_NOSIGNAL) == 1 ? ncclSuccess
                                                                            : ncclSystemError;
      }
    }
    if (now_s() > end) return never ? ncclSuccess : ncclSystemError;
    nap();
  }
}

static ncclResult_t connect_blocking(int dev, void* handle, void** send_comm) {
  double end = now_s() + bound_s();
  for (;;) {
    ncclResult_t r = fieldnet_v6_connect(dev, handle, send_comm);
    if (r != ncclSuccess) return r;
    if (*send_comm) break;
    if (now_s() > end) return ncclSystemError;
    nap();
  }
  /* Wait for the accepting side's byte. */
  for (;;) {
    struct pollfd p = {refnet_comm_fd(*send_comm), POLLIN, 0};
    if (poll(&p, 1, 1) == 1) {
      char ack;
      if (recv(p.fd, &ack, 1, 0) == 1) return ncclSuccess;
      break;
    }
    if (now_s() > end) break;
  }
  refnet_closeSend(*send_comm);
  *send_comm = NULL;
  return ncclSystemError;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__attribute__((visibility("default"))) const ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "field-blocking", FIELDNET_V6_ENTRIES, .connect = connect_blocking,
    .accept = accept_blocking};
#pragma GCC diagnostic pop
