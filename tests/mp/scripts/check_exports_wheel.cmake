# api_exports_match_nccl_2_30_7 (run with cmake -P): weft's libnccl.so.2 exports exactly the
# nccl*/pnccl* functions NVIDIA's ${VERSION} libnccl.so.2 exports (`nm -D --defined-only` of the
# library in NVIDIA's PyPI wheel, fetched at test time into the build tree by
# tests/abi/scripts/nvidia_wheel.cmake; a failed fetch fails the test), but for the names listed
# below as still to come. It names every name missing from weft, every extra one, and every
# listed name that weft exports by now (take it off the list).
#   -DOURS=<weft's libnccl.so.2> -DWORK=<build folder> -DVERSION=2.30.7
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../abi/scripts/nvidia_wheel.cmake)

# NVIDIA's exports that other open issues add; each name stands for itself and its pnccl twin.
# The list is emptied when they merge: a listed name weft exports fails this test, as does a
# missing name that is not listed.
set(still_to_come
  # issue 39, NCCL's device API (host side)
  ncclCommQueryProperties
  ncclGetLsaDevicePointer
  ncclGetLsaMultimemDevicePointer
  ncclGetMultimemDevicePointer
  ncclGetPeerDevicePointer
  ncclGinInboxA2ACreateRequirement
  ncclGinOutboxCreateRequirement
)
set(expected_missing)
foreach(n IN LISTS still_to_come)
  list(APPEND expected_missing ${n} p${n})
endforeach()

nvidia_wheel(${WORK} ${VERSION} nv)
find_program(NM nm REQUIRED)
function(exported lib out)
  execute_process(COMMAND ${NM} -D --defined-only ${lib} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm -D --defined-only failed on ${lib}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [TW] p?nccl[A-Za-z0-9_]*" hits "${text}")
  set(names)
  foreach(h IN LISTS hits)
    string(REGEX REPLACE "^[0-9a-f]+ [TW] " "" n "${h}")
    list(APPEND names ${n})
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(SORT names)
  set(${out} ${names} PARENT_SCOPE)
endfunction()
exported(${nv}/lib/libnccl.so.2 theirs)
exported(${OURS} ours)
list(LENGTH theirs n_theirs)
list(LENGTH ours n_ours)
if(n_theirs LESS 100)
  message(FATAL_ERROR "only ${n_theirs} nccl* exports read from ${nv}/lib/libnccl.so.2")
endif()

set(missing)
set(listed_but_present)
foreach(n IN LISTS theirs)
  list(FIND ours ${n} i)
  list(FIND expected_missing ${n} e)
  if(i EQUAL -1 AND e EQUAL -1)
    list(APPEND missing ${n})
  elseif(NOT i EQUAL -1 AND NOT e EQUAL -1)
    list(APPEND listed_but_present ${n})
  endif()
endforeach()
set(extra)
foreach(n IN LISTS ours)
  list(FIND theirs ${n} i)
  if(i EQUAL -1)
    list(APPEND extra ${n})
  endif()
endforeach()
set(not_nvidias)
foreach(n IN LISTS expected_missing)
  list(FIND theirs ${n} i)
  if(i EQUAL -1)
    list(APPEND not_nvidias ${n})
  endif()
endforeach()

message("NVIDIA ${VERSION}: ${n_theirs} nccl*/pnccl* exports; weft: ${n_ours}")
set(failed FALSE)
# Names the list `var` holds, after `what`; any name fails the test.
macro(report var what)
  if(${var})
    string(REPLACE ";" " " t "${${var}}")
    message("${what}: ${t}")
    set(failed TRUE)
  endif()
endmacro()
report(missing "missing from weft (and not listed as to come)")
report(extra "exported by weft, not by NVIDIA ${VERSION}")
report(listed_but_present "listed as to come but exported by weft now (take them off the list)")
report(not_nvidias "listed as to come but not exported by NVIDIA ${VERSION}")
list(LENGTH expected_missing n_listed)
if(failed)
  message(FATAL_ERROR "weft's export list differs from NVIDIA's ${VERSION}")
endif()
message(STATUS "weft exports NVIDIA's ${VERSION} list but the ${n_listed} names still to come")
