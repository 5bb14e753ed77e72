# Tests of core/plugin's profiler loader and the core's events (label plugin): the reference
# profiler plugin, built once per ABI version, records a 2-rank host run; broken ones are
# skipped with one WARN.
set(WEFT_PROF_PLUGIN_DIR ${PROJECT_BINARY_DIR}/tests/plugins)
function(weft_ref_profiler name version)
  add_library(${name} SHARED ${CMAKE_CURRENT_LIST_DIR}/ref_profiler.c)
  target_compile_definitions(${name} PRIVATE REF_VERSION=${version} ${ARGN})
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${WEFT_PROF_PLUGIN_DIR})
  target_link_libraries(${name} PRIVATE Threads::Threads)
endfunction()
foreach(v 1 2 3 4 5 6)
  weft_ref_profiler(nccl-profiler-ref-v${v} ${v})
endforeach()
weft_ref_profiler(nccl-profiler-weftref 6)
weft_ref_profiler(nccl-profiler-ref-nosym 6 REF_BROKEN_NOSYM)
weft_ref_profiler(nccl-profiler-ref-nullstop 6 REF_BROKEN_NULL_STOP)

add_executable(prof_tree ${CMAKE_CURRENT_LIST_DIR}/prof_tree.c
  ${CMAKE_CURRENT_LIST_DIR}/prof_net_check.c)
