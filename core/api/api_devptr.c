/* The device API's window pointer queries: where a window's byte lives for a load/store (LSA)
 * peer, and its multicast address. A window of a several-rank LSA team is reached through its
 * flat mapping (transport/transport_lsa.c): LSA rank i's byte at base + i * stride + offset,
 * the address a kernel computes; a team of one reaches its own buffer. A peer outside the LSA
 * team is "not reachable": NULL, as NCCL answers. Multicast is never enabled in weft: the
 * multimem queries answer success and NULL, as NCCL does where multicast is not supported. */
#include <stdint.h>

#include "api/api.h"
#include "transport/transport.h"
#include "util/check.h"

/* LSA rank lsa_rank's byte `offset` of the window. */
static ncclResult_t lsa_pointer(const char* fn, struct ncclComm* comm, ncclWindow_t window,
                                void* buff, const weft_window_lsa* lsa, int lsa_size,
                                int lsa_rank, size_t offset, void** out) {
  if (lsa_size == 1) {
    *out = (char*)buff + offset;
    return ncclSuccess;
  }
  if (!lsa) {
    WARN("%s: window %p of rank %d is not LSA mapped (its memory is not from ncclMemAlloc on "
         "every rank, or a mapping failed: NCCL_DEBUG_SUBSYS=REG says which)", fn,
         (void*)window, comm->rank);
    return ncclInvalidUsage;
  }
  *out = transport_window_lsa_base(lsa) + (uint64_t)lsa_rank * transport_window_lsa_stride(lsa) +
         offset;
  return ncclSuccess;
}

static ncclResult_t check_offset(const char* fn, ncclWindow_t window, size_t offset,
                                 size_t size) {
  if (offset >= size) {
    WARN("%s: offset = %zu is past the end of window %p (%zu bytes)", fn, offset, (void*)window,
         size);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* What a pointer query needs of its window; checks window and out first. */
typedef struct {
  struct ncclComm* comm;
  void* buff;
  size_t size;
  weft_window_lsa* lsa;
} found_window;

static ncclResult_t find(const char* fn, ncclWindow_t window, void** out, found_window* w) {
  WEFT_ARG_NONNULL(fn, window);
  WEFT_ARG_NONNULL(fn, out);
  return api_window_find(fn, window, &w->comm, &w->buff, &w->size, &w->lsa);
}

WEFT_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
         void** outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr) {
  const char* fn = "ncclGetLsaDevicePointer";
  found_window w;
  WEFT_CHECK(find(fn, window, outPtr, &w));
  int lsa_size, lsa_rank;
  transport_lsa_team(w.comm, &lsa_size, &lsa_rank);
  if (lsaRank < 0 || lsaRank >= lsa_size) {
    WARN("%s: lsaRank = %d is outside the LSA team of rank %d (%d ranks)", fn, lsaRank,
         w.comm->rank, lsa_size);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(check_offset(fn, window, offset, w.size));
  return lsa_pointer(fn, w.comm, window, w.buff, w.lsa, lsa_size, lsaRank, offset, outPtr);
}

WEFT_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
         void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                      void** outPtr) {
  const char* fn = "ncclGetPeerDevicePointer";
  found_window w;
  WEFT_CHECK(find(fn, window, outPtr, &w));
  if (peer < 0 || peer >= w.comm->nranks) {
    WARN("%s: peer = %d is outside 0..%d (comm %p)", fn, peer, w.comm->nranks - 1, (void*)w.comm);
    return ncclInvalidArgument;
  }
  WEFT_CHECK(check_offset(fn, window, offset, w.size));
  int lsa_size, lsa_rank;
  transport_lsa_team(w.comm, &lsa_size, &lsa_rank);
  /* The team is this rank's contiguous block of world ranks. */
  int i = lsa_rank + (peer - w.comm->rank);
  if (i < 0 || i >= lsa_size) {
    *outPtr = NULL;
    return ncclSuccess;
  }
  return lsa_pointer(fn, w.comm, window, w.buff, w.lsa, lsa_size, i, offset, outPtr);
}

WEFT_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
         void** outPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr) {
  const char* fn = "ncclGetLsaMultimemDevicePointer";
  (void)offset;
  found_window w;
  WEFT_CHECK(find(fn, window, outPtr, &w));
  *outPtr = NULL;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
         ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr) {
  const char* fn = "ncclGetMultimemDevicePointer";
  WEFT_ARG_NONNULL(fn, window);
  WEFT_ARG_NONNULL(fn, outPtr);
  (void)offset;
  if (multimem.mcBasePtr == NULL) {
    WARN("%s: multimem.mcBasePtr is NULL", fn);
    return ncclInvalidArgument;
  }
  found_window w;
  WEFT_CHECK(find(fn, window, outPtr, &w));
  *outPtr = NULL;
  return ncclSuccess;
}
