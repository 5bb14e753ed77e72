# The socket net plugin's own smoke test (the full plugin conformance suite is conformance/).
# It dlopens build/lib/libnccl-net-weft-socket.so and forks sender/receiver pairs over loopback.
weft_add_test(NAME net_socket_plugin_smoke_data_faults_cycles
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/netsocket_smoke.c
  LABELS plugin
  TIMEOUT 180
  ENV NCCL_SOCKET_IFNAME=lo)
add_dependencies(net_socket_plugin_smoke_data_faults_cycles nccl-net-weft-socket)
# ns_handle (the stray-socket check connects to the address inside a handle); the header
# includes plugins/common's net_common.h
target_include_directories(net_socket_plugin_smoke_data_faults_cycles PRIVATE
  ${PROJECT_SOURCE_DIR}/plugins/net-socket ${PROJECT_SOURCE_DIR}/plugins/common)
