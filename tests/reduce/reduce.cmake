# Host reductions (core/host/reduce*.c, dtype_convert.c, redop.c; the datatype table is in weft_util), linked statically into each test.
set(WEFT_REDUCE_SOURCES
  ${PROJECT_SOURCE_DIR}/core/host/dtype_convert.c
  ${PROJECT_SOURCE_DIR}/core/host/redop.c
  ${PROJECT_SOURCE_DIR}/core/host/reduce.c
  ${PROJECT_SOURCE_DIR}/core/host/reduce_int.c
  ${PROJECT_SOURCE_DIR}/core/host/reduce_float.c
  ${PROJECT_SOURCE_DIR}/core/host/reduce_narrow.c)

weft_add_test(NAME reduce_conversions LABELS unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/reduce_conversions.c ${CMAKE_CURRENT_LIST_DIR}/reduce_ref.c
          ${WEFT_REDUCE_SOURCES})
weft_add_test(NAME reduce_ops LABELS unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/reduce_ops.c ${CMAKE_CURRENT_LIST_DIR}/reduce_ref.c
          ${WEFT_REDUCE_SOURCES})
weft_add_test(NAME reduce_redop LABELS unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/reduce_redop.c ${CMAKE_CURRENT_LIST_DIR}/reduce_ref.c
          ${WEFT_REDUCE_SOURCES})

# The same checks on the baseline loops only: on an AVX2 machine the tests above run the AVX2
# clones of the narrow-float kernels (reduce_kernels.h), this one the SSE2 builds.
weft_add_test(NAME reduce_ops_no_clones LABELS unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/reduce_ops.c ${CMAKE_CURRENT_LIST_DIR}/reduce_ref.c
          ${WEFT_REDUCE_SOURCES})
target_compile_definitions(reduce_ops_no_clones PRIVATE WEFT_NO_TARGET_CLONES)

# Throughput against memcpy (not a test: speed is never asserted). Build it by name.
add_executable(reduce_bench EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/reduce_bench.c
  ${WEFT_REDUCE_SOURCES})
target_link_libraries(reduce_bench PRIVATE weft_util)
set_target_properties(reduce_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
