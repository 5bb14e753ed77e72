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

add_executable(prof_tree ${CMAKE_CURRENT_LIST_DIR}/prof_tree.c)
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
  add_dependencies(prof_tree nccl-profiler-weft-trace)
  add_test(NAME profiler_trace_plugin_writes_every_collective
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_run.sh $<TARGET_FILE:prof_tree>
      $<TARGET_FILE:nccl-profiler-weft-trace> ${PROJECT_SOURCE_DIR}/tools/weft-trace-merge
      ${CMAKE_CURRENT_LIST_DIR}/check_trace.py ${PROJECT_BINARY_DIR}/tests/profiler_trace)
  set_tests_properties(profiler_trace_plugin_writes_every_collective PROPERTIES
    LABELS "plugin" TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
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
