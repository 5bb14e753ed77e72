# The layering of core/ (tests/layering/check_layers.sh): READMEs' Calls lines in order, no
# upward include, no upward symbol in the built objects, docs/design.md's table matching.
add_test(NAME layering_no_call_goes_up
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${PROJECT_SOURCE_DIR}/core
          ${PROJECT_BINARY_DIR}/layers/objects.txt ${PROJECT_SOURCE_DIR}/docs/design.md)
set_tests_properties(layering_no_call_goes_up PROPERTIES LABELS unit TIMEOUT 300)
# The checker itself, on a two-folder tree: it must catch an upward symbol, include, cycle and a
# stale design table.
add_test(NAME layering_checker_catches_violations
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/selftest.sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh
          ${CMAKE_C_COMPILER})
set_tests_properties(layering_checker_catches_violations PROPERTIES LABELS unit TIMEOUT 120)
