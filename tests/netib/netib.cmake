# net-ib tests (labels plugin, fault). The plugin runs over fakeverbs (tests/netib/fakeverbs/),
# a test-only libibverbs stand-in emulating devices and RC QPs between processes on this host,
# loaded through WEFT_IB_VERBS_LIB; it is built into build/tests/netib/ and never installed.
if(NOT TARGET nccl-net-weft-ib)
  return()
endif()

set(NETIB_DIR ${PROJECT_BINARY_DIR}/tests/netib)
set(NETIB_SRC ${CMAKE_CURRENT_LIST_DIR})

file(GLOB FAKEVERBS_SOURCES CONFIGURE_DEPENDS ${NETIB_SRC}/fakeverbs/fv_*.c)
add_library(fakeverbs SHARED ${FAKEVERBS_SOURCES})
set_target_properties(fakeverbs PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${NETIB_DIR})
target_link_libraries(fakeverbs PRIVATE Threads::Threads)
if(NOT WEFT_SANITIZE)
  target_link_options(fakeverbs PRIVATE -Wl,-z,defs)
endif()
set(FAKEVERBS $<TARGET_FILE:fakeverbs>)
set(NETIB_ENV "WEFT_IB_VERBS_LIB=${FAKEVERBS};NCCL_SOCKET_IFNAME=lo")

# The fake's own rules (an honest fake is what makes the plugin tests mean something): one
# process per case.
add_executable(fakeverbs_rules ${NETIB_SRC}/fakeverbs_rules.c)
target_link_libraries(fakeverbs_rules PRIVATE fakeverbs)
set_target_properties(fakeverbs_rules PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${NETIB_DIR})
foreach(c qp_transitions_are_validated post_send_needs_rts write_with_imm_lands_and_completes
          write_with_bad_rkey_is_remote_access_error write_out_of_bounds_is_remote_access_error
          write_with_imm_waits_for_posted_receive write_with_imm_without_receive_fails_rnr
          write_to_qp_not_ready_exhausts_retries psn_mismatch_exhausts_retries
          send_recv_and_length_error rdma_read_returns_remote_data
          bad_lkey_is_local_protection_error registration_rules send_queue_full_is_enomem
          dmabuf_memfd_registration roce_gid_type_mismatch_loses_packets injected_wc_error
          injected_port_down_raises_async_event injected_create_qp_failure)
  add_test(NAME fakeverbs_${c} COMMAND fakeverbs_rules ${c})
  set_tests_properties(fakeverbs_${c} PROPERTIES LABELS "plugin;unit" TIMEOUT 60)
endforeach()

# Plugin tests over the fake: discovery and settings, then faults between two processes.
function(netib_case prog src casename labels)
  set(name netib_${casename})
  weft_add_test(NAME ${name} SOURCES ${NETIB_SRC}/${src} ${NETIB_SRC}/netib_harness.c
    LABELS ${labels} TIMEOUT 120 ARGS ${casename} ENV "${NETIB_ENV}")
  target_compile_definitions(${name} PRIVATE NETIB_PLUGIN_PATH="$<TARGET_FILE:nccl-net-weft-ib>")
  add_dependencies(${name} nccl-net-weft-ib fakeverbs)
endfunction()
foreach(c no_verbs_library_reports_zero_devices non_verbs_library_reports_zero_devices
          ib_disable_reports_zero_devices host_without_rdma_devices_reports_zero_devices
          inactive_ports_are_skipped hca_grammar_selects_devices_and_ports
          roce_gid_follows_version_and_family properties_describe_the_port
          init_finalize_cycles_leak_nothing)
  netib_case(netib_setup_test netib_setup_test.c ${c} plugin)
endforeach()
foreach(c completion_error_fails_the_sender completion_error_fails_the_receiver
          local_completion_error_is_a_system_error port_down_fails_the_sender
          qp_creation_failure_fails_accept_and_connect qp_creation_failure_fails_connect
          roce_version_mismatch_fails_with_retries_exceeded infiniband_and_roce_ports_do_not_connect
          send_larger_than_receive_is_an_error_on_both_sides)
  netib_case(netib_fault_test netib_fault_test.c ${c} "plugin;fault")
