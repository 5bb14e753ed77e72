# The libfabric net plugin (plugins/net-ofi), label `plugin`:
#  - the whole conformance suite on tcp;ofi_rxm over loopback (the CI gate), on the older ABI
#    views, with strict memory-registration rules emulated (WEFT_OFI_MR_STRICT: every buffer
#    registered, descriptors passed, keys unique, registrations bound to the endpoint), and the
#    dead-peer tests with the same-host /proc check off so the probes alone must find the peer;
#  - the suite on shm (and udp;ofi_rxd with -DWEFT_TEST_OFI_RXD=ON), skipped where those
#    providers cannot be opened;
#  - fault injection through the plugin's libfabric function table (netofi_faults.c);
#  - host-mode AllReduce through the public API over the plugin (skipped, 77, while weft's host
#    collectives answer "not available yet").
if(NOT TARGET nccl-net-weft-ofi)
  message(STATUS "weft: tests/netofi skipped: plugins/net-ofi is not built")
  return()
endif()

set(_ofi_dir ${CMAKE_CURRENT_LIST_DIR})
set(_ofi_json ${PROJECT_BINARY_DIR}/tests/netofi)
file(MAKE_DIRECTORY ${_ofi_json})

# Sets WEFT_OFI_PROVIDER for a test. Layered provider names hold a ';', which CMake lists would
# split: they are written here with '+' ("tcp+ofi_rxm") and escaped on the way into the
# ENVIRONMENT property.
function(netofi_provider test provider)
  string(REPLACE "+" "\\;" escaped "${provider}")
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "WEFT_OFI_PROVIDER=${escaped}")
endfunction()

# netofi_conformance(NAME n PROVIDER p [SUITE net|rma] [ENV k=v…] [ARGS a|b] [REQUIRED] [TIMEOUT s])
function(netofi_conformance)
  cmake_parse_arguments(C "REQUIRED" "NAME;PROVIDER;ARGS;TIMEOUT;SUITE" "ENV" ${ARGN})
  if(NOT C_TIMEOUT)
    set(C_TIMEOUT 900)
  endif()
  add_test(NAME ${C_NAME} COMMAND ${CMAKE_COMMAND}
    -DCONF=$<TARGET_FILE:weft-conformance> -DPLUGIN=$<TARGET_FILE:nccl-net-weft-ofi>
    "-DARGS=${C_ARGS}" -DJSON=${_ofi_json}/${C_NAME}.json "-DPROVIDER=${C_PROVIDER}"
    -DSUITE=${C_SUITE}
    -DREQUIRED=${C_REQUIRED} -P ${_ofi_dir}/scripts/run_conformance.cmake)
  set_tests_properties(${C_NAME} PROPERTIES LABELS plugin TIMEOUT ${C_TIMEOUT}
    SKIP_REGULAR_EXPRESSION "SKIP: "
    ENVIRONMENT "NCCL_DEBUG=WARN")
  foreach(e ${C_ENV})
    set_property(TEST ${C_NAME} APPEND PROPERTY ENVIRONMENT "${e}")
  endforeach()
  netofi_provider(${C_NAME} "${C_PROVIDER}")
endfunction()

# ---- tcp;ofi_rxm over loopback: must pass ----
netofi_conformance(NAME conformance_net_ofi_tcp PROVIDER tcp+ofi_rxm REQUIRED ENV WEFT_OFI_DOMAIN=lo)
foreach(v 6 8 9 10)
  netofi_conformance(NAME conformance_net_ofi_tcp_v${v} PROVIDER tcp+ofi_rxm REQUIRED
    ENV WEFT_OFI_DOMAIN=lo TIMEOUT 300
    ARGS "--abi|v${v}|--filter|net_init*,net_properties*,net_connect_and_accept*,net_message_of_4096*,net_message_of_1MiB*,net_recv_larger*,net_full_request_window*,net_messages_keep*,net_grouped*,net_regmr_twice*")
endforeach()
netofi_conformance(NAME conformance_net_ofi_tcp_strict_mr PROVIDER tcp+ofi_rxm REQUIRED
  ENV WEFT_OFI_DOMAIN=lo WEFT_OFI_MR_STRICT=1)
netofi_conformance(NAME conformance_net_ofi_tcp_dead_peer_by_probes PROVIDER tcp+ofi_rxm
  REQUIRED ENV WEFT_OFI_DOMAIN=lo WEFT_OFI_PEER_PID_CHECK=0 WEFT_OFI_PEER_TIMEOUT_MS=4000 TIMEOUT 300
  ARGS "--filter|net_sender_exit*,net_receiver_exit*")

# ---- shm (one host): the receiver-exit test needs FI_SHM_DISABLE_CMA=1, since with
# cross-memory attach the receiver pulls the whole message in its first progress calls, so the
# transfer really completes before the receiver leaves (the test's premise does not hold). ----
netofi_conformance(NAME conformance_net_ofi_shm PROVIDER shm
  ARGS "--filter|!net_receiver_exit_mid_transfer_fails_sender_test")
