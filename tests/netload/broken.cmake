# The loader against the deliberately broken plugins of tests/plugins/broken: a plugin broken at
# load time is skipped with one WARN and the built-in Socket serves; one broken only at run time
# loads (the conformance suite is what catches it). ctorcrash is left out: a crashing
# constructor takes the process down inside dlopen, in NCCL as in weft.
foreach(spec "nosymbol|skip" "oldversion|skip" "nullisend|skip" "initfails|skip"
             "isendcrash|load" "testhangs|load" "truncate|load" "sizereport|load"
             "fdleak|load" "deadpeer|load" "blockingaccept|load")
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 what)
  list(GET parts 1 expect)
  set(name netload_broken_${what}_${expect})
  weft_add_test(NAME ${name} SOURCES ${CMAKE_CURRENT_LIST_DIR}/netload_broken.c LABELS plugin
    TIMEOUT 30 LIBS weft_netload_core
    ARGS ${PROJECT_BINARY_DIR}/tests/plugins/libnccl-net-broken-${what}.so ${expect})
  add_dependencies(${name} nccl-net-broken-${what})
endforeach()