endforeach()
foreach(c flush_reads_back_gpu_receives dmabuf_receive_lands_in_the_buffer
          striped_message_over_roce_arrives_intact)
  netib_case(netib_fault_test netib_fault_test.c ${c} plugin)
endforeach()

# Host-mode collectives over net-ib (the public API, 2 ranks). Skips (77) while weft's host data
# path answers "not available yet".
weft_add_test(NAME netib_host_allreduce_2_ranks SOURCES ${NETIB_SRC}/netib_coll.c
  LABELS "mp;plugin" TIMEOUT 180
  ENV "${NETIB_ENV};LD_LIBRARY_PATH=${CMAKE_LIBRARY_OUTPUT_DIRECTORY}")
add_dependencies(netib_host_allreduce_2_ranks nccl-net-weft-ib fakeverbs)

# The conformance suite on net-ib over the fake: the CI gate. Every test but the GPU ones (no
# CUDA here) must pass; the 1 GiB message runs when 3 GiB of memory are free.
set(NETIB_CONF_JSON ${NETIB_DIR}/conformance_net_ib.json)
add_test(NAME conformance_net_ib
  COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-ib> --json ${NETIB_CONF_JSON})
# WEFT_IB_GDR=0 here and below: fake verbs copy bytes with memcpy, so on a machine with a GPU
# the conformance suite's GPU-memory cases (run when GPU memory is advertised) cannot pass.
set_tests_properties(conformance_net_ib PROPERTIES LABELS plugin TIMEOUT 900
  ENVIRONMENT "NCCL_DEBUG=WARN;${NETIB_ENV};WEFT_IB_GDR=0")
# RoCE, 4 QPs striped, a traffic class.
add_test(NAME conformance_net_ib_roce_4qps
  COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-ib> --filter "!net_message_of_1GiB*")
set_tests_properties(conformance_net_ib_roce_4qps PROPERTIES LABELS plugin TIMEOUT 900
  ENVIRONMENT "NCCL_DEBUG=WARN;${NETIB_ENV};NCCL_IB_HCA=fake_roce0;WEFT_IB_QPS_PER_CONN=4;NCCL_IB_TC=106;WEFT_IB_GDR=0")
# GPU memory claimed (WEFT_IB_GDR=1): the flush QP exists on every receive comm. Host-memory
# cases only: fake verbs cannot move GPU memory.
add_test(NAME conformance_net_ib_gdr_flush_qp
  COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-ib>
    --filter "net_connect*,net_message_of_4096*,net_message_of_1MiB*,net_grouped*,net_regmr_twice*,net_iflush_on_host*,net_connect_close_cycles*")
set_tests_properties(conformance_net_ib_gdr_flush_qp PROPERTIES LABELS plugin TIMEOUT 300
  ENVIRONMENT "NCCL_DEBUG=WARN;${NETIB_ENV};WEFT_IB_GDR=1;WEFT_IB_QPS_PER_CONN=2")
# The old ABI views, on the data path.
foreach(v 6 7 8 9 10)
  add_test(NAME conformance_net_ib_v${v}
    COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-ib> --abi v${v}
      --filter "net_init*,net_properties*,net_connect_and_accept*,net_message_of_4096*,net_message_of_1MiB*,net_recv_larger*,net_full_request_window*,net_messages_keep*,net_grouped*,net_regmr_twice*")
  set_tests_properties(conformance_net_ib_v${v} PROPERTIES LABELS plugin TIMEOUT 300
    ENVIRONMENT "NCCL_DEBUG=WARN;${NETIB_ENV}")
