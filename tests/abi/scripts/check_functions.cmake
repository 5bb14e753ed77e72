# abi_declares_every_nccl_function (run with cmake -P):
#   -DWEFT_NCCL_H=<weft's abi/nccl.h>   -DNVIDIA_NCCL_H=<NVIDIA's nccl.h, may not exist>
# Checks that weft's header declares (1) the 52 functions libnccl 2.28 exports (`nm -D
# libnccl.so.2.28.*`), each with its pncclX twin, and (2) every function NVIDIA's nccl.h declares,
# plus the host functions of its nccl_device headers, when those are installed.

cmake_minimum_required(VERSION 3.25)

# Function names declared in a header: identifiers starting with nccl/pnccl and followed by '('
# on a line that is not a comment or a preprocessor line. Only lines containing `only` count.
function(declared_names header only out)
  file(STRINGS "${header}" lines)
  set(names)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*(/\\*|\\*|//|#)")
      continue()
    endif()
    if(NOT only STREQUAL "" AND NOT line MATCHES "${only}")
      continue()
    endif()
    string(REGEX MATCHALL "(^|[ *])p?nccl[A-Za-z0-9_]*\\(" hits "${line}")
    foreach(h IN LISTS hits)
      string(REGEX REPLACE "^[ *]?(p?nccl[A-Za-z0-9_]*)\\($" "\\1" n "${h}")
      list(APPEND names ${n})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} ${names} PARENT_SCOPE)
endfunction()

declared_names("${WEFT_NCCL_H}" "" weft)
list(LENGTH weft n_weft)
set(errors 0)

# (1) The exported set of NCCL 2.28.9.
set(exported
  AllGather AllReduce AlltoAll Bcast Broadcast CommAbort CommCount CommCuDevice CommDeregister
  CommDestroy CommFinalize CommGetAsyncError CommInitAll CommInitRank CommInitRankConfig
  CommInitRankScalable CommRegister CommRevoke CommShrink CommSplit CommUserRank
  CommWindowDeregister CommWindowRegister DevCommCreate DevCommDestroy Gather GetErrorString
  GetLastError GetUniqueId GetVersion GinBarrierCreateRequirement GroupEnd GroupSimulateEnd
  GroupStart LLA2ACalcSlots LLA2ACreateRequirement LsaBarrierCreateRequirement MemAlloc MemFree
  Recv RedOpCreatePreMulSum RedOpDestroy Reduce ReduceScatter ResetDebugInit Scatter Send
  TeamLsa TeamRail TeamRankToLsa TeamRankToWorld TeamWorld)
list(LENGTH exported n_exported)
if(NOT n_exported EQUAL 52)
  message(FATAL_ERROR "internal: the reference list has ${n_exported} names, not 52")
endif()
foreach(f IN LISTS exported)
  foreach(n nccl${f} pnccl${f})
    if(NOT n IN_LIST weft)
      message("missing from weft's nccl.h: ${n} (exported by libnccl 2.28)")
      math(EXPR errors "${errors} + 1")
    endif()
  endforeach()
endforeach()

# Every ncclX has its pncclX and the other way round.
foreach(n IN LISTS weft)
  if(n MATCHES "^pnccl(.*)$")
    set(twin nccl${CMAKE_MATCH_1})
  else()
    set(twin p${n})
  endif()
  if(NOT twin IN_LIST weft)
    message("weft's nccl.h declares ${n} but not ${twin}")
    math(EXPR errors "${errors} + 1")
  endif()
endforeach()

# (2) NVIDIA's declarations, when installed.
if(EXISTS "${NVIDIA_NCCL_H}")
  declared_names("${NVIDIA_NCCL_H}" "" nv)
  get_filename_component(nv_dir "${NVIDIA_NCCL_H}" DIRECTORY)
  file(GLOB dev_headers "${nv_dir}/nccl_device/*.h")
  foreach(h IN LISTS dev_headers)
    # Host entry points only; the inline host/device helpers are not library symbols.
    declared_names("${h}" "__host__ [A-Za-z_]+ nccl" dev)
    list(APPEND nv ${dev})
  endforeach()
  list(REMOVE_DUPLICATES nv)
  list(LENGTH nv n_nv)
  foreach(n IN LISTS nv)
    if(NOT n IN_LIST weft)
      message("missing from weft's nccl.h: ${n} (declared by ${NVIDIA_NCCL_H} or nccl_device/)")
      math(EXPR errors "${errors} + 1")
    endif()
  endforeach()
  message("compared with ${n_nv} functions declared by NVIDIA's headers")
else()
  message("NVIDIA's nccl.h not found at '${NVIDIA_NCCL_H}': checked the reference list only")
endif()

if(errors GREATER 0)
  message(FATAL_ERROR "${errors} declaration problems")
endif()
message("ok: weft's nccl.h declares ${n_weft} functions")
