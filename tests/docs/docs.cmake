# Documentation checks (label unit). docs_env_table: docs/env.md's settings table is the one
# core/util/params.def generates (cmake/env_doc.cmake); `cmake --build build --target env-doc`
# rewrites it. docs_no_outside_paths: no tracked file refers to a path outside the repository.
add_test(NAME docs_env_table COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DMODE=check
  -P ${PROJECT_SOURCE_DIR}/cmake/env_doc.cmake)
set_tests_properties(docs_env_table PROPERTIES LABELS unit TIMEOUT 60)
add_custom_target(env-doc COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DMODE=write
  -P ${PROJECT_SOURCE_DIR}/cmake/env_doc.cmake
  COMMENT "docs/env.md: the settings table from core/util/params.def" VERBATIM)
add_test(NAME docs_no_outside_paths COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}
  -P ${CMAKE_CURRENT_LIST_DIR}/no_outside_paths.cmake)
set_tests_properties(docs_no_outside_paths PROPERTIES LABELS unit TIMEOUT 60)
# docs_design_lists_core_folders: docs/design.md's "Layers" table names every core/ folder that
# has a README, and nothing else.
add_test(NAME docs_design_lists_core_folders COMMAND ${CMAKE_COMMAND}
  -DSRC=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/design_folders.cmake)
set_tests_properties(docs_design_lists_core_folders PROPERTIES LABELS unit TIMEOUT 60)
# example_fault_tolerance: docs/fault-tolerance.md's complete example program, built and run
# (4 workers, worker 1 killed, revoke, shrink, continue, grow back with a standby).
add_executable(example_fault_tolerance ${CMAKE_CURRENT_LIST_DIR}/ft_example_main.c
  ${PROJECT_SOURCE_DIR}/examples/fault-tolerance/ft_train.c)
set_source_files_properties(${PROJECT_SOURCE_DIR}/examples/fault-tolerance/ft_train.c
  PROPERTIES COMPILE_DEFINITIONS main=ft_example_main)
target_link_libraries(example_fault_tolerance PRIVATE weft_testlib)
set_target_properties(example_fault_tolerance PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
add_test(NAME example_fault_tolerance COMMAND example_fault_tolerance 4 1)
set_tests_properties(example_fault_tolerance PROPERTIES LABELS "mp;fault" TIMEOUT 120
  SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN"
  PASS_REGULAR_EXPRESSION "done: every step summed correctly")
# docs_env_lists_every_setting: every NCCL_*/WEFT_* name the code reads is in docs/env.md.
add_test(NAME docs_env_lists_every_setting
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/env_names.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_env_lists_every_setting PROPERTIES LABELS unit TIMEOUT 60)
