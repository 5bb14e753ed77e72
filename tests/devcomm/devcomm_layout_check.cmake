# devcomm_layout_<version> (run with cmake -P): weft's device-API layouts against NVIDIA's
# headers of one release, field by field.
#   -DVERSION=2.30.7 -DLAYOUT=V2_30   the nvidia-nccl-cu13 release and weft's layout for it
#   [-DABI_HEADER=devcomm_v2_29.h]    weft's frozen header, when not devcomm_<layout>.h
#   -DWHEELS=<dir>    wheel cache: a wheel already there is used, else pip downloads it there
#   -DPYTHON=<python3> -DCC=<C compiler> -DCXX=<C++ compiler> -DCUDA_INCLUDE=<dir with cuda.h>
#   -DSRC=<project source dir> -DWORK=<scratch dir>
#   [-DWEFT_INCLUDE=<dir with weft's nccl_device.h>]  also compare weft's own header
# A wheel that cannot be fetched fails the test. Without cuda.h (NVIDIA's headers include it)
# the test is skipped ("SKIP:"). A mismatch names the struct, the field and both offsets.
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/devcomm_wheel.cmake)
if(devcomm_skip)
  return()
endif()

# ---- the probes ---------------------------------------------------------------------------
set(probe "${SRC}/tests/devcomm/devcomm_layout_probe.c")
function(run_probe side out)
  set(exe "${WORK}/probe_${side}_${LAYOUT}")
  execute_process(COMMAND ${ARGN} -DPROBE_${LAYOUT} -I "${SRC}/tests/devcomm" "${probe}" -o "${exe}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${side} probe does not compile:\n${log}")
  endif()
  execute_process(COMMAND "${exe}" RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${side} probe failed (exit ${rc}): ${log}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

run_probe(nvidia nv_text "${CXX}" -x c++ -std=c++17 -w -DPROBE_NVIDIA -I "${nv_include}"
  -isystem "${CUDA_INCLUDE}")
string(TOLOWER "${LAYOUT}" layout_lower)
set(sides weft_abi)
if(NOT ABI_HEADER) # the frozen header of LAYOUT, when its name is not devcomm_<layout>.h
  set(ABI_HEADER "devcomm_${layout_lower}.h")
endif()
set(label_weft_abi "abi/devcomm/${ABI_HEADER}")
run_probe(weft_abi weft_abi_text "${CC}" -x c -std=c11 -Wall -Wextra -Werror -DPROBE_WEFT_ABI
  -I "${SRC}/abi")
if(WEFT_INCLUDE)
  list(APPEND sides weft_header)
  set(label_weft_header "weft's nccl_device.h")
  run_probe(weft_header weft_header_text "${CXX}" -x c++ -std=c++17 -Wall -Wextra -Werror
    -DPROBE_WEFT_HEADER -I "${WEFT_INCLUDE}" -I "${SRC}/abi" -isystem "${CUDA_INCLUDE}")
endif()

# ---- compare ------------------------------------------------------------------------------
# The probes print keys; NVIDIA's names make the message.
set(names DevComm=ncclDevComm ResourceWindow=ncclResourceWindow_vidmem Window=ncclWindow_vidmem
  WindowTable=ncclDevCommWindowTable WindowEntry=ncclDevCommWindowTable::Entry
  Requirements=ncclDevCommRequirements ResourceReq=ncclDevResourceRequirements
  TeamReq=ncclTeamRequirements Properties=ncclCommProperties LsaBarrier=ncclLsaBarrierHandle
  GinBarrier=ncclGinBarrierHandle Multimem=ncclMultimemHandle Team=ncclTeam
  CftBarrier=ncclCftBarrierHandle)
function(nvidia_name key out)
  string(REGEX MATCH "^[A-Za-z]+" head "${key}") # the struct key
  string(LENGTH "${head}" n)
  string(SUBSTRING "${key}" ${n} -1 rest)
  foreach(pair ${names})
    if(pair MATCHES "^${head}=(.*)$")
      set(${out} "${CMAKE_MATCH_1}${rest}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "${key}" PARENT_SCOPE)
endfunction()

# "Key.field 80 8" / "Key sizeof 248 align 8" -> key and value
function(parse text prefix)
  string(REPLACE "\n" ";" lines "${text}")
  set(keys)
  foreach(l ${lines})
    if(l MATCHES "^([A-Za-z0-9_.]+) ([0-9]+ [0-9]+|sizeof [0-9]+ align [0-9]+)$")
      list(APPEND keys "${CMAKE_MATCH_1}")
      set(${prefix}_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}" PARENT_SCOPE)
    elseif(NOT l STREQUAL "")
      message(FATAL_ERROR "a probe printed a line the test cannot read: '${l}'")
    endif()
  endforeach()
  set(${prefix}_keys "${keys}" PARENT_SCOPE)
endfunction()

parse("${nv_text}" nv)
list(LENGTH nv_keys n_keys)
if(n_keys LESS 80)
  message(FATAL_ERROR "the NVIDIA probe printed ${n_keys} facts, expected over 80:\n${nv_text}")
endif()
set(bad "")
foreach(side ${sides})
  parse("${${side}_text}" w)
  foreach(k ${nv_keys})
    nvidia_name("${k}" shown)
    set(nv_v "${nv_${k}}")
    set(w_v "${w_${k}}")
    if(NOT nv_v STREQUAL w_v)
      if(nv_v MATCHES "^sizeof")
        string(APPEND bad "  ${shown}: NVIDIA ${VERSION} ${nv_v}, ${label_${side}} ${w_v}\n")
      else()
        string(REPLACE " " ";" a "${nv_v}")
        string(REPLACE " " ";" b "${w_v}")
        list(GET a 0 a_off)
        list(GET a 1 a_size)
        if(w_v STREQUAL "")
          string(APPEND bad "  ${shown}: NVIDIA ${VERSION} offset ${a_off} size ${a_size}, "
            "missing in ${label_${side}}\n")
        else()
          list(GET b 0 b_off)
          list(GET b 1 b_size)
          string(APPEND bad "  ${shown}: NVIDIA ${VERSION} offset ${a_off} size ${a_size}, "
            "${label_${side}} offset ${b_off} size ${b_size}\n")
        endif()
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "device-API layout differs from NVIDIA ${VERSION}:\n${bad}")
endif()
list(JOIN sides ", " sides_text)
message("${n_keys} sizes and offsets of NVIDIA ${VERSION} match (${sides_text})")
