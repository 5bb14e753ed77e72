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
# docs_env_lists_every_setting: every NCCL_*/WEFT_* name the code reads is in docs/env.md.
add_test(NAME docs_env_lists_every_setting
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/env_names.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_env_lists_every_setting PROPERTIES LABELS unit TIMEOUT 60)
