# Net plugin loader tests (label: plugin). The loader and shims (core/plugin/*.c) are linked
# from a static helper so these tests reach internal functions without going through api/; each
# test links the built-in net's registration (plugins/net-socket/builtin_register.c) as the
# library does.
# Test plugins are built as libnccl-net-<x>.so into one directory; each case runs in its own
# process because NCCL_NET_PLUGIN is read once per process.

set(NETLOAD_DIR ${PROJECT_BINARY_DIR}/tests/netload)
set(NETLOAD_SRC ${CMAKE_CURRENT_LIST_DIR})

file(GLOB NETLOAD_CORE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/core/plugin/*.c)
add_library(weft_netload_core STATIC ${NETLOAD_CORE_SOURCES})
target_link_libraries(weft_netload_core PUBLIC weft_util)

# short name | compile options (comma list) | plugin name
set(NETLOAD_PLUGINS
  "eight|TESTNET_V8|Eight"
  "eleven|TESTNET_V11|Eleven"
  "ten|TESTNET_V10|Ten"
  "both|TESTNET_V6,TESTNET_V11,TESTNET_V6_OLD|Both"
  "nosym||NoSym"
  "nullisend|TESTNET_V8,TESTNET_NULL_ISEND|NullIsend"
  "initfail|TESTNET_V11,TESTNET_INIT_FAIL|InitFail"
  "zerodev|TESTNET_V8,TESTNET_ZERO_DEVS|ZeroDev"
  "clash|TESTNET_V11|Socket")
set(NETLOAD_PLUGIN_TARGETS)
foreach(spec ${NETLOAD_PLUGINS})
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 short)
  list(GET parts 1 opts)
  list(GET parts 2 pname)
  string(REPLACE "," ";" opts "${opts}")
  set(t netload_plugin_${short})
  add_library(${t} SHARED ${NETLOAD_SRC}/testnet_plugin.c)
  target_compile_definitions(${t} PRIVATE TESTNET_NAME="${pname}" ${opts})
  set_target_properties(${t} PROPERTIES PREFIX "lib" OUTPUT_NAME "nccl-net-${short}"
    LIBRARY_OUTPUT_DIRECTORY ${NETLOAD_DIR} C_VISIBILITY_PRESET hidden)
  list(APPEND NETLOAD_PLUGIN_TARGETS ${t})
endforeach()

function(netload_case prog src casename)
  set(name ${prog}_${casename})
  weft_add_test(NAME ${name} SOURCES ${NETLOAD_SRC}/${src} LABELS plugin TIMEOUT 60
    LIBS weft_netload_core weft_net_socket_builtin ARGS ${casename}
    ENV "LD_LIBRARY_PATH=${NETLOAD_DIR}")
  target_compile_definitions(${name} PRIVATE NETLOAD_PLUGIN_DIR="${NETLOAD_DIR}")
  add_dependencies(${name} ${NETLOAD_PLUGIN_TARGETS})
endfunction()

foreach(c select_by_net_name select_by_path_and_short_name none_uses_builtin_socket
          default_library_absent_is_silent old_abi_init_once_v11_per_comm
          old_properties_get_defaults shims_convert_sizes v6_shim v11_wins_over_v6
          skips_broken_with_one_warn list_longer_than_14_is_cut two_candidates_with_one_name_warn)
  netload_case(netload netload_test.c ${c})
endforeach()
foreach(c mandatory_null optional_stubs one_struct_per_old_version versions init_once)
  netload_case(netshim netshim_test.c ${c})
endforeach()

# weft's own socket plugin library, when built, loaded like any external plugin.
netload_case(netload netload_test.c weft_socket_library_all_versions)
if(TARGET nccl-net-weft-socket)
  target_compile_definitions(netload_weft_socket_library_all_versions PRIVATE
    NETLOAD_SOCKET_LIB="$<TARGET_FILE:nccl-net-weft-socket>")
  add_dependencies(netload_weft_socket_library_all_versions nccl-net-weft-socket)
endif()
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
    TIMEOUT 30 LIBS weft_netload_core weft_net_socket_builtin
    ARGS ${PROJECT_BINARY_DIR}/tests/plugins/libnccl-net-broken-${what}.so ${expect})
  add_dependencies(${name} nccl-net-broken-${what})
endforeach()
