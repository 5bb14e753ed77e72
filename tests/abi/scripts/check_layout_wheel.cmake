# abi_matches_nvidia_header (run with cmake -P): every size, offset, enum value, macro value and
# initializer field of tests/abi/abi_table.h, expanded once against NVIDIA's nccl.h of NCCL
# ${VERSION} (its PyPI wheel, fetched into the build tree by nvidia_wheel.cmake) and once
# against weft's abi/nccl.h, must be equal. Compiled here, at test time, since the header comes
# with the wheel: -DCC=<C compiler> -DABI_DIR=<weft's abi/> -DTEST_DIR=<tests/abi>
# -DWORK=<build folder> -DVERSION=2.30.7. NVIDIA's header includes the CUDA runtime's headers
# for cudaStream_t alone; stand-ins declaring it are written here, so no CUDA is needed.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/nvidia_wheel.cmake)
nvidia_wheel(${WORK} ${VERSION} nv)

set(out ${WORK}/abi_layout_${VERSION})
file(MAKE_DIRECTORY ${out}/cuda)
file(WRITE ${out}/cuda/cuda_runtime.h
  "#pragma once\n#include <stddef.h>\ntypedef struct CUstream_st* cudaStream_t;\n")
file(WRITE ${out}/cuda/cuda_fp16.h "#pragma once\n")
file(WRITE ${out}/cuda/cuda_bf16.h "#pragma once\n")
set(flags -std=c11 -Wall -Wextra -Werror -I${TEST_DIR})
execute_process(COMMAND ${CC} ${flags} -I${out}/cuda
    "-DWEFT_NVIDIA_NCCL_H=\"${nv}/include/nccl.h\"" -c ${TEST_DIR}/abi_table_nvidia.c
    -o ${out}/nvidia.o
  RESULT_VARIABLE rc1 ERROR_VARIABLE e1)
execute_process(COMMAND ${CC} ${flags} -I${ABI_DIR} -c ${TEST_DIR}/abi_table_weft.c
    -o ${out}/weft.o
  RESULT_VARIABLE rc2 ERROR_VARIABLE e2)
execute_process(COMMAND ${CC} ${flags} "-DWEFT_NVIDIA_NCCL_H=\"${nv}/include/nccl.h\""
    ${TEST_DIR}/abi_matches_nvidia_header.c ${out}/nvidia.o ${out}/weft.o -o ${out}/compare
  RESULT_VARIABLE rc3 ERROR_VARIABLE e3)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT rc3 EQUAL 0)
  message(FATAL_ERROR "building the comparison failed (a name one header lacks?):\n${e1}${e2}${e3}")
endif()
execute_process(COMMAND ${out}/compare RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
message("${o}${e}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft's nccl.h differs from NVIDIA's ${VERSION} nccl.h")
endif()
