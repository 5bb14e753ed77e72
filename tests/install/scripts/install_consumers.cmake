# Builds against the tree install_tree.cmake installed, as a user of the package would (cmake -P):
# the NCCL application of tests/install/app and the plugin template examples/net-plugin, with
# find_package (MODE=cmake) or with pkg-config (MODE=pkgconfig); runs the application in host
# mode on the installed library (checking that the installed file is the one it loaded) and the
# template through the installed weft-conformance (MODE=cmake also runs the installed weft-perf,
# which must find the installed library on its own). Variables: MODE, SRC, WORK, ROOT, PREFIX,
# LIBDIR, BINDIR, CC, NM, REF_PLUGIN (weft's socket plugin: the template must export the
# same ncclNetPlugin_vN, ncclRmaPlugin_vN and ncclGinPlugin_vN tables), and NVCC (optional: MODE=pkgconfig then also builds a
# device-API kernel against the installed nccl_device.h).
set(top ${ROOT}${PREFIX})
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

# run_app(<binary> <libdir> <library file it must load>)
function(run_app app libdir lib)
  run("${app}" ${CMAKE_COMMAND} -E env WEFT_DEVICE=host NCCL_DEBUG=WARN
    LD_LIBRARY_PATH=${libdir} ${app} 3)
  if(NOT run_out MATCHES "nccl_app: library ([^\n]*)\n")
    message(FATAL_ERROR "${app} did not say which library it loaded:\n${run_out}")
  endif()
  file(REAL_PATH "${CMAKE_MATCH_1}" got)
  file(REAL_PATH "${lib}" want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${app} loaded ${CMAKE_MATCH_1}, not the installed ${lib}")
  endif()
  if(NOT run_out MATCHES "nccl_app: OK \\(3 ranks\\)")
    message(FATAL_ERROR "${app}:\n${run_out}")
  endif()
  message("${app}: OK on ${lib}")
endfunction()

# check_plugin(<plugin.so>): exports exactly the tables, passes the installed weft-conformance
# (net, then rma and gin on its one-sided tables).
set(table_re "nccl(Net|Rma|Gin)Plugin_v[0-9]+")
function(check_plugin so)
  run("nm ${REF_PLUGIN}" ${NM} -D --defined-only ${REF_PLUGIN})
  string(REGEX MATCHALL "${table_re}" want "${run_out}")
  list(SORT want)
  run("nm ${so}" ${NM} -D --defined-only ${so})
  string(REGEX MATCHALL "${table_re}" tables "${run_out}")
  list(SORT tables)
  if(NOT want OR NOT tables STREQUAL want)
    message(FATAL_ERROR "${so} exports '${tables}', want '${want}' (as ${REF_PLUGIN})")
  endif()
  list(FILTER want INCLUDE REGEX "ncclNetPlugin_v")
  string(REGEX REPLACE "[^\n]* ${table_re}\n" "" rest "${run_out}")
  if(rest MATCHES "[0-9a-f]+ [BDTR] ")
    message(FATAL_ERROR "${so} exports more than its tables:\n${rest}")
  endif()
  # The whole suite but the 1 GiB transfer on the newest ABI, then the oldest on the data path.
  set(conf ${top}/${BINDIR}/weft-conformance)
  run("weft-conformance" ${CMAKE_COMMAND} -E env NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=WARN
    ${conf} net ${so} --filter "!net_message_of_1GiB*" --json ${WORK}/conformance.json)
  message("${run_out}")
  string(REGEX REPLACE "ncclNetPlugin_v" "" versions "${want}")
  list(SORT versions COMPARE NATURAL)
  list(GET versions 0 oldest)
  run("weft-conformance --abi v${oldest}" ${CMAKE_COMMAND} -E env NCCL_SOCKET_IFNAME=lo
    NCCL_DEBUG=WARN ${conf} net ${so} --abi v${oldest} --filter
    "net_init*,net_connect_and_accept*,net_message_of_4096*,net_message_of_1MiB*,net_recv_larger*,net_full_request_window*,net_messages_keep*")
  string(REGEX MATCH "[0-9]+ passed, 0 failed" summary "${run_out}")
  if(NOT summary)
    message(FATAL_ERROR "weft-conformance --abi v${oldest}:\n${run_out}")
  endif()
  # The one-sided tables: RMA at its newest and oldest versions, GIN v13 (host puts).
  foreach(spec "rma;--abi;v15" "rma;--abi;v13" "gin;--abi;v13")
    list(POP_FRONT spec suite)
    set(args ${suite} ${so} ${spec})
    run("weft-conformance ${args}" ${CMAKE_COMMAND} -E env NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=WARN
      ${conf} ${args})
    string(REGEX MATCH "[0-9]+ passed, 0 failed" summary "${run_out}")
    if(NOT summary)
      message(FATAL_ERROR "weft-conformance ${args}:\n${run_out}")
    endif()
    message("weft-conformance ${args}: ${summary}")
  endforeach()
endfunction()

# The installed weft-perf finds the installed library by itself (LIBDIR/weft/libnccl.so.2).
function(check_weft_perf)
  run("weft-perf" ${CMAKE_COMMAND} -E env WEFT_DEVICE=host NCCL_DEBUG=WARN
    ${top}/${BINDIR}/weft-perf all_reduce -np 2 -b 1K -e 4K -f 4 -n 2 -w 1 -c 1)
  if(NOT run_out MATCHES "# Library: ${top}/${LIBDIR}/weft/libnccl\\.so"
     OR NOT run_out MATCHES "Collective test concluded: all_reduce_perf"
     OR run_out MATCHES "FAILED")
    message(FATAL_ERROR "the installed weft-perf did not run on the installed library:\n${run_out}")
  endif()
  message("weft-perf: ran on ${top}/${LIBDIR}/weft/libnccl.so.2")
endfunction()

if(MODE STREQUAL "cmake")
  check_weft_perf()
  set(cfg -DCMAKE_PREFIX_PATH=${top} -DCMAKE_C_COMPILER=${CC} -DCMAKE_C_FLAGS=-Werror)
  run("configure tests/install/app" ${CMAKE_COMMAND} -S ${SRC}/tests/install/app -B ${WORK}/app ${cfg})
  run("build tests/install/app" ${CMAKE_COMMAND} --build ${WORK}/app)
  run_app(${WORK}/app/nccl_app_weft ${top}/${LIBDIR} ${top}/${LIBDIR}/libweft.so.0)
  run_app(${WORK}/app/nccl_app_nccl ${top}/${LIBDIR}/weft ${top}/${LIBDIR}/weft/libnccl.so.2)
  run("configure examples/net-plugin" ${CMAKE_COMMAND} -S ${SRC}/examples/net-plugin
    -B ${WORK}/plugin ${cfg})
  run("build examples/net-plugin" ${CMAKE_COMMAND} --build ${WORK}/plugin)
  check_plugin(${WORK}/plugin/libnccl-net-example.so)
elseif(MODE STREQUAL "pkgconfig")
  find_program(PKG_CONFIG pkg-config REQUIRED)
  find_program(MAKE make REQUIRED)
  # PKG_CONFIG_SYSROOT_DIR: the .pc files name the final prefix; the tree sits under ROOT.
  set(env ${CMAKE_COMMAND} -E env PKG_CONFIG_SYSROOT_DIR=${ROOT}
    PKG_CONFIG_PATH=${top}/${LIBDIR}/pkgconfig)
  foreach(pc weft weft-nccl)
    run("pkg-config ${pc}" ${env} ${PKG_CONFIG} --cflags --libs ${pc})
    separate_arguments(flags UNIX_COMMAND "${run_out}")
    run("cc nccl_app.c (${pc})" ${CC} -std=c11 -Wall -Wextra -Werror
      ${SRC}/tests/install/app/nccl_app.c ${flags} -o ${WORK}/nccl_app_${pc})
  endforeach()
  run_app(${WORK}/nccl_app_weft ${top}/${LIBDIR} ${top}/${LIBDIR}/libweft.so.0)
  run_app(${WORK}/nccl_app_weft-nccl ${top}/${LIBDIR}/weft ${top}/${LIBDIR}/weft/libnccl.so.2)
  # A device-API kernel builds with nvcc on weft-nccl's Cflags alone (nccl_device.h beside
  # nccl.h); compiled only.
  if(NVCC AND EXISTS "${NVCC}")
    run("pkg-config weft-nccl --cflags" ${env} ${PKG_CONFIG} --cflags weft-nccl)
    separate_arguments(flags UNIX_COMMAND "${run_out}")
    run("nvcc devcomm_header_kernel.cu" ${NVCC} -std=c++17 -arch=sm_90 ${flags}
      -c ${SRC}/tests/devcomm/devcomm_header_kernel.cu -o ${WORK}/devcomm_header_kernel.o)
    message("nvcc: a kernel using all of nccl_device.h builds against the installed headers")
  else()
    message("no nvcc: the installed nccl_device.h was not compiled")
  endif()
  # The template's Makefile builds in its own directory: a copy of it, not the source tree.
  file(GLOB tmpl ${SRC}/examples/net-plugin/*.c ${SRC}/examples/net-plugin/*.h
    ${SRC}/examples/net-plugin/Makefile)
  file(COPY ${tmpl} DESTINATION ${WORK}/plugin)
  run("make examples/net-plugin" ${env} ${MAKE} -C ${WORK}/plugin CC=${CC} "CFLAGS=-O2 -Werror")
  check_plugin(${WORK}/plugin/libnccl-net-example.so)
else()
  message(FATAL_ERROR "MODE must be cmake or pkgconfig")
endif()