netofi_conformance(NAME conformance_net_ofi_shm_dead_peer PROVIDER shm TIMEOUT 300
  ENV FI_SHM_DISABLE_CMA=1 ARGS "--filter|net_sender_exit*,net_receiver_exit*")

# ---- the RMA tables (rma_ofi*.c: fi_writemsg, fi_readmsg, fi_inject_atomic) on tcp;ofi_rxm
# (must pass) and shm (skipped where it cannot open), v15, v14 and v13, and the GIN v13 table
# (the same calls) on tcp; every test is small (at most 8 × 2 MiB). The shm run's departed peer
# is found by the same-host process check. ----
netofi_conformance(NAME conformance_gin_ofi_tcp_v13 PROVIDER tcp+ofi_rxm SUITE gin REQUIRED
  TIMEOUT 300 ENV WEFT_OFI_DOMAIN=lo)
foreach(v v15 v14 v13)
  netofi_conformance(NAME conformance_rma_ofi_tcp_${v} PROVIDER tcp+ofi_rxm SUITE rma REQUIRED
    TIMEOUT 300 ENV WEFT_OFI_DOMAIN=lo ARGS "--abi|${v}")
  netofi_conformance(NAME conformance_rma_ofi_shm_${v} PROVIDER shm SUITE rma TIMEOUT 300
    ARGS "--abi|${v}")
endforeach()

# ---- udp;ofi_rxd over loopback, on demand only (-DWEFT_TEST_OFI_RXD=ON): libfabric 1.17's rxd
# intermittently loses a message when the machine is loaded (net_two_threads_drive_separate_comms
# nearly always; net_grouped_receive_fills_slots_by_tag once in a CI-like run: the receive never
# completes, or completes with a spurious FI_ETRUNC), while tcp;ofi_rxm and shm pass the whole
# suite. A provider bug must not fail weft's CI; run it when changing net-ofi. ----
option(WEFT_TEST_OFI_RXD "Run the net-ofi conformance suite on udp;ofi_rxd too" OFF)
if(WEFT_TEST_OFI_RXD)
  netofi_conformance(NAME conformance_net_ofi_rxd PROVIDER udp+ofi_rxd
    ENV WEFT_OFI_DOMAIN=lo
    ARGS "--filter|!net_two_threads_drive_separate_comms")
endif()

# ---- fault injection through the function table ----
weft_add_test(NAME net_ofi_faults_surface_as_errors SOURCES ${_ofi_dir}/netofi_faults.c
  LABELS plugin fault TIMEOUT 300 LIBS weft_net_ofi_impl ENV WEFT_OFI_DOMAIN=lo)
set_tests_properties(net_ofi_faults_surface_as_errors PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
netofi_provider(net_ofi_faults_surface_as_errors tcp+ofi_rxm)

# ---- shm regions of exited processes are swept (issue 18: nothing left in /dev/shm) ----
weft_add_test(NAME net_ofi_shm_orphans_swept SOURCES ${_ofi_dir}/netofi_shm_orphans.c
  LABELS plugin fault TIMEOUT 120 LIBS weft_net_ofi_impl)
netofi_provider(net_ofi_shm_orphans_swept shm)

# ---- host-mode collectives over the plugin ----
foreach(n 2 3)
  weft_add_test(NAME net_ofi_host_allreduce_${n}_ranks SOURCES ${_ofi_dir}/netofi_allreduce.c
    LABELS plugin mp TIMEOUT 300 ARGS ${n}
    ENV WEFT_OFI_DOMAIN=lo NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-weft-ofi> NCCL_NET=weft-ofi
        NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1)
  netofi_provider(net_ofi_host_allreduce_${n}_ranks tcp+ofi_rxm)
  add_dependencies(net_ofi_host_allreduce_${n}_ranks nccl-net-weft-ofi)
endforeach()

# ---- CUDA buffers through FI_HMEM (label gpu; skipped without a CUDA device or without a
# provider offering FI_HMEM) ----
add_executable(net_ofi_cuda_buffers ${_ofi_dir}/netofi_cuda.c)
target_link_libraries(net_ofi_cuda_buffers PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(net_ofi_cuda_buffers PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
add_dependencies(net_ofi_cuda_buffers nccl-net-weft-ofi)
foreach(p shm tcp+ofi_rxm)
  string(REPLACE "+" "_" _p ${p})
  string(REGEX REPLACE "_ofi_rxm$" "" _p ${_p})
  add_test(NAME net_ofi_cuda_buffers_${_p} COMMAND net_ofi_cuda_buffers $<TARGET_FILE:nccl-net-weft-ofi>)
  set_tests_properties(net_ofi_cuda_buffers_${_p} PROPERTIES LABELS "gpu;plugin" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "NCCL_DEBUG=WARN")
  if(NOT p STREQUAL "shm")
    set_property(TEST net_ofi_cuda_buffers_${_p} APPEND PROPERTY ENVIRONMENT WEFT_OFI_DOMAIN=lo)
  endif()
  netofi_provider(net_ofi_cuda_buffers_${_p} ${p})
endforeach()
