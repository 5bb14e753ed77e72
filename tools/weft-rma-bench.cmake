# weft-rma-bench: latency of an 8-byte put+signal+wait and bandwidth of a large put between two
# ranks (host mode; --gpu in a CUDA build: two ranks sharing GPU 0). docs/one-sided.md,
# docs/perf-notes.md. Links weft's libnccl.so.2.
add_executable(weft-rma-bench ${CMAKE_CURRENT_LIST_DIR}/rma-bench/rma_bench.c)
target_include_directories(weft-rma-bench PRIVATE ${PROJECT_SOURCE_DIR}/abi)
target_link_libraries(weft-rma-bench PRIVATE nccl)
if(WEFT_HAVE_CUDA)
  target_compile_definitions(weft-rma-bench PRIVATE WEFT_RMA_BENCH_CUDA=1)
  target_link_libraries(weft-rma-bench PRIVATE CUDA::cudart)
endif()
