/* The device-API binary contract: how the structures that kernels built against an
 * nccl_device.h read are laid out, for every NCCL release weft fills them for (one frozen
 * header each under devcomm/), and the constants a library needs to recognise a caller's
 * layout and to fill them. Plain C11, usable from C++ and CUDA C++, no CUDA header needed.
 *
 * A caller's layout is named by the version its requirement or property struct carries
 * (the NCCL_VERSION_CODE of the headers it was compiled with, written by their initializer);
 * ncclDevCommCreate copies it into the device communicator, so ncclDevCommDestroy can read it
 * back; 2.29's device communicator has no magic and no version (devcomm/devcomm_v2_29.h) and
 * is recognised by its first word, a rank, not being NCCL_API_MAGIC. The device window
 * (ncclWindow_t) carries no version: its 2.32 layout is a superset of the 2.30 one
 * (devcomm_v2_32.h) and of 2.29's, so the library always fills the 2.32 one. */
#ifndef NCCL_DEVCOMM_H_
#define NCCL_DEVCOMM_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "devcomm/devcomm_v2_29.h"
#include "devcomm/devcomm_v2_30.h"
#include "devcomm/devcomm_v2_32.h"

/* The magic every versioned device-API struct starts with (NCCL's config magic). */
#ifndef NCCL_API_MAGIC
#define NCCL_API_MAGIC 0xcafebeef
#endif

/* weft's own headers write their NCCL_VERSION_CODE into the initializers, as NVIDIA's do, and
 * lay the structs out as 2.30 does. While weft reports 2.27.7 that code is 22707, which no
 * NVIDIA header with a device API carries (the API came in 2.28), so it names weft's 2.30
 * layout unambiguously, now and later. */
#define NCCL_DEVCOMM_WEFT_2_27_VERSION 22707

/* The head of ncclDevCommRequirements and ncclCommProperties in every layout. */
typedef struct {
  size_t size;
  uint32_t magic;
  uint32_t version;
} ncclDevVersionedHead_t;

/* The head of ncclDevComm in every layout. */
typedef struct {
  uint32_t magic;
  uint32_t version;
} ncclDevCommHead_t;

/* The layouts weft knows. */
typedef enum {
  NCCL_DEVCOMM_LAYOUT_UNKNOWN = 0,
  NCCL_DEVCOMM_LAYOUT_V2_30 = 1,
  NCCL_DEVCOMM_LAYOUT_V2_32 = 2,
  NCCL_DEVCOMM_LAYOUT_V2_29_2 = 3, /* 2.29.2, 2.29.3 */
  NCCL_DEVCOMM_LAYOUT_V2_29_7 = 4  /* 2.29.5 - 2.29.7 */
} ncclDevCommLayout_t;

/* The layout a caller compiled against `version` gets; UNKNOWN for a version no frozen header
 * describes (the caller is refused). */
static inline ncclDevCommLayout_t ncclDevCommLayoutOf(uint32_t version) {
  if (version >= NCCL_DEVCOMM_V2_30_MIN_VERSION && version <= NCCL_DEVCOMM_V2_30_MAX_VERSION)
    return NCCL_DEVCOMM_LAYOUT_V2_30;
  if (version == NCCL_DEVCOMM_WEFT_2_27_VERSION) return NCCL_DEVCOMM_LAYOUT_V2_30;
  if (version >= NCCL_DEVCOMM_V2_32_MIN_VERSION && version <= NCCL_DEVCOMM_V2_32_MAX_VERSION)
    return NCCL_DEVCOMM_LAYOUT_V2_32;
  if (version >= NCCL_DEVCOMM_V2_29_2_MIN_VERSION && version <= NCCL_DEVCOMM_V2_29_2_MAX_VERSION)
    return NCCL_DEVCOMM_LAYOUT_V2_29_2;
  if (version >= NCCL_DEVCOMM_V2_29_7_MIN_VERSION && version <= NCCL_DEVCOMM_V2_29_7_MAX_VERSION)
    return NCCL_DEVCOMM_LAYOUT_V2_29_7;
  return NCCL_DEVCOMM_LAYOUT_UNKNOWN;
}

/* Whether a layout's ncclDevComm starts with magic and version (2.30 on) or not (2.29). */
static inline int ncclDevCommLayoutVersioned(ncclDevCommLayout_t layout) {
  return layout == NCCL_DEVCOMM_LAYOUT_V2_30 || layout == NCCL_DEVCOMM_LAYOUT_V2_32;
}

/* The layout of a device communicator the library filled (its first 8 bytes, `head`): a
 * versioned one by its version, UNKNOWN for a version weft does not know; one whose first word
 * is not NCCL_API_MAGIC is 2.29's, where that word is a rank. 2.29.2's and 2.29.7's cannot be
 * told apart, and need not be: 2.29.2's is a prefix of 2.29.7's, so this answers V2_29_2. */
