/* Prints the size and alignment of every device-API struct and the offset and size of each of
 * their fields (devcomm_layout_fields.h), one per line: "Key sizeof N align A" and
 * "Key.field offset size". Compiled once per side and version:
 *   PROBE_NVIDIA        NVIDIA's nccl_device.h (as C++, the wheel's include dir on the path)
 *   PROBE_WEFT_ABI      weft's frozen C11 layouts, abi/nccl_devcomm.h (as C)
 *   PROBE_WEFT_HEADER   weft's own nccl_device.h (as C++)
 * with PROBE_V2_29_2, PROBE_V2_29_7, PROBE_V2_30 or PROBE_V2_32 saying which fields exist.
 * The test script compares the outputs line by line. */
#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#include <cstdio>
#define PROBE_ALIGNOF(t) alignof(t)
#else
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#define PROBE_ALIGNOF(t) _Alignof(t)
#endif

#include "devcomm_layout_fields.h"

#if defined(PROBE_NVIDIA) || defined(PROBE_WEFT_HEADER)
#include <nccl_device.h>
#define PROBE_T_DevComm ncclDevComm
#define PROBE_T_ResourceWindow ncclResourceWindow_vidmem
#define PROBE_T_Window ncclWindow_vidmem
#define PROBE_T_WindowTable ncclDevCommWindowTable
#define PROBE_T_WindowEntry ncclDevCommWindowTable::Entry
#define PROBE_T_Requirements ncclDevCommRequirements
#define PROBE_T_ResourceReq ncclDevResourceRequirements
#define PROBE_T_TeamReq ncclTeamRequirements
#define PROBE_T_Properties ncclCommProperties
#define PROBE_T_LsaBarrier ncclLsaBarrierHandle
#define PROBE_T_GinBarrier ncclGinBarrierHandle
#define PROBE_T_Multimem ncclMultimemHandle
#define PROBE_T_Team ncclTeam
#define PROBE_T_CftBarrier ncclCftBarrierHandle
#elif defined(PROBE_WEFT_ABI)
#include "nccl_devcomm.h"
/* PROBE_V: structs shared by a release's patch levels; PROBE_VP: those that differ. */
#if defined(PROBE_V2_30)
#define PROBE_V(name) name##_v2_30_t
#define PROBE_VP(name) name##_v2_30_t
#elif defined(PROBE_V2_32)
#define PROBE_V(name) name##_v2_32_t
#define PROBE_VP(name) name##_v2_32_t
#elif defined(PROBE_V2_29_7)
#define PROBE_V(name) name##_v2_29_t
#define PROBE_VP(name) name##_v2_29_7_t
#else
#define PROBE_V(name) name##_v2_29_t
#define PROBE_VP(name) name##_v2_29_2_t
#endif
#define PROBE_T_DevComm PROBE_VP(ncclDevComm)
#define PROBE_T_ResourceWindow PROBE_V(ncclResourceWindow)
#define PROBE_T_Window PROBE_V(ncclWindowVidmem)
#define PROBE_T_WindowTable PROBE_V(ncclDevWindowTable)
#define PROBE_T_WindowEntry PROBE_V(ncclDevWindowTableEntry)
#define PROBE_T_Requirements PROBE_VP(ncclDevCommRequirements)
#define PROBE_T_ResourceReq PROBE_V(ncclDevResourceRequirements)
#define PROBE_T_TeamReq PROBE_V(ncclTeamRequirements)
#define PROBE_T_Properties PROBE_VP(ncclCommProperties)
#define PROBE_T_LsaBarrier PROBE_V(ncclLsaBarrierHandle)
#define PROBE_T_GinBarrier PROBE_V(ncclGinBarrierHandle)
#define PROBE_T_Multimem PROBE_V(ncclMultimemHandle)
#define PROBE_T_Team ncclTeam_t
#define PROBE_T_CftBarrier PROBE_V(ncclCftBarrierHandle)
#else
#error "define PROBE_NVIDIA, PROBE_WEFT_ABI or PROBE_WEFT_HEADER"
#endif

#define PROBE_S(key)                                                           \
  printf("%s sizeof %zu align %zu\n", #key, sizeof(PROBE_T_##key),             \
         (size_t)PROBE_ALIGNOF(PROBE_T_##key));
#define PROBE_F(key, field)                                                    \
  printf("%s.%s %zu %zu\n", #key, #field, offsetof(PROBE_T_##key, field),      \
         sizeof(((PROBE_T_##key*)0)->field));

int main(void) {
#if defined(PROBE_V2_30)
  DEVCOMM_LAYOUT_COMMON(PROBE_S, PROBE_F)
  DEVCOMM_LAYOUT_ONLY_V2_30(PROBE_S, PROBE_F)
#elif defined(PROBE_V2_32)
  DEVCOMM_LAYOUT_COMMON(PROBE_S, PROBE_F)
  DEVCOMM_LAYOUT_ONLY_V2_32(PROBE_S, PROBE_F)
#elif defined(PROBE_V2_29_7)
  DEVCOMM_LAYOUT_V2_29_SHARED(PROBE_S, PROBE_F)
  DEVCOMM_LAYOUT_ONLY_V2_29_7(PROBE_S, PROBE_F)
#elif defined(PROBE_V2_29_2)
  DEVCOMM_LAYOUT_V2_29_SHARED(PROBE_S, PROBE_F)
#else
#error "define PROBE_V2_29_2, PROBE_V2_29_7, PROBE_V2_30 or PROBE_V2_32"
#endif
  return 0;
}
