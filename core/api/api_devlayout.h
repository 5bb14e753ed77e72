/* The device API's per-layout reading and writing (api_devlayout.c): a caller's
 * ncclDevCommRequirements read in the layout of the headers it compiled against, and its
 * ncclDevComm written in that layout (abi/nccl_devcomm.h names the layouts). Pure functions of
 * their arguments — no communicator, no CUDA — so tests can drive them without a GPU. */
#ifndef WEFT_API_DEVLAYOUT_H
#define WEFT_API_DEVLAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "nccl.h"
#include "nccl_devcomm.h"

/* What ncclDevCommCreate reads from the requirements, whichever the layout (fields a layout
 * lacks read as zero). The lists have the same layout in every version. */
typedef struct {
  const ncclDevResourceRequirements_v2_30_t* list;
  const ncclTeamRequirements_v2_30_t* teams;
  bool lsa_multimem, gin_force;
  int barriers, lsa_barriers, rail_gin_barriers, world_gin_barriers;
  int gin_signals, gin_counters, gin_connection, gin_contexts;
  int cft_barriers, cft_caps;
} devlayout_reqs;

/* Reads `reqs` (layout `layout`, not UNKNOWN, its size already checked) into *out. A 2.29
 * caller is read as NVIDIA's 2.30.7 library reads it: one asking for GIN the way 2.29 kernels
 * use it is refused (ncclInvalidUsage, a WARN naming its version: 2.29 GIN kernels need a
 * rebuild); a 2.29.2 caller's barrierCount means LSA barriers (it did not imply GIN before
 * 2.29.4) and its railGinBarrierCount is ignored. `fn` and `rank` name the WARN. */
ncclResult_t devlayout_reqs_read(const char* fn, int rank, ncclDevCommLayout_t layout,
                                 const void* reqs, devlayout_reqs* out);

/* What ncclDevCommCreate writes into the device communicator. */
typedef struct {
  uint32_t version; /* the requirements' (versioned layouts only) */
  int rank, nranks, lsa_rank, lsa_size;
  uintptr_t window_table, resource_window; /* device addresses; 0 = none */
  uintptr_t flat;                          /* the resource window's lsaFlatBase */
  uint32_t stride4g;
  uint32_t lsa_handle;
  int lsa_barriers;
  uint32_t hybrid_handle; /* versioned layouts: the (empty) hybrid LSA barrier */
  uintptr_t abort_flag;   /* device: uint32_t; layouts that have it */
  /* GIN (2.30 layout only; gin_handle 0: none): one proxy connection (gin/gin_comm.h). */
  uintptr_t gin_handle, gin_shadows;
  int gin_signals, gin_counters, gin_contexts; /* totals per context */
  uint32_t world_gin_signal0, rail_gin_signal0;
} devlayout_fill;

/* Writes ncclDevCommSizeOf(layout) bytes at `out`: the fields above where the layout has them,
 * zero everywhere else (multicast, fabric, and GIN unless gin_handle is set). */
void devlayout_write(ncclDevCommLayout_t layout, const devlayout_fill* f, void* out);

/* What ncclDevCommDestroy reads back from a device communicator of `layout`. */
void devlayout_read(ncclDevCommLayout_t layout, const void* devComm, int* rank, int* nranks,
                    uintptr_t* resource_window);
/* Its ginContextCount (0 for layouts or device communicators without GIN). */
int devlayout_gin_contexts(ncclDevCommLayout_t layout, const void* devComm);

#endif
