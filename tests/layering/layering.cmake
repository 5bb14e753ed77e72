# The static and object libraries under plugins/, one file per line: core/ must use none of
# their symbols (check 5).
function(layering_plugin_libs dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(files)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      list(APPEND files $<TARGET_FILE:${t}>)
    elseif(type STREQUAL "OBJECT_LIBRARY")
      list(APPEND files $<TARGET_OBJECTS:${t}>)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d ${subdirs})
    layering_plugin_libs(${d} more)
    list(APPEND files ${more})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()
layering_plugin_libs(${PROJECT_SOURCE_DIR}/plugins LAYERING_PLUGIN_LIBS)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/layers/plugin_objects.txt
  CONTENT "$<JOIN:${LAYERING_PLUGIN_LIBS},\n>\n")

# The layering of core/ (tests/layering/check_layers.sh): READMEs' Calls lines in order, no
# upward include, no upward symbol in the built objects, docs/design.md's table matching, and
# nothing from plugins/.
add_test(NAME layering_no_call_goes_up
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${PROJECT_SOURCE_DIR}/core
          ${PROJECT_BINARY_DIR}/layers/objects.txt ${PROJECT_SOURCE_DIR}/docs/design.md
          ${PROJECT_BINARY_DIR}/layers/plugin_objects.txt)
set_tests_properties(layering_no_call_goes_up PROPERTIES LABELS unit TIMEOUT 300)
# The checker itself, on a two-folder tree: it must catch an upward symbol, include, cycle and a
# stale design table.
add_test(NAME layering_checker_catches_violations
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/selftest.sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh
          ${CMAKE_C_COMPILER})
set_tests_properties(layering_checker_catches_violations PROPERTIES LABELS unit TIMEOUT 120)
