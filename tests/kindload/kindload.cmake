# GIN/RMA/CollNet loader tests (label: plugin): core/plugin/kind_load.c (linked from
# weft_netload_core, tests/netload) on fixture plugins of every kind and version built from
# kind_fixture.c into build/tests/kindload/. One process per case: the settings are read per open.

set(KINDLOAD_DIR ${PROJECT_BINARY_DIR}/tests/kindload)
set(KINDLOAD_FIXTURES)
# file stem | compile definitions (comma list) | table name
set(KINDLOAD_SPECS
  "gin-v11|FIX_GIN=11|fix-gin11" "gin-v12|FIX_GIN=12|fix-gin12" "gin-v13|FIX_GIN=13|fix-gin13"
  "gin-v14|FIX_GIN=14|fix-gin14" "gin-v15|FIX_GIN=15|fix-gin15"
  "gin-initfails|FIX_GIN=14,FIX_INIT_FAILS|fix-initfails"
  "gin-nullreg|FIX_GIN=15,FIX_NULL_REG|fix-nullreg"
  "rma-v13|FIX_RMA=13|fix-rma13" "rma-v14|FIX_RMA=14|fix-rma14" "rma-v15|FIX_RMA=15|fix-rma15"
  "rma-gin13|FIX_GIN13_ONLY|fix-gin13-as-rma")
foreach(v 6 7 8 9 10 11 12)
  list(APPEND KINDLOAD_SPECS "net-collnet-v${v}|FIX_COLLNET=${v}|fix-collnet")
endforeach()
foreach(spec ${KINDLOAD_SPECS})
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 stem)
  list(GET parts 1 defs)
  list(GET parts 2 tname)
  string(REPLACE "," ";" defs "${defs}")
  set(t kindload_fixture_${stem})
  add_library(${t} SHARED ${CMAKE_CURRENT_LIST_DIR}/kind_fixture.c)
  target_compile_definitions(${t} PRIVATE FIX_NAME="${tname}" ${defs})
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/abi)
  set_target_properties(${t} PROPERTIES PREFIX "lib" OUTPUT_NAME "nccl-${stem}"
    LIBRARY_OUTPUT_DIRECTORY ${KINDLOAD_DIR} C_VISIBILITY_PRESET hidden)
  list(APPEND KINDLOAD_FIXTURES ${t})
endforeach()

foreach(c gin_every_version rma_every_version list_order_and_errors none_and_default
          net_library_lookups window_strict_ordering layouts)
  set(name kindload_${c})
  weft_add_test(NAME ${name} SOURCES ${CMAKE_CURRENT_LIST_DIR}/kindload_test.c LABELS plugin
    TIMEOUT 60 LIBS weft_netload_core ARGS ${c} ENV "LD_LIBRARY_PATH=${KINDLOAD_DIR}")
  target_compile_definitions(${name} PRIVATE KINDLOAD_DIR="${KINDLOAD_DIR}")
  add_dependencies(${name} ${KINDLOAD_FIXTURES})
endforeach()
