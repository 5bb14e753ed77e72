# Unit tests of util/ (parameters, logging), comm/ config resolution, topo/ PCI paths, algo/
# (the zero-copy direct algorithms on simulated ranks: headers only), host/'s primitive and
# transport/'s registration service (against a fake importer: no CUDA) and its table of CUDA
# IPC mappings (against a fake CUDA runtime).
weft_add_test(NAME util_params SOURCES ${CMAKE_CURRENT_LIST_DIR}/util_params.c LABELS unit)
weft_add_test(NAME util_conf_file_refuses_devices_and_long_lines
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/util_conf_file.c LABELS unit)
weft_add_test(NAME util_params_bad_values_warn SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/util_params_bad_values.c LABELS unit)
weft_add_test(NAME util_log SOURCES ${CMAKE_CURRENT_LIST_DIR}/util_log.c LABELS unit)
weft_add_test(NAME util_socket_ifname SOURCES ${CMAKE_CURRENT_LIST_DIR}/util_socket_ifname.c LABELS unit)
weft_add_test(NAME comm_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_config.c
  ${PROJECT_SOURCE_DIR}/core/comm/comm_config.c LABELS unit)
weft_add_test(NAME topo_pci_path SOURCES ${CMAKE_CURRENT_LIST_DIR}/topo_pci_path.c
  ${PROJECT_SOURCE_DIR}/core/topo/pci_path.c ${PROJECT_SOURCE_DIR}/core/topo/pci_gpu_index.c
  LABELS unit)
weft_add_test(NAME transport_regsrv SOURCES ${CMAKE_CURRENT_LIST_DIR}/transport_regsrv.c
  ${PROJECT_SOURCE_DIR}/core/transport/transport_regsrv.c
  ${PROJECT_SOURCE_DIR}/core/transport/transport_fdx.c LABELS unit)
weft_add_test(NAME transport_fdx_hands_descriptors_to_named_processes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/transport_fdx.c
  ${PROJECT_SOURCE_DIR}/core/transport/transport_fdx.c LABELS unit TIMEOUT 60)
# transport/'s table of CUDA IPC mappings against a fake CUDA runtime (the test defines the
# calls transport_ipcmap.c makes; CUDA's headers only, no GPU).
if(WEFT_HAVE_CUDA)
  weft_add_test(NAME transport_ipcmap SOURCES ${CMAKE_CURRENT_LIST_DIR}/transport_ipcmap.c
    ${PROJECT_SOURCE_DIR}/core/transport/transport_ipcmap.c LABELS unit)
  target_include_directories(transport_ipcmap PRIVATE ${CMAKE_BINARY_DIR}/layers/transport
    ${PROJECT_SOURCE_DIR}/abi ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(transport_ipcmap PRIVATE WEFT_HAVE_CUDA=1)
endif()
weft_add_test(NAME algo_zc_sim SOURCES ${CMAKE_CURRENT_LIST_DIR}/algo_zc_sim.c LABELS unit)
weft_add_test(NAME algo_zc_reg_sim SOURCES ${CMAKE_CURRENT_LIST_DIR}/algo_zc_reg_sim.c LABELS unit)
# host/'s primitive against a peer that sends its last steps and destroys its communicator at once
# (its sources compiled in, with the include root core/ made for host/).
file(GLOB WEFT_HOST_PRIM_SOURCES ${PROJECT_SOURCE_DIR}/core/host/host_prims.c
  ${PROJECT_SOURCE_DIR}/core/host/host_sig.c ${PROJECT_SOURCE_DIR}/core/host/red*.c
  ${PROJECT_SOURCE_DIR}/core/host/dtype_convert.c)
weft_add_test(NAME host_prims_peer_closed SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_prims_peer_closed.c
  ${WEFT_HOST_PRIM_SOURCES} LABELS unit)
target_include_directories(host_prims_peer_closed PRIVATE ${CMAKE_BINARY_DIR}/layers/host
  ${PROJECT_SOURCE_DIR}/abi)
