# ABI layout tests: weft's abi/ headers against the reference facts, against NVIDIA's installed
# nccl.h, and compiled on their own in strict C11/C++ modes. Included by tests/CMakeLists.txt.
# The cmake -P scripts live in scripts/ so that the tests/*/*.cmake glob does not include them.

set(WEFT_ABI_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(WEFT_NVIDIA_NCCL_H /usr/local/cuda/include/nccl.h CACHE FILEPATH
  "NVIDIA's nccl.h for tests/abi to compare against (its directory must hold the CUDA headers)")
get_filename_component(WEFT_NVIDIA_INCLUDE_DIR "${WEFT_NVIDIA_NCCL_H}" DIRECTORY)

# Sizes, offsets, values and signatures from the reference, as static_asserts in plain C.
weft_add_test(NAME abi_headers_plain_c
  SOURCES ${WEFT_ABI_TEST_DIR}/abi_headers_plain_c.c
  LABELS unit)

# weft's nccl.h against NVIDIA's, fact by fact. The NVIDIA side is its own object, built with the
# CUDA include directory on that file only; it uses types and macros, so nothing links cudart.
if(EXISTS "${WEFT_NVIDIA_NCCL_H}" AND EXISTS "${WEFT_NVIDIA_INCLUDE_DIR}/cuda_runtime.h")
  weft_add_test(NAME abi_matches_nvidia_header
    SOURCES ${WEFT_ABI_TEST_DIR}/abi_matches_nvidia_header.c
            ${WEFT_ABI_TEST_DIR}/abi_table_nvidia.c
            ${WEFT_ABI_TEST_DIR}/abi_table_weft.c
    LABELS unit)
  target_compile_definitions(abi_matches_nvidia_header PRIVATE
    WEFT_NVIDIA_NCCL_H="${WEFT_NVIDIA_NCCL_H}")
  set_source_files_properties(${WEFT_ABI_TEST_DIR}/abi_table_nvidia.c PROPERTIES
    INCLUDE_DIRECTORIES "${WEFT_NVIDIA_INCLUDE_DIR}")
else()
  weft_add_test(NAME abi_matches_nvidia_header
    SOURCES ${WEFT_ABI_TEST_DIR}/abi_matches_nvidia_header.c
    LABELS unit)
  target_compile_definitions(abi_matches_nvidia_header PRIVATE
    WEFT_NO_NVIDIA_NCCL_H="${WEFT_NVIDIA_NCCL_H}")
endif()
target_include_directories(abi_matches_nvidia_header PRIVATE ${WEFT_ABI_TEST_DIR})

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
