# Net plugins that behave like the ones deployed in the field (label `plugin`), built here on
# refnet (tests/plugins/broken/refnet.c) into build/tests/plugins/field/libnccl-net-field-<what>.so:
#   fillinit      tables hold only name and init; init fills them in (nccl-rdma-sharp-plugins)
#   blocking      v6; accept blocks until a connection arrives, connect until the peer accepted
#                 (with NCCL_ALGO=Ring both ranks list the accept first: polled from one thread,
#                 they deadlock)
#   cxxstyle      stays loaded after dlclose (-z nodelete) and keeps a process-wide instance
#   peerprogress  takes a send only once the receiver has posted for it (libfabric rxm)
#   zerodev       loads and inits, 0 devices (a host without the NIC)
# Each loads in weft and runs a checked host-mode AllReduce (fieldnet_allreduce.c), or is
# reported with the verdict weft-conformance owes it.
set(FIELDNET_DIR ${PROJECT_BINARY_DIR}/tests/plugins/field)
set(FIELDNET_SRC ${CMAKE_CURRENT_LIST_DIR})
set(FIELDNET_REFNET ${WEFT_BROKEN_DIR})

foreach(what fillinit blocking cxxstyle peerprogress zerodev)
  add_library(nccl-net-field-${what} SHARED ${FIELDNET_SRC}/${what}.c
    ${FIELDNET_SRC}/fieldnet_v6.c $<TARGET_OBJECTS:weft_refnet>)
  target_include_directories(nccl-net-field-${what} PRIVATE ${FIELDNET_REFNET} ${FIELDNET_SRC})
  set_target_properties(nccl-net-field-${what} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${FIELDNET_DIR})
  target_link_options(nccl-net-field-${what} PRIVATE -Wl,-z,defs)
endforeach()
target_link_options(nccl-net-field-cxxstyle PRIVATE -Wl,-z,nodelete)

set(F ${FIELDNET_DIR}/libnccl-net-field)