target_link_libraries(prof_tree PRIVATE weft_testlib m ${CMAKE_DL_LIBS})
target_include_directories(prof_tree PRIVATE ${CMAKE_CURRENT_LIST_DIR})
set_target_properties(prof_tree PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

# name case: command, extra env, pass regex (the WARN a broken plugin must cost)
function(weft_prof_test name)
  cmake_parse_arguments(T "" "PASS" "ARGS;ENV" ${ARGN})
  add_test(NAME profiler_${name} COMMAND prof_tree ${T_ARGS})
  set_tests_properties(profiler_${name} PROPERTIES LABELS "plugin" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN;${T_ENV}")
  if(T_PASS)
    set_tests_properties(profiler_${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS}")
  endif()
endfunction()
foreach(v 1 2 3 4 5 6)
  weft_prof_test(tree_v${v} ARGS tree $<TARGET_FILE:nccl-profiler-ref-v${v}>)
  add_dependencies(prof_tree nccl-profiler-ref-v${v})
endforeach()
add_dependencies(prof_tree nccl-profiler-weftref nccl-profiler-ref-nosym nccl-profiler-ref-nullstop)
weft_prof_test(tree_over_net_v6 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
  ENV NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 PROF_EXPECT_PROXY=1)
weft_prof_test(tree_over_net_v2 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v2>
  ENV NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 PROF_EXPECT_PROXY=1)
# v4 is the first ABI with NCCL's ProxyOpInProgress and SendPeerWait states (prof_tree.c)
weft_prof_test(tree_over_net_v4 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v4>
  ENV NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 PROF_EXPECT_PROXY=1)
# NetPlugin events (prof_net_check.c): each of weft's nets reports its transfers under the
# proxy's steps — the built-in socket net, and the socket, ib (over fakeverbs) and ofi
# (tcp;ofi_rxm) plugins as NCCL_NET_PLUGIN; v3 has them without transSize; v2 drops them (its shim), and a
# mask without ncclProfileNetPlugin (0x80) sees none. 1 MiB operations: the socket nets stripe
# steps over their data sockets, IB over its 2 QPs.
set(PROF_NET NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 PROF_EXPECT_PROXY=1 PROF_COUNT=262144)
weft_prof_test(net_events_builtin_socket_v6 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
  ENV ${PROF_NET} PROF_EXPECT_NET=sock)
weft_prof_test(net_events_builtin_socket_v3 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v3>
  ENV ${PROF_NET} PROF_EXPECT_NET=sock)
weft_prof_test(net_events_dropped_for_v2 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v2>
  ENV ${PROF_NET} PROF_EXPECT_NET=none REF_PROF_MASK=0xbf) # v2's every event, and 0x80
weft_prof_test(net_events_off_without_the_mask_bit ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
  ENV ${PROF_NET} PROF_EXPECT_NET=none REF_PROF_MASK=0xf7f) # v6's default but 0x80
if(TARGET nccl-net-weft-socket)
  weft_prof_test(net_events_weft_socket_plugin_v6 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
    ENV ${PROF_NET} PROF_EXPECT_NET=sock NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-weft-socket>
      NCCL_NET=weft-socket)
  add_dependencies(prof_tree nccl-net-weft-socket)
endif()
if(TARGET nccl-net-weft-ib AND TARGET fakeverbs)
  weft_prof_test(net_events_weft_ib_plugin_v6 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
    ENV ${PROF_NET} PROF_EXPECT_NET=ib NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-weft-ib>
      NCCL_NET=weft-ib WEFT_IB_VERBS_LIB=$<TARGET_FILE:fakeverbs> NCCL_SOCKET_IFNAME=lo
      WEFT_IB_GDR=0 WEFT_IB_QPS_PER_CONN=2)
  add_dependencies(prof_tree nccl-net-weft-ib fakeverbs)
endif()
if(TARGET nccl-net-weft-ofi)
  weft_prof_test(net_events_weft_ofi_plugin_v6 ARGS tree $<TARGET_FILE:nccl-profiler-ref-v6>
    ENV ${PROF_NET} PROF_EXPECT_NET=ofi NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-weft-ofi>
      NCCL_NET=weft-ofi WEFT_OFI_DOMAIN=lo)
  netofi_provider(profiler_net_events_weft_ofi_plugin_v6 tcp+ofi_rxm)
  add_dependencies(prof_tree nccl-net-weft-ofi)
endif()
# The same events through each plugin's exported table, with a counting profFn in the core's
# place: stopped once after transfers, at close with requests in flight, when the peer goes
# away (net_prof_events.c).
add_executable(net_prof_events ${CMAKE_CURRENT_LIST_DIR}/net_prof_events.c
  ${CMAKE_CURRENT_LIST_DIR}/prof_net_check.c)
target_link_libraries(net_prof_events PRIVATE weft_testlib Threads::Threads ${CMAKE_DL_LIBS})
target_include_directories(net_prof_events PRIVATE ${CMAKE_CURRENT_LIST_DIR})
set_target_properties(net_prof_events PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
function(weft_net_prof_test name plugin kind)
  cmake_parse_arguments(T "" "" "ARGS;ENV" ${ARGN})
  add_test(NAME net_prof_events_${name} COMMAND net_prof_events $<TARGET_FILE:${plugin}> ${kind}
    ${T_ARGS})
  set_tests_properties(net_prof_events_${name} PROPERTIES LABELS "plugin" TIMEOUT 120
    SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "NET-PROF-EVENTS-OK"
    ENVIRONMENT "NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;${T_ENV}")
  add_dependencies(net_prof_events ${plugin})
endfunction()
if(TARGET nccl-net-weft-socket)
  weft_net_prof_test(socket nccl-net-weft-socket sock)
  weft_net_prof_test(socket_v10_table nccl-net-weft-socket sock ARGS v10)
endif()
if(TARGET nccl-net-weft-ib AND TARGET fakeverbs)
  weft_net_prof_test(ib nccl-net-weft-ib ib
    ENV WEFT_IB_VERBS_LIB=$<TARGET_FILE:fakeverbs> WEFT_IB_GDR=0 WEFT_IB_QPS_PER_CONN=2)
  add_dependencies(net_prof_events fakeverbs)
endif()
if(TARGET nccl-net-weft-ofi)
  weft_net_prof_test(ofi nccl-net-weft-ofi ofi ENV WEFT_OFI_DOMAIN=lo)
  netofi_provider(net_prof_events_ofi tcp+ofi_rxm)
endif()

weft_prof_test(by_name ARGS tree ${WEFT_PROF_PLUGIN_DIR}/libnccl-profiler-weftref.so weftref
  ENV LD_LIBRARY_PATH=${WEFT_PROF_PLUGIN_DIR})
weft_prof_test(mask_zero_reports_nothing ARGS mask0 $<TARGET_FILE:nccl-profiler-ref-v6>
  ENV REF_PROF_MASK=0)
weft_prof_test(null_context_is_not_finalized ARGS nullctx $<TARGET_FILE:nccl-profiler-ref-v5>
  ENV REF_PROF_NULL_CTX=1)
weft_prof_test(failing_init_is_skipped ARGS unused $<TARGET_FILE:nccl-profiler-ref-v6>
  ENV REF_PROF_FAIL_INIT=1
  PASS "init\\(rank 0 of 2\\) failed \\(ncclInternalError\\); continuing without profiler[^@]*PROFILER-TEST-OK")
weft_prof_test(missing_symbol_is_skipped ARGS unused $<TARGET_FILE:nccl-profiler-ref-nosym>
  PASS "exports no ncclProfiler_v1..v6 symbol[^@]*PROFILER-TEST-OK")
weft_prof_test(null_stop_event_is_skipped ARGS unused $<TARGET_FILE:nccl-profiler-ref-nullstop>
  PASS "stopEvent is NULL after init[^@]*PROFILER-TEST-OK")
weft_prof_test(missing_library_is_one_warn ARGS unused /nonexistent/libnccl-profiler-x.so
  PASS "NCCL_PROFILER_PLUGIN=/nonexistent/libnccl-profiler-x.so: no such library[^@]*PROFILER-TEST-OK")

# weft's trace plugin (plugins/profiler-trace) in a 4-rank run, and the merge tool.
if(TARGET nccl-profiler-weft-trace)
  # KernelCh per channel, each timed by the executor (tests/gpu/kernelch_trace.py; its device
  # twin is gpu_profiler_kernelch_timed_on_gpu).
  add_test(NAME profiler_kernelch_timed_host
    COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/gpu/kernelch_trace.py $<TARGET_FILE:weft-perf>
      $<TARGET_FILE:nccl-profiler-weft-trace> ${PROJECT_BINARY_DIR}/tests/kernelch_host host)
  set_tests_properties(profiler_kernelch_timed_host PROPERTIES LABELS "plugin;mp" TIMEOUT 240
    SKIP_RETURN_CODE 77 ENVIRONMENT "NCCL_DEBUG=WARN")
  add_dependencies(prof_tree nccl-profiler-weft-trace)
  function(weft_trace_test name out env)
    add_test(NAME profiler_trace_plugin_${name}
      COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_run.sh $<TARGET_FILE:prof_tree>
        $<TARGET_FILE:nccl-profiler-weft-trace> ${PROJECT_SOURCE_DIR}/tools/weft-trace-merge
        ${CMAKE_CURRENT_LIST_DIR}/check_trace.py ${PROJECT_BINARY_DIR}/tests/${out})
    set_tests_properties(profiler_trace_plugin_${name} PROPERTIES
      LABELS "plugin" TIMEOUT 120 SKIP_RETURN_CODE 77
      ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN;${env}")
  endfunction()
  weft_trace_test(writes_every_collective profiler_trace "")
  # Ranks that exit without finalizing: the files are written as the plugin is unloaded.
  weft_trace_test(writes_at_exit_without_finalize profiler_trace_exit "TRACE_CASE=trace_exit")
  # Over the socket net: the NetPlugin events become net transfers on the channels' net tracks.
  weft_trace_test(warns_on_bad_settings profiler_trace_bad "PROF_NRANKS=2;TRACE_BAD_SETTINGS=1")
  weft_trace_test(shows_net_transfers profiler_trace_net
    "PROF_NRANKS=2;TRACE_EXPECT_NET=socket;NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1")
endif()

# The frozen headers' layout against NCCL's (compile-time).
weft_add_test(NAME profiler_abi_layout_matches_nccl
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/prof_abi_layout.c LABELS unit)

# weft-conformance profiler: the trace plugin and the v2 reference pass; a crashing and a
# leaking plugin are flagged.
weft_ref_profiler(nccl-profiler-ref-crashstop 5 REF_BROKEN_CRASH_STOP)
weft_ref_profiler(nccl-profiler-ref-leak 4 REF_BROKEN_LEAK)
if(TARGET weft-conformance AND TARGET nccl-profiler-weft-trace)
  add_test(NAME profiler_conformance_passes_good_and_flags_broken
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/conformance_run.sh $<TARGET_FILE:weft-conformance>
      $<TARGET_FILE:nccl-profiler-weft-trace> $<TARGET_FILE:nccl-profiler-ref-v2>
      $<TARGET_FILE:nccl-profiler-ref-crashstop>
      $<TARGET_FILE:nccl-profiler-ref-leak>)
  set_tests_properties(profiler_conformance_passes_good_and_flags_broken PROPERTIES
    LABELS "plugin;conformance" TIMEOUT 300)
  add_dependencies(prof_tree nccl-profiler-ref-crashstop nccl-profiler-ref-leak)
endif()
