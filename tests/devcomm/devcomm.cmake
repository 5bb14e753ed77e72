# The device API's tests that need no GPU (label unit):
# - devcomm_layout_<version>: weft's frozen layouts (abi/nccl_devcomm.h) and weft's own
#   nccl_device.h against NVIDIA's headers of that release, struct by struct, field by field;
# - devcomm_teams_match_nvidia_2.30.7: weft's team functions answer as NVIDIA's on random input;
# - devcomm_layout_select: abi/nccl_devcomm.h's helpers (versions to layouts, reciprocals,
#   the LSA barrier's words);
# - devcomm_fill_layouts: core/api/api_devlayout.c writes each layout's device communicator at
#   NVIDIA's offsets and reads requirements (2.29 conversions included), no GPU;
# - devcomm_interop (label gpu): kernels built against weft's header and NVIDIA's 2.30.7 one
#   share LSA barriers and memory on one GPU, the ranks laid out by hand (no library);
# - devcomm_header_compiles: nvcc builds a kernel using every function of weft's nccl_device.h,
#   and its host part builds as C11 and C++11.
# NVIDIA's headers come from the nvidia-nccl-cu13 wheels, fetched from PyPI at test time into
# WEFT_NCCL_WHEEL_DIR and kept there (a wheel already there is not fetched again); a failed
# fetch fails the test. Scripts: devcomm_*_check.cmake, devcomm_header_compile.cmake.

find_program(WEFT_DEVCOMM_PYTHON NAMES python3 python)
find_program(WEFT_DEVCOMM_CXX NAMES c++ g++ clang++)
find_program(WEFT_DEVCOMM_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(CUDAToolkit_INCLUDE_DIRS)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 WEFT_DEVCOMM_CUDA_INCLUDE)
elseif(WEFT_DEVCOMM_NVCC)
  get_filename_component(nvcc_bin ${WEFT_DEVCOMM_NVCC} DIRECTORY)
  get_filename_component(WEFT_DEVCOMM_CUDA_INCLUDE ${nvcc_bin}/../include ABSOLUTE)
else()
  set(WEFT_DEVCOMM_CUDA_INCLUDE /usr/local/cuda/include)
endif()
set(devcomm_common_args -DWHEELS=${WEFT_NCCL_WHEEL_DIR} -DPYTHON=${WEFT_DEVCOMM_PYTHON}
  -DCC=${CMAKE_C_COMPILER} -DCXX=${WEFT_DEVCOMM_CXX} -DCUDA_INCLUDE=${WEFT_DEVCOMM_CUDA_INCLUDE}
  -DSRC=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/devcomm)

# 2.29.7 stands for 2.29.5 - 2.29.7; 2.29.2 (a second 206 MB wheel) is checked by the static
# asserts of abi/devcomm/devcomm_v2_29.h and by hand (docs/device-api.md).
foreach(v 2.29.7:V2_29_7 2.30.7:V2_30 2.32.6:V2_32)
  string(REPLACE ":" ";" pair ${v})
  list(GET pair 0 version)
  list(GET pair 1 layout)
  set(weft_header_arg)
  if(layout STREQUAL "V2_30") # weft's own header has the 2.30 layout
    set(weft_header_arg -DWEFT_INCLUDE=${PROJECT_SOURCE_DIR}/include)
  elseif(layout MATCHES "^V2_29")
    set(weft_header_arg -DABI_HEADER=devcomm_v2_29.h)
  endif()
  add_test(NAME devcomm_layout_${version}
    COMMAND ${CMAKE_COMMAND} -DVERSION=${version} -DLAYOUT=${layout} ${devcomm_common_args}
      ${weft_header_arg} -P ${CMAKE_CURRENT_LIST_DIR}/devcomm_layout_check.cmake)
  set_tests_properties(devcomm_layout_${version} PROPERTIES LABELS unit TIMEOUT 600
    SKIP_REGULAR_EXPRESSION "SKIP:" RESOURCE_LOCK weft_nccl_wheel_${version})
endforeach()

add_test(NAME devcomm_teams_match_nvidia_2.30.7
  COMMAND ${CMAKE_COMMAND} -DVERSION=2.30.7 ${devcomm_common_args}
    -P ${CMAKE_CURRENT_LIST_DIR}/devcomm_team_check.cmake)
set_tests_properties(devcomm_teams_match_nvidia_2.30.7 PROPERTIES LABELS unit TIMEOUT 600
  SKIP_REGULAR_EXPRESSION "SKIP:" RESOURCE_LOCK weft_nccl_wheel_2.30.7)

add_test(NAME devcomm_header_compiles
  COMMAND ${CMAKE_COMMAND} -DNVCC=${WEFT_DEVCOMM_NVCC} -DCC=${CMAKE_C_COMPILER}
    -DCXX=${WEFT_DEVCOMM_CXX} -DSRC=${PROJECT_SOURCE_DIR}
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/devcomm_header
    -P ${CMAKE_CURRENT_LIST_DIR}/devcomm_header_compile.cmake)
set_tests_properties(devcomm_header_compiles PROPERTIES LABELS unit TIMEOUT 300
  SKIP_REGULAR_EXPRESSION "SKIP:")

weft_add_test(NAME devcomm_layout_select SOURCES ${CMAKE_CURRENT_LIST_DIR}/devcomm_layout_select.c
  LABELS unit)
target_include_directories(devcomm_layout_select PRIVATE ${PROJECT_SOURCE_DIR}/abi)

weft_add_test(NAME devcomm_fill_layouts
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/devcomm_fill_layouts.c
    ${PROJECT_SOURCE_DIR}/core/api/api_devlayout.c
  LABELS unit)
target_include_directories(devcomm_fill_layouts PRIVATE ${PROJECT_SOURCE_DIR}/abi
  ${PROJECT_SOURCE_DIR}/core)

add_test(NAME devcomm_interop
  COMMAND ${CMAKE_COMMAND} -DVERSION=2.30.7 -DNVCC=${WEFT_DEVCOMM_NVCC} ${devcomm_common_args}
    -P ${CMAKE_CURRENT_LIST_DIR}/devcomm_interop_check.cmake)
set_tests_properties(devcomm_interop PROPERTIES LABELS gpu TIMEOUT 600
  SKIP_REGULAR_EXPRESSION "SKIP:" RESOURCE_LOCK weft_nccl_wheel_2.30.7)
