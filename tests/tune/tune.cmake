# Tests of core/tune and the tuner plugins (label unit: pure, linked in; mp: forked ranks).
set(WEFT_TUNE_MODEL_SOURCES
  ${PROJECT_SOURCE_DIR}/core/tune/algo_proto.c ${PROJECT_SOURCE_DIR}/core/tune/tune_model.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_model_host.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_model_direct.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_model_log.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_model_collnet.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_model_device.c
  ${PROJECT_SOURCE_DIR}/core/tune/tune_constants.c ${PROJECT_SOURCE_DIR}/core/tune/tune_decide.c)
weft_add_test(NAME tune_algo_proto_grammar_matches_nccl
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_grammar.c ${PROJECT_SOURCE_DIR}/core/tune/algo_proto.c
  LABELS unit)
weft_add_test(NAME tune_choose_stays_inside_mask_and_caps
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_choose.c ${WEFT_TUNE_MODEL_SOURCES}
  LABELS unit)
weft_add_test(NAME tune_model_decisions_for_representative_topologies
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_decisions.c ${WEFT_TUNE_MODEL_SOURCES} LABELS unit)
weft_add_test(NAME tune_decide_checks_tuner_answers
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_decide_tuner.c ${WEFT_TUNE_MODEL_SOURCES} LABELS unit)
weft_add_test(NAME tune_direct_algorithms_names_model_and_tuner_slots
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_direct.c ${WEFT_TUNE_MODEL_SOURCES}
    ${PROJECT_SOURCE_DIR}/core/tune/tune_op.c LABELS unit)
weft_add_test(NAME tune_collnet_chain_only_with_a_usable_plugin_and_claimed_pair
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_collnet.c ${WEFT_TUNE_MODEL_SOURCES}
    ${PROJECT_SOURCE_DIR}/core/tune/tune_op.c LABELS unit)
# A forced direct algorithm where it cannot run: a clear ncclInvalidUsage, the comm still works.
add_executable(tune_direct_mp ${CMAKE_CURRENT_LIST_DIR}/tune_direct_mp.c)
target_link_libraries(tune_direct_mp PRIVATE weft_testlib)
set_target_properties(tune_direct_mp PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
foreach(c "oneshot_9ranks;OneShot" "twoshot_allgather;TwoShot")
  list(GET c 0 _case)
  list(GET c 1 _algo)
  add_test(NAME tune_direct_forced_${_case} COMMAND tune_direct_mp ${_case})
  set_tests_properties(tune_direct_forced_${_case} PROPERTIES LABELS "mp" TIMEOUT 150
    ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_ALGO=${_algo}")
endforeach()
# The same refusal for a log algorithm forced on a collective it does not implement (Binomial
# is a Broadcast/Reduce); the AllReduce then runs on the model's choice and is exact.
add_test(NAME tune_log_forced_binomial_allgather COMMAND tune_direct_mp twoshot_allgather)
set_tests_properties(tune_log_forced_binomial_allgather PROPERTIES LABELS "mp" TIMEOUT 150
  ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_ALGO=AllGather:Binomial")
if(TARGET weft_tuner_rules)
  weft_add_test(NAME tune_rules_yaml_and_csv_load_and_apply
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_rules.c LIBS weft_tuner_rules LABELS unit
    ARGS ${CMAKE_CURRENT_LIST_DIR}/rules)
endif()
# A tuner's choice reaches the executor; broken tuners cost one WARN and change nothing.
if(TARGET nccl-tuner-weft)
  add_test(NAME tune_weft_tuner_follows_nccl_conventions
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:nccl-tuner-weft>
      -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_tuner_exports.cmake)
  set_tests_properties(tune_weft_tuner_follows_nccl_conventions PROPERTIES LABELS "unit;plugin")
  set(WEFT_TUNE_MP_CASES model reftuner_by_name reftuner_by_path reftuner_v2 reftuner_v3
    reftuner_v4 reftuner_v5 weft_yaml weft_yaml_direct weft_csv weft_policy weft_no_rules
    weft_bad_rules missing_library
    null_init null_getcollinfo init_fails getcollinfo_fails writes_ignored_cell nan_cell
    negative_channels v2_bad_index raises_cells net_plugin_fallback ranks_disagree)
  # A net plugin that carries a tuner (the socket net's tables + reftuner), for NCCL's fallback
  # from the tuner library to the net plugin's.
  add_library(nccl-net-withtuner SHARED ${PROJECT_SOURCE_DIR}/plugins/net-socket/plugin_exports.c
    ${PROJECT_SOURCE_DIR}/tests/plugins/broken/tuner_good.c
    ${PROJECT_SOURCE_DIR}/tests/plugins/broken/reftuner.c)
  target_include_directories(nccl-net-withtuner PRIVATE ${PROJECT_SOURCE_DIR}/tests/plugins/broken
    ${PROJECT_SOURCE_DIR}/plugins/common)
  target_link_libraries(nccl-net-withtuner PRIVATE weft_net_socket_impl weft_util)
  set_target_properties(nccl-net-withtuner PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/plugins)
  add_executable(tune_tuner_mp ${CMAKE_CURRENT_LIST_DIR}/tune_tuner_mp.c)
  target_link_libraries(tune_tuner_mp PRIVATE weft_testlib)
  target_compile_definitions(tune_tuner_mp PRIVATE
    WEFT_TEST_PLUGIN_DIR="${PROJECT_BINARY_DIR}/tests/plugins")
  set_target_properties(tune_tuner_mp PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_dependencies(tune_tuner_mp nccl-tuner-weft nccl-tuner-reftuner nccl-net-withtuner)
  foreach(c ${WEFT_TUNE_MP_CASES})
    add_test(NAME tune_tuner_${c} COMMAND tune_tuner_mp ${c})
    set_tests_properties(tune_tuner_${c} PROPERTIES LABELS "mp;plugin" TIMEOUT 120
      SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
  endforeach()
endif()
# weft-perf --explain: the PNG writer, and a 2-rank run with its decision table.
weft_add_test(NAME tune_explain_png_is_valid
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_explain_png.c LIBS weft_perf_logic LABELS unit)
target_sources(tune_explain_png_is_valid PRIVATE ${PROJECT_SOURCE_DIR}/tools/perf/explain.c)
add_test(NAME tune_explain_table_and_plot
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/scripts/explain_run.sh $<TARGET_FILE:weft-perf>
    ${PROJECT_BINARY_DIR}/tests/tune_explain)
set_tests_properties(tune_explain_table_and_plot PROPERTIES LABELS mp TIMEOUT 120
  ENVIRONMENT "NCCL_DEBUG=WARN")
weft_add_test(NAME tune_log_algorithms_names_model_and_tuner_slots
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_log.c ${WEFT_TUNE_MODEL_SOURCES}
    ${PROJECT_SOURCE_DIR}/core/tune/tune_op.c LABELS unit)