# ---- host-mode AllReduce through the public API ----
add_executable(fieldnet_allreduce ${FIELDNET_SRC}/fieldnet_allreduce.c)
target_link_libraries(fieldnet_allreduce PRIVATE weft_testlib)
set_target_properties(fieldnet_allreduce PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
# name | mode | plugin | net name | ranks | extra environment (;-list) | timeout
foreach(spec "table_filled_by_init|ok|fillinit|field-fillinit|2||120"
             "table_filled_by_init_reloads|twice|fillinit|field-fillinit|2||120"
             "blocking_accept_and_connect_v6|ok|blocking|field-blocking|2|NCCL_ALGO=Ring|120"
             "blocking_accept_and_connect_v6_3_ranks|ok|blocking|field-blocking|3|NCCL_ALGO=Ring|120"
             "cxx_style_survives_dlclose|twice|cxxstyle|field-cxxstyle|2||120"
             "needs_peer_progress|ok|peerprogress|field-peerprogress|2||120"
             "zero_devices_falls_back_to_socket|fallback|zerodev|field-zerodev|2||120"
             "accept_never_returns_times_out|timeout|blocking|field-blocking|2|WEFT_TIMEOUT_MS=7000,FIELDNET_ACCEPT_NEVER=1,FIELDNET_BLOCK_S=30|60")
  string(REPLACE "|" ";" p "${spec}")
  list(GET p 0 name)
  list(GET p 1 mode)
  list(GET p 2 what)
  list(GET p 3 netname)
  list(GET p 4 ranks)
  list(GET p 5 extra)
  list(GET p 6 tmo)
  string(REPLACE "," ";" extra "${extra}")
  add_test(NAME fieldnet_${name} COMMAND fieldnet_allreduce ${mode} ${netname} ${ranks})
  set_tests_properties(fieldnet_${name} PROPERTIES LABELS "plugin;mp" TIMEOUT ${tmo}
    SKIP_RETURN_CODE 77
    ENVIRONMENT "WEFT_DEVICE=host;NCCL_SOCKET_IFNAME=lo;NCCL_NET_PLUGIN=${F}-${what}.so;${extra}")
  add_dependencies(fieldnet_allreduce nccl-net-field-${what})
endforeach()

# ---- what weft-conformance says of them ----
set(FIELD_QUICK "--filter|net_plugin*,net_v*,net_init*,net_devices*,net_properties*,net_connect_and_accept*,net_accept_before*,net_message_of_4096*,net_message_of_1MiB*,net_recv_larger*")
foreach(v 11 6)
  weft_conformance_test(NAME conformance_field_table_filled_by_init_v${v}
    PLUGIN ${F}-fillinit.so ARGS "${FIELD_QUICK}|--abi|v${v}" ALL_PASS
    EXPECT_PASS net_v${v}_table_has_name_and_mandatory_entries,net_init_with_logger_succeeds,net_message_of_4096_bytes_arrives_intact
    EXPECT_OUTPUT "after init the table is named \"field-fillinit\"")
endforeach()
# weft survives a blocking accept; it stays a broken contract in the verdict and the summary.
weft_conformance_test(NAME conformance_field_blocking_accept_stays_a_fail
  PLUGIN ${F}-blocking.so ARGS "--filter|net_accept_before*,net_init_with*,net_message_of_4096*"
  ENV "FIELDNET_BLOCK_S=3"
  EXPECT_FAIL net_accept_before_connect_returns_null_promptly
  EXPECT_PASS net_init_with_logger_succeeds
  EXPECT_REASON "net_accept_before_connect_returns_null_promptly=accept took"
  EXPECT_OUTPUT "1. net_accept_before_connect_returns_null_promptly: a blocking accept deadlocks stock NCCL")
weft_conformance_test(NAME conformance_field_cxx_style_reloads
  PLUGIN ${F}-cxxstyle.so ARGS "--filter|net_init*" ALL_PASS
  EXPECT_PASS net_init_again_after_finalize_and_reload_works,net_init_twice_gives_independent_contexts)
weft_conformance_test(NAME conformance_field_cxx_style_refusing_reinit_fails
  PLUGIN ${F}-cxxstyle.so ARGS "--filter|net_init*" ENV "FIELDNET_REINIT_FAILS=1"
  EXPECT_FAIL net_init_again_after_finalize_and_reload_works
  EXPECT_REASON "net_init_again_after_finalize_and_reload_works=init returned ncclSystemError,net_init_again_after_finalize_and_reload_works=stayed loaded after dlclose"
  EXPECT_OUTPUT "    plugin: WARN field-cxxstyle: init #2 finds the instance of an earlier load torn down")
weft_conformance_test(NAME conformance_field_needs_peer_progress_is_inconclusive
  PLUGIN ${F}-peerprogress.so ARGS "--filter|net_receiver_exit*,net_message_of_4096*|--timeout|40"
  EXPECT_EXIT 0
  EXPECT_INCONCLUSIVE net_receiver_exit_mid_transfer_fails_sender_test
  EXPECT_PASS net_message_of_4096_bytes_arrives_intact
  EXPECT_REASON "net_receiver_exit_mid_transfer_fails_sender_test=the peer's progress"
  EXPECT_OUTPUT "could not reach what they check")
weft_conformance_test(NAME conformance_field_zero_devices_is_one_line
  PLUGIN ${F}-zerodev.so EXPECT_EXIT 0
  EXPECT_PASS net_plugin_loads_with_rtld_now_local,net_v11_table_has_name_and_mandatory_entries,net_init_with_logger_succeeds,net_init_again_after_finalize_and_reload_works
  EXPECT_SKIP net_devices_reports_at_least_one,net_properties_are_sane_for_the_version,net_message_of_4096_bytes_arrives_intact,net_receiver_exit_mid_transfer_fails_sender_test
  EXPECT_REASON "net_message_of_4096_bytes_arrives_intact=0 devices on this host"
  EXPECT_OUTPUT "# 0 devices: the plugin loads and inits but finds no device on this host")
foreach(t conformance_field_table_filled_by_init_v11 conformance_field_table_filled_by_init_v6
          conformance_field_blocking_accept_stays_a_fail conformance_field_cxx_style_reloads
          conformance_field_cxx_style_refusing_reinit_fails
          conformance_field_needs_peer_progress_is_inconclusive
          conformance_field_zero_devices_is_one_line)
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "NCCL_SOCKET_IFNAME=lo")
endforeach()
