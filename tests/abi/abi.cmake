# ABI layout tests: weft's abi/ headers against the reference facts, against NVIDIA's 2.30.7
# nccl.h (its wheel, fetched at test time), and compiled on their own in strict C11/C++ modes. Included by tests/CMakeLists.txt.
# The cmake -P scripts live in scripts/ so that the tests/*/*.cmake glob does not include them.

set(WEFT_ABI_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(WEFT_NVIDIA_NCCL_H /usr/local/cuda/include/nccl.h CACHE FILEPATH
  "NVIDIA's nccl.h for tests/abi to compare against (its directory must hold the CUDA headers)")
get_filename_component(WEFT_NVIDIA_INCLUDE_DIR "${WEFT_NVIDIA_NCCL_H}" DIRECTORY)

# Sizes, offsets, values and signatures from the reference, as static_asserts in plain C.
weft_add_test(NAME abi_headers_plain_c
  SOURCES ${WEFT_ABI_TEST_DIR}/abi_headers_plain_c.c
  LABELS unit)

# weft's nccl.h against NVIDIA's 2.30.7 nccl.h, fact by fact (abi_table.h). The header comes
# from NVIDIA's PyPI wheel, fetched at test time into the build tree (cached there; a failed
# fetch fails the test), and the comparison is compiled then (scripts/check_layout_wheel.cmake).
# The installed CUDA toolkit's nccl.h (WEFT_NVIDIA_NCCL_H, 2.28) is no reference for the layout
# any more: weft's ncclConfig_t is 2.30's 96 bytes.
set(WEFT_NVIDIA_WHEEL_VERSION 2.30.7)
add_test(NAME abi_matches_nvidia_header
  COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DABI_DIR=${PROJECT_SOURCE_DIR}/abi
    -DTEST_DIR=${WEFT_ABI_TEST_DIR} -DWORK=${WEFT_NCCL_WHEEL_DIR}
    -DVERSION=${WEFT_NVIDIA_WHEEL_VERSION}
    -P ${WEFT_ABI_TEST_DIR}/scripts/check_layout_wheel.cmake)
set_tests_properties(abi_matches_nvidia_header PROPERTIES LABELS unit TIMEOUT 900)

# Every function NCCL 2.28 exports or NVIDIA's headers declare is declared by weft's nccl.h.
add_test(NAME abi_declares_every_nccl_function
  COMMAND ${CMAKE_COMMAND}
    -DWEFT_NCCL_H=${PROJECT_SOURCE_DIR}/abi/nccl.h
    -DNVIDIA_NCCL_H=${WEFT_NVIDIA_NCCL_H}
    -P ${WEFT_ABI_TEST_DIR}/scripts/check_functions.cmake)
set_tests_properties(abi_declares_every_nccl_function PROPERTIES LABELS unit TIMEOUT 60)

# Each header compiles alone as strict C11 and C++, and beside cuda_runtime.h.
find_program(WEFT_ABI_CXX NAMES c++ g++ clang++)
set(abi_cxx_arg)
if(WEFT_ABI_CXX)
  set(abi_cxx_arg -DCXX=${WEFT_ABI_CXX})
endif()
add_test(NAME abi_headers_compile_strict
  COMMAND ${CMAKE_COMMAND}
    -DABI_DIR=${PROJECT_SOURCE_DIR}/abi
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/abi_headers_compile_strict
    -DCC=${CMAKE_C_COMPILER} ${abi_cxx_arg}
    -DCUDA_INCLUDE=${WEFT_NVIDIA_INCLUDE_DIR}
    -P ${WEFT_ABI_TEST_DIR}/scripts/check_headers_compile.cmake)
set_tests_properties(abi_headers_compile_strict PROPERTIES LABELS unit TIMEOUT 120)
