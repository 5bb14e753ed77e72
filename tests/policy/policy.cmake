# Policy tests: the engine in-process (unit, mutation), `weft-policy check` against the bad and
# good corpora and the docs' examples, forked ranks agreeing (or not) on one host, and a
# two-host run in network + UTS namespaces (label netns; needs root, skipped otherwise).
set(WEFT_POLICY_TESTS ${CMAKE_CURRENT_LIST_DIR})

weft_add_test(NAME policy_engine SOURCES ${WEFT_POLICY_TESTS}/policy_unit.c
  LABELS unit LIBS weft_policy)

weft_add_test(NAME policy_mutations_no_crash_bounded_time
  SOURCES ${WEFT_POLICY_TESTS}/policy_mutate.c
  LABELS unit LIBS weft_policy TIMEOUT 60 ARGS ${WEFT_POLICY_TESTS}/good 5000)

weft_add_test(NAME policy_check_corpus SOURCES ${WEFT_POLICY_TESTS}/policy_corpus.c LABELS unit
  ARGS $<TARGET_FILE:weft-policy> ${WEFT_POLICY_TESTS}/bad ${WEFT_POLICY_TESTS}/good
       ${PROJECT_SOURCE_DIR}/docs/policy.md)
add_dependencies(policy_check_corpus weft-policy)
if(WEFT_SANITIZE)
  target_compile_definitions(policy_check_corpus PRIVATE WEFT_TEST_SANITIZED)
endif()

add_executable(policy_ranks ${WEFT_POLICY_TESTS}/policy_ranks.c)
target_link_libraries(policy_ranks PRIVATE weft_testlib)
set_target_properties(policy_ranks PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
foreach(c agree deferred files-differ invalid hosts)
  add_test(NAME policy_ranks_${c} COMMAND policy_ranks ${c})
  set_tests_properties(policy_ranks_${c} PROPERTIES LABELS "mp;policy" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endforeach()

add_executable(policy_netns_rank ${WEFT_POLICY_TESTS}/policy_netns_rank.c)
target_link_libraries(policy_netns_rank PRIVATE weft_testlib)
set_target_properties(policy_netns_rank PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
add_test(NAME policy_two_hosts_netns
  COMMAND sh ${WEFT_POLICY_TESTS}/policy_netns.sh $<TARGET_FILE:policy_netns_rank>
          $<TARGET_FILE:nccl-net-weft-socket>)
set_tests_properties(policy_two_hosts_netns PROPERTIES LABELS "netns;policy" TIMEOUT 180
  SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
