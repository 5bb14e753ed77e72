# gin_gfd_matches_nvidia_2.30.7 (run with cmake -P): abi/gin/gin_proxy_v2_30.h against NVIDIA's
# 2.30.7 proxy GIN header, compiled together into one probe (gin_gfd_probe.cpp) that compares
# the per-context struct field by field and descriptors built both ways on random fields.
# NVIDIA's header needs no CUDA header, so this runs wherever a C++ compiler does.
#   -DVERSION=2.30.7 -DWHEELS=<dir> -DCXX=<C++ compiler> -DSRC=<project source> -DWORK=<dir>
#   [-DSEED=<n>]
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../abi/scripts/nvidia_wheel.cmake)
file(MAKE_DIRECTORY "${WORK}")
nvidia_wheel("${WHEELS}" "${VERSION}" nv HEADERS_ONLY)
if(NOT SEED)
  string(RANDOM LENGTH 9 ALPHABET 0123456789 SEED)
endif()
message("seed ${SEED} (rerun with -DSEED=${SEED})")
execute_process(COMMAND "${CXX}" -std=c++17 -Wall -Wextra -Werror -isystem "${nv}/include"
    -I "${SRC}/abi" "${SRC}/tests/gin/gin_gfd_probe.cpp" -o "${WORK}/gin_gfd_probe"
  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the GFD probe does not compile against NVIDIA ${VERSION}:\n${log}")
endif()
execute_process(COMMAND "${WORK}/gin_gfd_probe" ${SEED}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "abi/gin/gin_proxy_v2_30.h differs from NVIDIA ${VERSION} (above)")
endif()
