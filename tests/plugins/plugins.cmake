# Plugin tests (label `plugin`): weft-conformance against the plugins weft builds, and against
# deliberately broken plugins (tests/plugins/broken/), each of which must fail exactly the
# tests that catch its defect. The broken plugins are built into build/tests/plugins/ as
# libnccl-net-broken-<what>.so (libnccl-net-refnet.so is their correct baseline).

set(WEFT_TEST_PLUGIN_DIR ${PROJECT_BINARY_DIR}/tests/plugins)
set(WEFT_BROKEN_DIR ${CMAKE_CURRENT_LIST_DIR}/broken)

add_library(weft_refnet OBJECT ${WEFT_BROKEN_DIR}/refnet.c)
set_target_properties(weft_refnet PROPERTIES C_VISIBILITY_PRESET hidden)

# weft_test_net_plugin(<what> <source>): libnccl-net-<what>.so from refnet + one file.
function(weft_test_net_plugin what src)
  add_library(nccl-net-${what} SHARED ${WEFT_BROKEN_DIR}/${src} $<TARGET_OBJECTS:weft_refnet>)
  target_include_directories(nccl-net-${what} PRIVATE ${WEFT_BROKEN_DIR})
  set_target_properties(nccl-net-${what} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
  target_link_options(nccl-net-${what} PRIVATE -Wl,-z,defs)
endfunction()

weft_test_net_plugin(refnet good.c)
foreach(what nosymbol oldversion nullisend initfails isendcrash testhangs truncate sizereport
        fdleak blockingaccept badprops deadpeer listenhangs ctorcrash badrail drop7 nodevice)
  weft_test_net_plugin(broken-${what} ${what}.c)
endforeach()

# Tuners: reftuner (correct, v2..v6) and broken ones built from it.
add_library(weft_reftuner OBJECT ${WEFT_BROKEN_DIR}/reftuner.c)
set_target_properties(weft_reftuner PROPERTIES C_VISIBILITY_PRESET hidden)
function(weft_test_tuner_plugin what src)
  add_library(nccl-tuner-${what} SHARED ${WEFT_BROKEN_DIR}/${src} $<TARGET_OBJECTS:weft_reftuner>)
  target_include_directories(nccl-tuner-${what} PRIVATE ${WEFT_BROKEN_DIR})
  set_target_properties(nccl-tuner-${what} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
  target_link_options(nccl-tuner-${what} PRIVATE -Wl,-z,defs)
endfunction()
weft_test_tuner_plugin(reftuner tuner_good.c)
foreach(v 2 3 4 5)
  weft_test_tuner_plugin(reftuner-v${v} tuner_v${v}only.c)
endforeach()
foreach(what ignoredcells nullinit nullget initfails getfails raises allocates slow badchannels nan
        zerocrash v2badindex badchunk)
  weft_test_tuner_plugin(broken-${what} tuner_${what}.c)
endforeach()

# weft_conformance_test(NAME n PLUGIN file [ARGS a|b] [EXPECT_FAIL x,y] [EXPECT_PASS …]
#                       [EXPECT_INCONCLUSIVE …] [EXPECT_SKIP …] [EXPECT_REASON name=text,…]
#                       [EXPECT_OUTPUT text|text] [EXPECT_EXIT n] [ALL_PASS] [TIMEOUT s]
#                       [SUITE net|tuner] [ENV "A=1;B=2"])
function(weft_conformance_test)
  cmake_parse_arguments(C "ALL_PASS" "NAME;PLUGIN;ARGS;EXPECT_FAIL;EXPECT_PASS;EXPECT_INCONCLUSIVE;EXPECT_SKIP;EXPECT_REASON;EXPECT_OUTPUT;EXPECT_EXIT;TIMEOUT;SUITE;ENV" "" ${ARGN})
  if(NOT C_SUITE)
    set(C_SUITE net)
  endif()
  if(NOT C_TIMEOUT)
    set(C_TIMEOUT 120)
  endif()
  add_test(NAME ${C_NAME} COMMAND ${CMAKE_COMMAND}
    -DCONF=$<TARGET_FILE:weft-conformance> -DSUITE=${C_SUITE} -DPLUGIN=${C_PLUGIN}
    "-DARGS=${C_ARGS}" -DJSON=${PROJECT_BINARY_DIR}/tests/plugins/${C_NAME}.json
    "-DEXPECT_FAIL=${C_EXPECT_FAIL}" "-DEXPECT_PASS=${C_EXPECT_PASS}"
    "-DEXPECT_REASON=${C_EXPECT_REASON}" -DALL_PASS=${C_ALL_PASS}
    "-DEXPECT_INCONCLUSIVE=${C_EXPECT_INCONCLUSIVE}" "-DEXPECT_SKIP=${C_EXPECT_SKIP}"
    "-DEXPECT_OUTPUT=${C_EXPECT_OUTPUT}" "-DEXPECT_EXIT=${C_EXPECT_EXIT}"
    -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/scripts/expect_conformance.cmake)
  set_tests_properties(${C_NAME} PROPERTIES LABELS plugin TIMEOUT ${C_TIMEOUT}
    ENVIRONMENT "NCCL_DEBUG=WARN;${C_ENV}")
endfunction()

# ---- plugins that must pass ----
if(TARGET nccl-net-weft-socket)
  # Over a PCI interface (skipped where every interface is virtual): pciPath is its device.
  add_test(NAME conformance_net_socket_reports_pci_path
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/scripts/socket_pci_path.sh
      $<TARGET_FILE:weft-conformance> $<TARGET_FILE:nccl-net-weft-socket>)
  set_tests_properties(conformance_net_socket_reports_pci_path PROPERTIES LABELS plugin
    TIMEOUT 60 SKIP_RETURN_CODE 77)
  # The whole suite, newest ABI: the CI gate for the socket plugin.
  add_test(NAME conformance_net_socket
    COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-socket>
      --json ${PROJECT_BINARY_DIR}/tests/plugins/conformance_net_socket.json)
  set_tests_properties(conformance_net_socket PROPERTIES LABELS plugin TIMEOUT 900
    ENVIRONMENT "NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
  # The old ABI views through the shim, on the data path only.
  foreach(v 6 8 9 10)
    add_test(NAME conformance_net_socket_v${v}
      COMMAND weft-conformance net $<TARGET_FILE:nccl-net-weft-socket> --abi v${v}
        --filter "net_init*,net_properties*,net_connect_and_accept*,net_message_of_4096*,net_message_of_1MiB*,net_recv_larger*,net_full_request_window*,net_messages_keep*,net_grouped*,net_regmr_twice*")
    set_tests_properties(conformance_net_socket_v${v} PROPERTIES LABELS plugin TIMEOUT 300
      ENVIRONMENT "NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
  endforeach()
endif()

weft_conformance_test(NAME conformance_net_refnet_passes
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-net-refnet.so
  ARGS "--filter|!net_message_of_1GiB*" ALL_PASS TIMEOUT 600)

# ---- broken plugins: each must fail the tests that name its defect ----
set(B ${WEFT_TEST_PLUGIN_DIR}/libnccl-net-broken)
weft_conformance_test(NAME conformance_flags_missing_symbol PLUGIN ${B}-nosymbol.so
  EXPECT_FAIL net_plugin_exports_a_supported_version
  EXPECT_PASS net_plugin_loads_with_rtld_now_local)
weft_conformance_test(NAME conformance_flags_unknown_version PLUGIN ${B}-oldversion.so
  EXPECT_FAIL net_plugin_exports_a_supported_version
  EXPECT_REASON "net_plugin_exports_a_supported_version=ncclNetPlugin_v5,net_plugin_exports_a_supported_version=ncclNetPlugin_v99")
weft_conformance_test(NAME conformance_flags_null_isend PLUGIN ${B}-nullisend.so
  EXPECT_FAIL net_v11_table_has_name_and_mandatory_entries
  EXPECT_REASON "net_v11_table_has_name_and_mandatory_entries=isend is NULL")
weft_conformance_test(NAME conformance_flags_init_failure PLUGIN ${B}-initfails.so
  ARGS "--filter|net_init*,net_devices*,net_message_of_1_byte*"
  EXPECT_FAIL net_init_with_logger_succeeds
  EXPECT_SKIP net_devices_reports_at_least_one,net_message_of_1_byte_arrives_intact
  EXPECT_REASON "net_init_with_logger_succeeds=init returned,net_devices_reports_at_least_one=does not get through init"
  EXPECT_OUTPUT "    plugin: WARN broken-initfails: no device here")
# A lossy plugin (every 7th send reported done, never sent): the summary puts the data test
# that shows the loss first and names the loss as the cause of the close test's timeout too.
weft_conformance_test(NAME conformance_orders_root_cause_first_on_message_loss
  PLUGIN ${B}-drop7.so
  ARGS "--filter|net_close_after*,net_messages_keep*|--timeout|20"
  EXPECT_FAIL net_close_after_completed_requests_succeeds,net_messages_keep_post_order_under_backpressure
  EXPECT_OUTPUT "  1. net_messages_keep_post_order_under_backpressure: a message was lost|  2. net_close_after_completed_requests_succeeds: a message was lost")
# 0 devices: the plugin's own reason is shown without -v.
weft_conformance_test(NAME conformance_zero_devices_shows_the_plugins_reason
  PLUGIN ${B}-nodevice.so ARGS "--filter|net_devices*,net_message_of_1_byte*"
  EXPECT_SKIP net_devices_reports_at_least_one,net_message_of_1_byte_arrives_intact
  EXPECT_OUTPUT "# the plugin says: INFO NET/NoDevice: 0 devices: no FooNIC on this host")
weft_conformance_test(NAME conformance_flags_isend_crash PLUGIN ${B}-isendcrash.so
  ARGS "--filter|net_message_of_1_byte*,net_connect_and_accept_complete_in_bounded_polls"
  EXPECT_FAIL net_message_of_1_byte_arrives_intact,net_connect_and_accept_complete_in_bounded_polls
  EXPECT_REASON "net_message_of_1_byte_arrives_intact=SIGSEGV,net_connect_and_accept_complete_in_bounded_polls=SIGSEGV")
weft_conformance_test(NAME conformance_flags_test_never_completing PLUGIN ${B}-testhangs.so
  ARGS "--filter|net_message_of_4096*,net_init_with*|--timeout|15"
  EXPECT_FAIL net_message_of_4096_bytes_arrives_intact
  EXPECT_PASS net_init_with_logger_succeeds
  EXPECT_REASON "net_message_of_4096_bytes_arrives_intact=not complete")
weft_conformance_test(NAME conformance_flags_truncated_data PLUGIN ${B}-truncate.so
  ARGS "--filter|net_message_of_4096*,net_message_of_1MiB*"
  EXPECT_FAIL net_message_of_4096_bytes_arrives_intact,net_message_of_1MiB_plus_1_arrives_intact
  EXPECT_REASON "net_message_of_4096_bytes_arrives_intact=differ")
weft_conformance_test(NAME conformance_flags_misreported_size PLUGIN ${B}-sizereport.so
  ARGS "--filter|net_recv_larger*,net_message_of_4096*"
  EXPECT_FAIL net_recv_larger_than_send_reports_sent_size
  EXPECT_PASS net_message_of_4096_bytes_arrives_intact)
weft_conformance_test(NAME conformance_flags_fd_leak PLUGIN ${B}-fdleak.so
  ARGS "--filter|net_connect_close_cycles*,net_message_of_1_byte*"
  EXPECT_FAIL net_connect_close_cycles_do_not_leak_fds
  EXPECT_PASS net_message_of_1_byte_arrives_intact)
weft_conformance_test(NAME conformance_flags_blocking_accept PLUGIN ${B}-blockingaccept.so
  ARGS "--filter|net_accept_before_connect*"
  EXPECT_FAIL net_accept_before_connect_returns_null_promptly
  EXPECT_REASON "net_accept_before_connect_returns_null_promptly=accept took")
weft_conformance_test(NAME conformance_flags_bad_properties PLUGIN ${B}-badprops.so
  ARGS "--filter|net_properties_are_sane*"
  EXPECT_FAIL net_properties_are_sane_for_the_version
  EXPECT_REASON "net_properties_are_sane_for_the_version=speed 0")
weft_conformance_test(NAME conformance_flags_bad_rail_id PLUGIN ${B}-badrail.so
  ARGS "--filter|net_v12*,net_properties*,net_init*"
  EXPECT_FAIL net_properties_are_sane_for_the_version
  EXPECT_PASS net_v12_table_has_name_and_mandatory_entries,net_init_with_logger_succeeds
  EXPECT_REASON "net_properties_are_sane_for_the_version=railId -5")
weft_conformance_test(NAME conformance_flags_hang_on_dead_peer PLUGIN ${B}-deadpeer.so
  ARGS "--filter|net_sender_exit*,net_receiver_exit*|--timeout|15"
  EXPECT_FAIL net_sender_exit_mid_transfer_fails_receiver_test,net_receiver_exit_mid_transfer_fails_sender_test
  EXPECT_REASON "net_sender_exit_mid_transfer_fails_receiver_test=still pending")
weft_conformance_test(NAME conformance_flags_call_that_never_returns PLUGIN ${B}-listenhangs.so
  ARGS "--filter|net_listen*,net_init_with*|--timeout|3"
  EXPECT_FAIL net_listen_returns_comm_and_handle_within_128_bytes
  EXPECT_PASS net_init_with_logger_succeeds
  EXPECT_REASON "net_listen_returns_comm_and_handle_within_128_bytes=timed out after 3 s (last plugin call: listen)")
weft_conformance_test(NAME conformance_flags_crash_on_load PLUGIN ${B}-ctorcrash.so
  EXPECT_FAIL net_plugin_loads_with_rtld_now_local
  EXPECT_REASON "net_plugin_loads_with_rtld_now_local=SIGSEGV")

# ---- tuners ----
weft_conformance_test(NAME conformance_tuner_reftuner_passes SUITE tuner
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-reftuner.so ALL_PASS
  EXPECT_PASS tuner_v2_table_has_name_and_entries,tuner_v5_table_has_name_and_entries,tuner_v6_table_has_name_and_entries,tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_v2_choice_is_a_valid_supported_index,tuner_v6_getchunksize_answers_are_positive_and_stable)
weft_conformance_test(NAME conformance_flags_tuner_writing_ignored_cells SUITE tuner
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-broken-ignoredcells.so
  EXPECT_FAIL tuner_cost_table_keeps_ignored_cells_and_sane_channels
  EXPECT_PASS tuner_init_and_teardown_work_across_shapes
  EXPECT_REASON "tuner_cost_table_keeps_ignored_cells_and_sane_channels=ignored cell [algo 4][proto 2]")
set(T ${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-broken)
weft_conformance_test(NAME conformance_flags_tuner_null_getcollinfo SUITE tuner
  PLUGIN ${T}-nullget.so
  EXPECT_FAIL tuner_v5_table_has_name_and_entries
  EXPECT_REASON "tuner_v5_table_has_name_and_entries=getCollInfo is NULL")
weft_conformance_test(NAME conformance_flags_tuner_init_failure SUITE tuner
  PLUGIN ${T}-initfails.so
  EXPECT_FAIL tuner_init_and_teardown_work_across_shapes,tuner_cost_table_keeps_ignored_cells_and_sane_channels
  EXPECT_INCONCLUSIVE tuner_v5_table_has_name_and_entries
  EXPECT_REASON "tuner_init_and_teardown_work_across_shapes=nNodes 1) returned 2")
weft_conformance_test(NAME conformance_flags_tuner_getcollinfo_error SUITE tuner
  PLUGIN ${T}-getfails.so
  EXPECT_FAIL tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_getcollinfo_is_fast_and_does_not_allocate
  EXPECT_PASS tuner_init_and_teardown_work_across_shapes
  EXPECT_REASON "tuner_cost_table_keeps_ignored_cells_and_sane_channels=returned 3")
weft_conformance_test(NAME conformance_flags_tuner_raising_cells SUITE tuner
  PLUGIN ${T}-raises.so
  EXPECT_FAIL tuner_getcollinfo_only_lowers_usable_cells
  EXPECT_PASS tuner_cost_table_keeps_ignored_cells_and_sane_channels
  EXPECT_REASON "tuner_getcollinfo_only_lowers_usable_cells=raised usable cell")
weft_conformance_test(NAME conformance_flags_tuner_allocating SUITE tuner
  PLUGIN ${T}-allocates.so ARGS "--filter|tuner_getcollinfo_is_fast*,tuner_cost_table*"
  EXPECT_FAIL tuner_getcollinfo_is_fast_and_does_not_allocate
  EXPECT_PASS tuner_cost_table_keeps_ignored_cells_and_sane_channels
  EXPECT_REASON "tuner_getcollinfo_is_fast_and_does_not_allocate=allocated or freed memory")
weft_conformance_test(NAME conformance_flags_tuner_slow SUITE tuner
  PLUGIN ${T}-slow.so ARGS "--filter|tuner_getcollinfo_is_fast*"
  EXPECT_FAIL tuner_getcollinfo_is_fast_and_does_not_allocate
  EXPECT_REASON "tuner_getcollinfo_is_fast_and_does_not_allocate=us per call")
weft_conformance_test(NAME conformance_flags_tuner_negative_channels SUITE tuner
  PLUGIN ${T}-badchannels.so
  EXPECT_FAIL tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_getcollinfo_survives_odd_inputs
  EXPECT_REASON "tuner_cost_table_keeps_ignored_cells_and_sane_channels=set nChannels to -3")
weft_conformance_test(NAME conformance_flags_tuner_nan_cell SUITE tuner
  PLUGIN ${T}-nan.so
  EXPECT_FAIL tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_getcollinfo_only_lowers_usable_cells
  EXPECT_REASON "tuner_cost_table_keeps_ignored_cells_and_sane_channels=at nan")
weft_conformance_test(NAME conformance_flags_tuner_crash_on_zero_bytes SUITE tuner
  PLUGIN ${T}-zerocrash.so
  EXPECT_FAIL tuner_getcollinfo_survives_odd_inputs
  EXPECT_PASS tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_getcollinfo_is_fast_and_does_not_allocate
  EXPECT_REASON "tuner_getcollinfo_survives_odd_inputs=SIGSEGV")
weft_conformance_test(NAME conformance_flags_tuner_v2_bad_index SUITE tuner
  PLUGIN ${T}-v2badindex.so
  EXPECT_FAIL tuner_v2_choice_is_a_valid_supported_index
  EXPECT_REASON "tuner_v2_choice_is_a_valid_supported_index=chose algorithm 42")
weft_conformance_test(NAME conformance_flags_tuner_zero_chunk SUITE tuner
  PLUGIN ${T}-badchunk.so
  EXPECT_FAIL tuner_v6_getchunksize_answers_are_positive_and_stable
  EXPECT_PASS tuner_v6_table_has_name_and_entries,tuner_cost_table_keeps_ignored_cells_and_sane_channels,tuner_v6_getchunksize_is_fast_and_does_not_allocate
  EXPECT_REASON "tuner_v6_getchunksize_answers_are_positive_and_stable=answered 0 bytes")
foreach(v 2 3 4 5)
  weft_conformance_test(NAME conformance_tuner_reftuner_v${v}_passes SUITE tuner
    PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-reftuner-v${v}.so ALL_PASS
    EXPECT_PASS tuner_v${v}_table_has_name_and_entries)
endforeach()

# weft's own tuner, the CI gate: without rules, with YAML rules and with NCCL's CSV.
if(TARGET nccl-tuner-weft)
  foreach(cfg none yaml csv)
    set(env "NCCL_DEBUG=WARN")
    if(cfg STREQUAL "yaml")
      set(env "NCCL_DEBUG=WARN;WEFT_TUNER_CONFIG=${PROJECT_SOURCE_DIR}/tests/tune/rules/good/host.yaml")
    elseif(cfg STREQUAL "csv")
      set(env "NCCL_DEBUG=WARN;NCCL_TUNER_CONFIG_FILE=${PROJECT_SOURCE_DIR}/tests/tune/rules/good/nccl_example.conf")
    endif()
    add_test(NAME conformance_tuner_weft_${cfg}
      COMMAND ${CMAKE_COMMAND} -DCONF=$<TARGET_FILE:weft-conformance> -DSUITE=tuner
        -DPLUGIN=$<TARGET_FILE:nccl-tuner-weft> -DARGS= -DALL_PASS=1
        -DJSON=${PROJECT_BINARY_DIR}/tests/plugins/conformance_tuner_weft_${cfg}.json
        -DEXPECT_FAIL= -DEXPECT_PASS=tuner_v5_table_has_name_and_entries,tuner_v2_table_has_name_and_entries -DEXPECT_REASON=
        -P ${CMAKE_CURRENT_LIST_DIR}/scripts/expect_conformance.cmake)
    set_tests_properties(conformance_tuner_weft_${cfg} PROPERTIES LABELS plugin TIMEOUT 120
      ENVIRONMENT "${env}")
  endforeach()
endif()

weft_conformance_test(NAME conformance_flags_tuner_null_init SUITE tuner
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-broken-nullinit.so
  EXPECT_FAIL tuner_v4_table_has_name_and_entries
  EXPECT_PASS tuner_v2_table_has_name_and_entries,tuner_init_and_teardown_work_across_shapes
  EXPECT_REASON "tuner_v4_table_has_name_and_entries=init is NULL")

# Plugins that behave like the ones deployed in the field (tests/plugins/field/).
include(${CMAKE_CURRENT_LIST_DIR}/field/field.cmake)
# The version report: which table weft and each NCCL release would load, for libraries whose
# exports are known (weft's socket net v6..v12, weft's tuner v2..v6, reftuner-v4 alone, the env
# plugin v1/v2).
add_test(NAME conformance_versions_report COMMAND ${CMAKE_COMMAND}
  -DCONF=$<TARGET_FILE:weft-conformance>
  "-DLIBS=$<TARGET_FILE:nccl-net-weft-socket>;$<TARGET_FILE:nccl-tuner-weft>;${WEFT_TEST_PLUGIN_DIR}/libnccl-tuner-reftuner-v4.so;$<TARGET_FILE:nccl-env-weft>"
  "-DEXPECT=0|exports v6 v7 v8 v9 v10 v11 v12\\|;0|weft +ncclNetPlugin_v12;0|NCCL 2.19 +ncclNetPlugin_v7;0|NCCL 2.24-2.25 +ncclNetPlugin_v9;0|NCCL 2.28-2.29 +ncclNetPlugin_v11;0|NCCL 2.30 +ncclNetPlugin_v12;1|weft +ncclTunerPlugin_v6;1|NCCL 2.19-2.20 +none;1|NCCL 2.21 +ncclTunerPlugin_v2;1|NCCL 2.28-2.29 +ncclTunerPlugin_v5;2|NCCL 2.22-2.23 +none;2|NCCL 2.30 +ncclTunerPlugin_v4;3|env plugin .weft-policy.: exports v1 v2;3|NCCL 2.19-2.28.3 +none;3|NCCL 2.28.7-2.30.4 +ncclEnvPlugin_v1;3|NCCL 2.30.7 +ncclEnvPlugin_v2"
  -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_versions.cmake)
set_tests_properties(conformance_versions_report PROPERTIES LABELS "unit;plugin" TIMEOUT 60)
# The trace profiler exports ncclProfiler_v4..v6: weft and 2.29+ take v6, 2.27 v4, 2.26 none.
if(TARGET nccl-profiler-weft-trace)
  add_test(NAME conformance_versions_report_profiler COMMAND ${CMAKE_COMMAND}
    -DCONF=$<TARGET_FILE:weft-conformance> "-DLIBS=$<TARGET_FILE:nccl-profiler-weft-trace>"
    "-DEXPECT=0|profiler plugin .[^|]*.: exports v4 v5 v6\\|;0|weft +ncclProfiler_v6;0|NCCL 2.26 +none;0|NCCL 2.27 +ncclProfiler_v4;0|NCCL 2.28 +ncclProfiler_v5;0|NCCL 2.29-2.30 +ncclProfiler_v6"
    -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_versions.cmake)
  set_tests_properties(conformance_versions_report_profiler PROPERTIES LABELS "unit;plugin"
    TIMEOUT 60)
endif()

# ---- GIN and RMA (weft-conformance gin|rma) ----
# weft's socket plugin exports RMA v15/v14/v13 and GIN v13: every version must pass, with the
# count line. The broken ones wrap it (tests/plugins/broken/onesided_wrap.c), one defect each in
# iputSignal, and must fail the test that names it, with a reason naming the call.
if(TARGET nccl-net-weft-socket)
  foreach(spec "rma|v15" "rma|v14" "rma|v13" "gin|v13")
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 suite)
    list(GET parts 1 v)
    weft_conformance_test(NAME conformance_${suite}_${v}_socket_passes SUITE ${suite}
      PLUGIN $<TARGET_FILE:nccl-net-weft-socket> ARGS "--abi|${v}" ALL_PASS
      EXPECT_OUTPUT "passed, 0 failed, 0 inconclusive, 0 skipped" TIMEOUT 180
      ENV "NCCL_SOCKET_IFNAME=lo")
  endforeach()
  foreach(what signalfirst lostsignal)
    add_library(nccl-rma-broken-${what} SHARED ${WEFT_BROKEN_DIR}/onesided_wrap.c)
    string(TOUPPER ${what} def)
    string(REPLACE "SIGNALFIRST" "SIGNAL_FIRST" def ${def})
    string(REPLACE "LOSTSIGNAL" "LOST_SIGNAL" def ${def})
    target_compile_definitions(nccl-rma-broken-${what} PRIVATE BREAK_${def}
      BROKEN_NAME="broken-${what}" WEFT_SOCKET_PLUGIN="$<TARGET_FILE:nccl-net-weft-socket>")
    target_include_directories(nccl-rma-broken-${what} PRIVATE ${PROJECT_SOURCE_DIR}/abi)
    target_link_libraries(nccl-rma-broken-${what} PRIVATE ${CMAKE_DL_LIBS})
    set_target_properties(nccl-rma-broken-${what} PROPERTIES C_VISIBILITY_PRESET hidden
      LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
    add_dependencies(nccl-rma-broken-${what} nccl-net-weft-socket)
  endforeach()
  # GIN v11/v12 (puts on the group) over the same socket plugin: the data tests through weft's
  # v11/v12 adapters must pass (iget/iflush, absent from those versions, skip).
  add_library(nccl-gin-old SHARED ${WEFT_BROKEN_DIR}/gin_old_wrap.c)
  target_compile_definitions(nccl-gin-old PRIVATE
    WEFT_SOCKET_PLUGIN="$<TARGET_FILE:nccl-net-weft-socket>")
  target_include_directories(nccl-gin-old PRIVATE ${PROJECT_SOURCE_DIR}/abi)
  target_link_libraries(nccl-gin-old PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(nccl-gin-old PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
  add_dependencies(nccl-gin-old nccl-net-weft-socket)
  foreach(v v11 v12)
    weft_conformance_test(NAME conformance_gin_${v}_adapted_socket_passes SUITE gin
      PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-gin-old.so ARGS "--abi|${v}" ALL_PASS
      EXPECT_PASS "gin_put_lands_before_its_signal,gin_signal_counts_add_up_under_concurrency"
      TIMEOUT 180 ENV "NCCL_SOCKET_IFNAME=lo")
  endforeach()
  # The same wrapper with no defect: a fixture RMA plugin that moves the data right (tests/rma).
  add_library(nccl-rma-fixture-faithful SHARED ${WEFT_BROKEN_DIR}/onesided_wrap.c)
  target_compile_definitions(nccl-rma-fixture-faithful PRIVATE BROKEN_NAME="fixture-faithful"
    WEFT_SOCKET_PLUGIN="$<TARGET_FILE:nccl-net-weft-socket>")
  target_include_directories(nccl-rma-fixture-faithful PRIVATE ${PROJECT_SOURCE_DIR}/abi)
  target_link_libraries(nccl-rma-fixture-faithful PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(nccl-rma-fixture-faithful PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
  add_dependencies(nccl-rma-fixture-faithful nccl-net-weft-socket)
  set(R ${WEFT_TEST_PLUGIN_DIR}/libnccl-rma-broken)
  foreach(suite rma gin)
    weft_conformance_test(NAME conformance_${suite}_flags_signal_before_its_data SUITE ${suite}
      PLUGIN ${R}-signalfirst.so ARGS "--filter|${suite}_put_lands*,${suite}_plugin*"
      EXPECT_FAIL ${suite}_put_lands_before_its_signal
      EXPECT_PASS ${suite}_plugin_exports_a_supported_version
      EXPECT_REASON "${suite}_put_lands_before_its_signal=iputSignal: when signal,${suite}_put_lands_before_its_signal=had not all landed before its signal"
      ENV "NCCL_SOCKET_IFNAME=lo")
    weft_conformance_test(NAME conformance_${suite}_flags_lost_signal SUITE ${suite}
      PLUGIN ${R}-lostsignal.so ARGS "--filter|${suite}_signal_counts*,${suite}_put_lands*|--timeout|15"
      EXPECT_FAIL ${suite}_signal_counts_add_up_under_concurrency
      EXPECT_PASS ${suite}_put_lands_before_its_signal
      EXPECT_REASON "${suite}_signal_counts_add_up_under_concurrency=iputSignal: after,${suite}_signal_counts_add_up_under_concurrency=signals were lost"
      ENV "NCCL_SOCKET_IFNAME=lo")
  endforeach()
endif()

# ---- CollNet (weft-conformance collnet) ----
# weft has no CollNet plugin (no fabric here reduces in the network): collnet-ref, a star of
# TCP sockets reducing on rank 0 (tests/plugins/broken/collnet_ref.c), must pass; the same with
# float32 max computed as min must fail the reduction test, naming the call.
foreach(what ref broken-collnetmax broken-collnetgather)
  add_library(nccl-net-collnet-${what} SHARED ${WEFT_BROKEN_DIR}/collnet_ref.c)
  target_include_directories(nccl-net-collnet-${what} PRIVATE ${PROJECT_SOURCE_DIR}/abi)
  target_compile_definitions(nccl-net-collnet-${what} PRIVATE REF_NAME="collnet-${what}")
  set_target_properties(nccl-net-collnet-${what} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
endforeach()
# The same beside refnet's net table (NCCL finds CollNet only in a net plugin's library): the
# CollNet weft's host data path runs in tests/mp/collnet_allreduce.c; nodev reports 0 devices,
# failing fails every iallreduce.
foreach(what refnet nodev failing)
  add_library(nccl-net-collnet-${what} SHARED ${WEFT_BROKEN_DIR}/collnet_ref.c
    ${WEFT_BROKEN_DIR}/good.c $<TARGET_OBJECTS:weft_refnet>)
  target_include_directories(nccl-net-collnet-${what} PRIVATE ${PROJECT_SOURCE_DIR}/abi
    ${WEFT_BROKEN_DIR})
  target_compile_definitions(nccl-net-collnet-${what} PRIVATE REF_NAME="collnet-${what}")
  set_target_properties(nccl-net-collnet-${what} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_TEST_PLUGIN_DIR})
endforeach()
target_compile_definitions(nccl-net-collnet-nodev PRIVATE REF_NODEV)
target_compile_definitions(nccl-net-collnet-failing PRIVATE BROKEN_IALLREDUCE)
target_compile_definitions(nccl-net-collnet-broken-collnetmax PRIVATE BROKEN_MAX)
target_compile_definitions(nccl-net-collnet-broken-collnetgather PRIVATE BROKEN_GATHER)
weft_conformance_test(NAME conformance_collnet_ref_passes SUITE collnet
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-net-collnet-ref.so ALL_PASS
  EXPECT_PASS "collnet_allreduce_matches_the_reference_for_every_claimed_pair,collnet_allgather_of_a_window_matches_every_ranks_block,collnet_reducescatter_of_a_window_matches_the_reference"
  EXPECT_OUTPUT "8 passed, 0 failed")
weft_conformance_test(NAME conformance_collnet_flags_wrong_allgather SUITE collnet
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-net-collnet-broken-collnetgather.so
  EXPECT_FAIL collnet_allgather_of_a_window_matches_every_ranks_block
  EXPECT_PASS "collnet_allreduce_matches_the_reference_for_every_claimed_pair,collnet_reducescatter_of_a_window_matches_the_reference"
  EXPECT_REASON "collnet_allgather_of_a_window_matches_every_ranks_block=iallgather(1000 bytes per rank")
weft_conformance_test(NAME conformance_collnet_flags_wrong_reduction SUITE collnet
  PLUGIN ${WEFT_TEST_PLUGIN_DIR}/libnccl-net-collnet-broken-collnetmax.so
  EXPECT_FAIL "collnet_allreduce_matches_the_reference_for_every_claimed_pair,collnet_reducescatter_of_a_window_matches_the_reference"
  EXPECT_PASS collnet_reduce_support_answers_every_pair
  EXPECT_REASON "collnet_allreduce_matches_the_reference_for_every_claimed_pair=iallreduce(float32,collnet_allreduce_matches_the_reference_for_every_claimed_pair=the reference says,collnet_reducescatter_of_a_window_matches_the_reference=ireducescatter(float32")