endforeach()
# Without a verbs library the plugin still loads and inits; it only has no device: the suite
# says so in one line and skips the tests that need a device (0 devices is normal on a machine
# without the NIC; NCCL's loaders then use another net).
add_test(NAME conformance_net_ib_without_verbs_loads_with_zero_devices COMMAND ${CMAKE_COMMAND}
  -DCONF=$<TARGET_FILE:weft-conformance> -DSUITE=net -DPLUGIN=$<TARGET_FILE:nccl-net-weft-ib>
  "-DARGS=--filter|net_plugin*,net_v*,net_init_with*,net_devices*,net_properties*,net_message_of_1_byte*"
  -DJSON=${NETIB_DIR}/conformance_net_ib_without_verbs.json -DEXPECT_EXIT=0
  -DEXPECT_SKIP=net_devices_reports_at_least_one,net_properties_are_sane_for_the_version,net_message_of_1_byte_arrives_intact
  -DEXPECT_PASS=net_plugin_loads_with_rtld_now_local,net_plugin_exports_a_supported_version,net_v11_table_has_name_and_mandatory_entries,net_init_with_logger_succeeds
  "-DEXPECT_REASON=net_devices_reports_at_least_one=0 devices on this host"
  "-DEXPECT_OUTPUT=# 0 devices: the plugin loads and inits but finds no device on this host"
  -P ${PROJECT_SOURCE_DIR}/tests/plugins/scripts/expect_conformance.cmake)
set_tests_properties(conformance_net_ib_without_verbs_loads_with_zero_devices PROPERTIES
  LABELS plugin TIMEOUT 120
  ENVIRONMENT "NCCL_DEBUG=WARN;WEFT_IB_VERBS_LIB=/nonexistent/libibverbs.so.1")

# The replaceable verbs table: a wrapped entry failing surfaces as an error of the request.
foreach(c poll_failure_fails_the_request post_send_failure_fails_the_send
          post_recv_failure_fails_the_receive)
  weft_add_test(NAME netib_table_${c} SOURCES ${NETIB_SRC}/netib_table_test.c
    LABELS "plugin;fault" TIMEOUT 60 ARGS ${c} ENV "${NETIB_ENV}" LIBS weft_net_ib_impl)
  add_dependencies(netib_table_${c} fakeverbs)
endforeach()

# net-ib's RMA table on dma-bufs (a memfd), the refusals and a completion error: what
# weft-conformance does not reach.
netib_case(netib_rma_test netib_rma_test.c dmabuf_puts_and_gets_land_and_refusals_hold plugin)
netib_case(netib_rma_test netib_rma_test.c completion_error_fails_the_put_and_is_reported
  "plugin;fault")

# One-sided tables (plugins/net-ib/rma_ib_*.c) over the fake: RMA v15/v14/v13 and GIN v13 on the
# InfiniBand port, v15 again on RoCE: every test must pass, with the count line (17 or 18).
foreach(spec "rma|v15|ib|" "rma|v14|ib|" "rma|v13|ib|" "gin|v13|ib|" "rma|v15|roce|NCCL_IB_HCA=fake_roce0")
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 suite)
  list(GET parts 1 v)
  list(GET parts 2 port)
  list(GET parts 3 extra)
  set(name conformance_${suite}_${v}_ib_passes)
  if(NOT port STREQUAL "ib")
    set(name conformance_${suite}_${v}_ib_${port}_passes)
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND}
    -DCONF=$<TARGET_FILE:weft-conformance> -DSUITE=${suite}
    -DPLUGIN=$<TARGET_FILE:nccl-net-weft-ib> "-DARGS=--abi|${v}" -DJSON=${NETIB_DIR}/${name}.json
    -DALL_PASS=ON "-DEXPECT_OUTPUT=passed, 0 failed, 0 inconclusive, 0 skipped"
    -P ${PROJECT_SOURCE_DIR}/tests/plugins/scripts/expect_conformance.cmake)
  set_tests_properties(${name} PROPERTIES LABELS plugin TIMEOUT 180
    ENVIRONMENT "NCCL_DEBUG=WARN;${NETIB_ENV};${extra}")
endforeach()
