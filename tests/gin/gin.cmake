# The proxy GIN type (core/gin):
# - gin_gfd_matches_nvidia_2.30.7 (label unit): abi/gin/gin_proxy_v2_30.h against NVIDIA's
#   2.30.7 header (from the nvidia-nccl-cu13 wheel, fetched as the devcomm tests fetch it):
#   the per-context struct field by field, descriptors built both ways on random fields;
# - gin_proxy_socket_two_processes (label mp): two processes, the proxy executing descriptors
#   that CPU threads write in 2.30.7's format, through the socket plugin's RMA table;
# - gin_proxy_socket_gin13_two_processes (labels mp, plugin): the same through the socket
#   library's ncclGinPlugin_v13, adapted as core/plugin adapts a loaded GIN v13 plugin;
# - gin_proxy_staged_two_processes (label mp): the proxy's staged mode (windows the backend never
#   sees: bytes through copy callbacks and the proxies' rings, as GPU windows over the socket net;
#   gets as requests answered by reply messages);
# - gin_proxy_bad_config (label unit): bad configurations refused.
find_program(WEFT_GIN_CXX NAMES c++ g++ clang++)
add_test(NAME gin_gfd_matches_nvidia_2.30.7
  COMMAND ${CMAKE_COMMAND} -DVERSION=2.30.7 -DWHEELS=${WEFT_NCCL_WHEEL_DIR}
    -DCXX=${WEFT_GIN_CXX} -DSRC=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/gin
    -P ${CMAKE_CURRENT_LIST_DIR}/gin_gfd_check.cmake)
set_tests_properties(gin_gfd_matches_nvidia_2.30.7 PROPERTIES LABELS unit TIMEOUT 600
  RESOURCE_LOCK weft_nccl_wheel_2.30.7)

set(gin_proxy_sources ${PROJECT_SOURCE_DIR}/core/gin/gin_proxy.c
  ${PROJECT_SOURCE_DIR}/core/gin/gin_proxy_exec.c ${PROJECT_SOURCE_DIR}/core/gin/gin_stage.c)
weft_add_test(NAME gin_proxy_socket_two_processes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/gin_proxy_socket.c ${gin_proxy_sources}
  LABELS mp TIMEOUT 90 ENV NCCL_SOCKET_IFNAME=lo LIBS weft_kindshim)
weft_add_test(NAME gin_proxy_socket_gin13_two_processes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/gin_proxy_socket.c ${gin_proxy_sources}
  LABELS mp plugin TIMEOUT 90 ENV NCCL_SOCKET_IFNAME=lo LIBS weft_kindshim ARGS gin13)
weft_add_test(NAME gin_proxy_staged_two_processes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/gin_proxy_socket.c ${gin_proxy_sources}
  LABELS mp TIMEOUT 90 ENV NCCL_SOCKET_IFNAME=lo LIBS weft_kindshim ARGS staged)
weft_add_test(NAME gin_proxy_bad_config
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/gin_proxy_socket.c ${gin_proxy_sources}
  LABELS unit ARGS config LIBS weft_kindshim)
foreach(t gin_proxy_socket_two_processes gin_proxy_socket_gin13_two_processes
    gin_proxy_staged_two_processes gin_proxy_bad_config)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/abi ${PROJECT_SOURCE_DIR}/core)
  add_dependencies(${t} nccl-net-weft-socket)
endforeach()
