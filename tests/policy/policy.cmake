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
foreach(c agree deferred files-differ env invalid hosts)
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

# The env plugin (plugins/env-policy) loaded as NCCL loads it, against the bad corpus too.
# MALLOC_PERTURB_: glibc fills fresh allocations with garbage, so reading one unset (as
# weft-policy explain once did its flags) shows here, not only under ASan.
weft_add_test(NAME policy_env_plugin SOURCES ${WEFT_POLICY_TESTS}/policy_env_plugin.c
  LABELS "unit;plugin;policy" TIMEOUT 120 ENV MALLOC_PERTURB_=165
  ARGS $<TARGET_FILE_DIR:nccl-env-weft> ${WEFT_POLICY_TESTS}/bad $<TARGET_FILE:weft-policy>)
add_dependencies(policy_env_plugin nccl-env-weft weft-policy)

# weft's core reading settings through an env plugin: a stand-in third-party plugin built
# three ways (v2, v1, failing init) into build/tests/plugins.
foreach(v testv2 testv1 testfail)
  add_library(nccl-env-${v} SHARED ${WEFT_POLICY_TESTS}/env_testplug.c)
  set_target_properties(nccl-env-${v} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/plugins)
  target_link_options(nccl-env-${v} PRIVATE -Wl,-z,defs)
endforeach()
target_compile_definitions(nccl-env-testv1 PRIVATE ENV_TEST_V1)
target_compile_definitions(nccl-env-testfail PRIVATE ENV_TEST_INITFAIL)
weft_add_test(NAME policy_env_plugin_in_core SOURCES ${WEFT_POLICY_TESTS}/policy_env_core.c
  LABELS "unit;plugin;policy" TIMEOUT 120 ARGS ${PROJECT_BINARY_DIR}/tests/plugins)
add_dependencies(policy_env_plugin_in_core nccl-env-testv2 nccl-env-testv1 nccl-env-testfail
  nccl-env-weft)

# Stock NCCL (PyTorch's) with libnccl-env-weft.so: GPU machines with torch only (label gpu);
# skipped elsewhere.
add_test(NAME policy_env_plugin_stock_nccl
  COMMAND sh ${WEFT_POLICY_TESTS}/stock_nccl_env_plugin.sh $<TARGET_FILE:nccl-env-weft>
          $<TARGET_FILE:nccl-net-weft-socket>)
set_tests_properties(policy_env_plugin_stock_nccl PROPERTIES LABELS "gpu;policy" TIMEOUT 300
  SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu)
# ncclParam* against weft-policy's schema and explain for one environment (issue 50).
weft_add_test(NAME param_api_matches_weft_policy SOURCES ${CMAKE_CURRENT_LIST_DIR}/param_api.c
  LABELS unit ARGS $<TARGET_FILE:weft-policy>)
add_dependencies(param_api_matches_weft_policy weft-policy)

# weft-policy's command line: all errors despite a duplicate key, check's order warning,
# explain without FILE.
add_test(NAME policy_cli_reports_all_warns_order_explains_default
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/weft_policy_cli.sh $<TARGET_FILE:weft-policy>)
set_tests_properties(policy_cli_reports_all_warns_order_explains_default PROPERTIES
  LABELS "unit;policy" TIMEOUT 60)
