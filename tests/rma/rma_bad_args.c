/* One-sided calls with bad arguments are refused with ncclInvalidArgument and a WARN naming the
 * argument and its value (ncclGetLastError), and refusing them changes nothing: a good put and
 * wait after them still work. Two host-mode ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define WBYTES 4096

static ncclComm_t g_comm;

#define REFUSED(call, text)                                                                \
  do {                                                                                     \
    EXPECT_RES(call, ncclInvalidArgument);                                                 \
    const char* e_ = ncclGetLastError(g_comm);                                             \
    if (!e_ || !strstr(e_, text)) {                                                        \
      fprintf(stderr, "%s:%d: %s: last error \"%s\" does not say \"%s\"\n", __FILE__,      \
              __LINE__, #call, e_ ? e_ : "(null)", text);                                  \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static int rank_main(int rank, int nranks, ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm, other;
  EXPECT_OK(ncclCommInitRank(&comm, nranks, *id, rank));
  g_comm = comm;
  EXPECT_OK(ncclCommSplit(comm, 0, rank, &other, NULL));
  char* wbuf = malloc(WBYTES);
  char* plain = malloc(WBYTES);
  char* obuf = malloc(WBYTES);
  char stray[64];
  memset(wbuf, 0, WBYTES);
  ncclWindow_t win, plain_win, other_win;
  EXPECT_OK(ncclCommWindowRegister(comm, wbuf, WBYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  EXPECT_OK(ncclCommWindowRegister(comm, plain, WBYTES, &plain_win, NCCL_WIN_DEFAULT));
  EXPECT_OK(ncclCommWindowRegister(other, obuf, WBYTES, &other_win, NCCL_WIN_COLL_SYMMETRIC));
  int peer = 1 - rank;

  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, win, 0, 1, 0, 0, comm, NULL), "sigIdx = 1");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, win, 0, 0, 3, 0, comm, NULL), "ctx = 3");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, win, 0, 0, 0, 2, comm, NULL), "flags = 2");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, plain_win, 0, 0, 0, 0, comm, NULL),
          "without NCCL_WIN_COLL_SYMMETRIC");
  REFUSED(ncclPutSignal(plain, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL),
          "is not inside a window");
  REFUSED(ncclPutSignal(stray, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL),
          "is not inside a window");
  REFUSED(ncclPutSignal(wbuf + WBYTES - 4, 2, ncclFloat32, peer, win, 0, 0, 0, 0, comm, NULL),
          "is not inside a window");
  REFUSED(ncclPutSignal(wbuf, 16, ncclInt8, peer, win, WBYTES - 8, 0, 0, 0, comm, NULL),
          "peerWinOffset = 4088");
  REFUSED(ncclPutSignal(wbuf, 1, ncclInt8, peer, win, WBYTES + 1, 0, 0, 0, comm, NULL),
          "peerWinOffset = 4097");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, other_win, 0, 0, 0, 0, comm, NULL),
          "is not a window of comm");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, peer, (ncclWindow_t)(void*)stray, 0, 0, 0, 0, comm,
                        NULL),
          "is not a window of comm");
  REFUSED(ncclPutSignal(wbuf, 8, ncclInt8, 2, win, 0, 0, 0, 0, comm, NULL), "peer = 2");
  REFUSED(ncclPutSignal(wbuf, 8, (ncclDataType_t)99, peer, win, 0, 0, 0, 0, comm, NULL),
          "datatype = 99");
  REFUSED(ncclPutSignal(NULL, 8, ncclInt8, peer, win, 0, 0, 0, 0, comm, NULL), "localbuff");
  REFUSED(ncclSignal(peer, 2, 0, 0, comm, NULL), "sigIdx = 2");
  REFUSED(ncclSignal(peer, 0, 1, 0, comm, NULL), "ctx = 1");
  REFUSED(ncclSignal(peer, 0, 0, 1, comm, NULL), "flags = 1");
  REFUSED(ncclSignal(-1, 0, 0, 0, comm, NULL), "peer = -1");
  ncclWaitSignalDesc_t d[2] = {{1, peer, 0, 0}, {1, peer, 0, 0}};
  REFUSED(ncclWaitSignal(0, d, comm, NULL), "nDesc = 0");
  REFUSED(ncclWaitSignal(1, NULL, comm, NULL), "signalDescs");
  d[1].sigIdx = 1;
  REFUSED(ncclWaitSignal(2, d, comm, NULL), "signalDescs[1].sigIdx = 1");
  d[1].sigIdx = 0;
  d[1].ctx = 5;
  REFUSED(ncclWaitSignal(2, d, comm, NULL), "signalDescs[1].ctx = 5");
  d[1].ctx = 0;
  d[1].opCnt = 0;
  REFUSED(ncclWaitSignal(2, d, comm, NULL), "signalDescs[1].opCnt = 0");
  d[1].opCnt = 1;
  d[0].peer = 7;
  REFUSED(ncclWaitSignal(2, d, comm, NULL), "signalDescs[0].peer = 7");
  d[0].peer = peer;
  void* p = NULL;
  REFUSED(ncclWinGetUserPtr(comm, other_win, &p), "is not a window of comm");
  EXPECT_OK(ncclWinGetUserPtr(comm, plain_win, &p));
  EXPECT(p == plain);
  EXPECT_OK(ncclWinGetUserPtr(other, other_win, &p));
  EXPECT(p == obuf);

  /* nothing above was sent: one put and one signal from the peer are what the wait finds */
  for (int i = 0; i < 8; i++) wbuf[WBYTES / 2 + i] = (char)(rank * 16 + i + 1);
  EXPECT_OK(ncclPutSignal(wbuf + WBYTES / 2, 8, ncclInt8, peer, win, 100, 0, 0, 0, comm, NULL));
  EXPECT_OK(ncclSignal(peer, 0, 0, 0, comm, NULL));
  EXPECT_OK(ncclWaitSignal(2, d, comm, NULL));
  for (int i = 0; i < 8; i++) EXPECT_EQ_INT(wbuf[100 + i], peer * 16 + i + 1);

  EXPECT_OK(ncclCommWindowDeregister(other, other_win));
  EXPECT_OK(ncclCommWindowDeregister(comm, plain_win));
  EXPECT_OK(ncclCommWindowDeregister(comm, win));
  EXPECT_OK(ncclCommDestroy(other));
  EXPECT_OK(ncclCommDestroy(comm));
  free(wbuf);
  free(plain);
  free(obuf);
  return 0;
}

int main(void) {
  test_require_weft_lib();
  return test_fork_ranks(2, rank_main, NULL, 60);
}