static inline ncclDevCommLayout_t ncclDevCommLayoutOfDevComm(const ncclDevCommHead_t* head) {
  if (head->magic == NCCL_API_MAGIC) {
    ncclDevCommLayout_t l = ncclDevCommLayoutOf(head->version);
    return ncclDevCommLayoutVersioned(l) ? l : NCCL_DEVCOMM_LAYOUT_UNKNOWN;
  }
  return NCCL_DEVCOMM_LAYOUT_V2_29_2;
}

/* Bytes of each layout's structs, by layout (0 for UNKNOWN). */
static inline size_t ncclDevCommSizeOf(ncclDevCommLayout_t layout) {
  return layout == NCCL_DEVCOMM_LAYOUT_V2_30   ? sizeof(ncclDevComm_v2_30_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_32   ? sizeof(ncclDevComm_v2_32_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_2 ? sizeof(ncclDevComm_v2_29_2_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_7 ? sizeof(ncclDevComm_v2_29_7_t)
                                                 : 0;
}
static inline size_t ncclDevCommRequirementsSizeOf(ncclDevCommLayout_t layout) {
  return layout == NCCL_DEVCOMM_LAYOUT_V2_30   ? sizeof(ncclDevCommRequirements_v2_30_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_32   ? sizeof(ncclDevCommRequirements_v2_32_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_2 ? sizeof(ncclDevCommRequirements_v2_29_2_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_7 ? sizeof(ncclDevCommRequirements_v2_29_7_t)
                                                 : 0;
}
static inline size_t ncclCommPropertiesSizeOf(ncclDevCommLayout_t layout) {
  return layout == NCCL_DEVCOMM_LAYOUT_V2_30   ? sizeof(ncclCommProperties_v2_30_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_32   ? sizeof(ncclCommProperties_v2_32_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_2 ? sizeof(ncclCommProperties_v2_29_2_t)
         : layout == NCCL_DEVCOMM_LAYOUT_V2_29_7 ? sizeof(ncclCommProperties_v2_29_7_t)
                                                 : 0;
}

/* The reciprocal kernels divide by (the *_rcp32 fields): floor(2^32 / n), which is 0 for
 * n = 1 (kernels then take the dividend as the quotient). n must be > 0. */
static inline uint32_t ncclDevCommRcp32(uint32_t n) {
  return (uint32_t)(UINT64_C(0x100000000) / n);
}

/* Resource buffers: handle h is the byte offset h * NCCL_DEVCOMM_RESOURCE_UNIT in the resource
 * window; each rank's copy is at lsaFlatBase + lsaRank * stride4G * 4 GiB. */
#define NCCL_DEVCOMM_RESOURCE_UNIT 128

/* One 4 GiB unit of the flat LSA mapping (stride4G, lsaPeerDelta4G). */
#define NCCL_DEVCOMM_4G (UINT64_C(1) << 32)

/* An LSA barrier handle's buffer: nBarriers barriers of a team of nRanks, uint32_t words, as
 * kernels index it (word offsets from the buffer's start):
 *   [b]                          multimem epoch of barrier b (this rank's copy only)
 *   [nBarriers + b]              unicast epoch of barrier b (this rank's copy only)
 *   [2 nBarriers + b]            multimem inbox of barrier b
 *   [3 nBarriers + b nRanks + p] unicast inbox of barrier b, written by team rank p
 * An arrive stores epoch+1 into every peer's inbox slot for this rank; a wait reads its own
 * slots until each reaches epoch+1 (compared as a rolling 32-bit counter); the session's end
 * stores the epoch back. The library zeroes the buffer at ncclDevCommCreate. */
#define NCCL_LSA_BARRIER_WORDS(nBarriers, nRanks) (3 * (nBarriers) + (nBarriers) * (nRanks))
#define NCCL_LSA_BARRIER_BYTES(nBarriers, nRanks) \
  ((size_t)NCCL_LSA_BARRIER_WORDS(nBarriers, nRanks) * sizeof(uint32_t))
#define NCCL_LSA_BARRIER_ALIGN sizeof(uint32_t)
#define NCCL_LSA_BARRIER_MC_EPOCH(nBarriers, b) (b)
#define NCCL_LSA_BARRIER_UC_EPOCH(nBarriers, b) ((nBarriers) + (b))
#define NCCL_LSA_BARRIER_MC_INBOX(nBarriers, b) (2 * (nBarriers) + (b))
#define NCCL_LSA_BARRIER_UC_INBOX(nBarriers, nRanks, b, p) \
  (3 * (nBarriers) + (b) * (nRanks) + (p))

#endif
