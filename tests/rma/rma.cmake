# One-sided puts, signals and waits (core/rma/), host mode: forked ranks over shm and over the
# socket net. Small FIFO steps (NCCL_BUFFSIZE) make puts span steps and fill the FIFO.
foreach(tr shm net)
  foreach(n 2 4)
    weft_add_test(NAME rma_put_signal_wait_${n}_ranks_${tr}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_put_signal.c ${CMAKE_CURRENT_LIST_DIR}/rma_ref.c
      LABELS mp ARGS ${n} ${tr} ENV NCCL_BUFFSIZE=262144 TIMEOUT 120)
  endforeach()
  weft_add_test(NAME rma_wait_fails_fast_when_peer_killed_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_faults.c LABELS mp fault ARGS killed ${tr} TIMEOUT 90)
  # The target dies while 8 MiB puts stream into it: the put fails promptly, naming both ranks.
  add_test(NAME rma_put_fails_fast_when_peer_killed_mid_put_${tr}
    COMMAND rma_wait_fails_fast_when_peer_killed_${tr} midput ${tr})
  set_tests_properties(rma_put_fails_fast_when_peer_killed_mid_put_${tr} PROPERTIES
    LABELS "mp;fault" TIMEOUT 90)
  # The target stops instead (alive, connected, draining nothing): the put ends at
  # WEFT_TIMEOUT_MS, saying so.
  add_test(NAME rma_put_times_out_when_peer_stopped_mid_put_${tr}
    COMMAND rma_wait_fails_fast_when_peer_killed_${tr} stopped ${tr})
  set_tests_properties(rma_put_times_out_when_peer_stopped_mid_put_${tr} PROPERTIES
    LABELS "mp;fault" TIMEOUT 90)
endforeach()
# Across hosts: 2 hosts (network + UTS namespaces) x 2 ranks, rma_put_signal's rounds per rank;
# the net between the hosts is weft's built-in socket net, then the external socket plugin
# loaded through NCCL_NET_PLUGIN (label netns: root only, skipped otherwise).
foreach(via builtin plugin)
  set(_plug "")
  if(via STREQUAL "plugin")
    set(_plug $<TARGET_FILE:nccl-net-weft-socket>)
  endif()
  add_test(NAME rma_two_hosts_netns_${via}
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rma_netns.sh
            $<TARGET_FILE:rma_put_signal_wait_2_ranks_shm> ${_plug})
  set_tests_properties(rma_two_hosts_netns_${via} PROPERTIES LABELS "netns;mp" TIMEOUT 180
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endforeach()
# The same through NCCL_RMA_PLUGIN over the built-in net: weft's socket plugin, and the fixture
# RMA plugin wrapping it (tests/plugins/broken/onesided_wrap.c without a defect).
set(_rma_so "socket|$<TARGET_FILE:nccl-net-weft-socket>")
if(TARGET nccl-rma-fixture-faithful)
  list(APPEND _rma_so "fixture|$<TARGET_FILE:nccl-rma-fixture-faithful>")
endif()
foreach(spec ${_rma_so})
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 _name)
  list(GET parts 1 _so)
  add_test(NAME rma_two_hosts_netns_rma_plugin_${_name}
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rma_netns.sh
            $<TARGET_FILE:rma_put_signal_wait_2_ranks_shm> - ${_so})
  set_tests_properties(rma_two_hosts_netns_rma_plugin_${_name} PROPERTIES LABELS "netns;mp"
    TIMEOUT 180 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
    ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endforeach()
# A put to a peer on the other host that dies while it streams fails promptly, naming both ranks
# (the FIFO over the built-in net, then through the socket plugin's RMA table).
foreach(via builtin rma_plugin_socket)
  set(_plug "")
  if(via STREQUAL "rma_plugin_socket")
    set(_plug $<TARGET_FILE:nccl-net-weft-socket>)
  endif()
  add_test(NAME rma_two_hosts_netns_put_fails_fast_when_peer_killed_mid_put_${via}
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rma_netns_midput.sh
            $<TARGET_FILE:rma_wait_fails_fast_when_peer_killed_net> ${_plug})
  set_tests_properties(rma_two_hosts_netns_put_fails_fast_when_peer_killed_mid_put_${via}
    PROPERTIES LABELS "netns;mp;fault" TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
    ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endforeach()
# 16 MiB puts checked the moment the wait returns (last byte first).
weft_add_test(NAME rma_big_put_2_ranks_net
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_big_put.c ${CMAKE_CURRENT_LIST_DIR}/rma_ref.c
  LABELS mp ARGS 2 net TIMEOUT 120)
# Through an RMA plugin (core/rma/rma_plugin.c): one host with shm off, so every peer goes
# through NCCL_RMA_PLUGIN: weft's socket plugin and the faithful fixture wrapping it
# (rma_put_signal, 3 ranks); the broken fixture that signals before its data must fail
# rma_big_put's reference check.
if(TARGET nccl-net-weft-socket)
  set(_via "socket|$<TARGET_FILE:nccl-net-weft-socket>|good")
  if(TARGET nccl-rma-fixture-faithful)
    list(APPEND _via "fixture|$<TARGET_FILE:nccl-rma-fixture-faithful>|good"
      "signal_first|$<TARGET_FILE:nccl-rma-broken-signalfirst>|broken")
  endif()
  foreach(spec ${_via})
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 _name)
    list(GET parts 1 _so)
    list(GET parts 2 _mode)
    set(_tname rma_plugin_every_peer_${_name})
    set(_bin $<TARGET_FILE:rma_put_signal_wait_2_ranks_shm> 3)
    if(_mode STREQUAL "broken")
      set(_tname rma_plugin_${_name}_fails_the_reference)
      set(_bin $<TARGET_FILE:rma_big_put_2_ranks_net> 2)
    endif()
    add_test(NAME ${_tname} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh
      ${_bin} ${_so} ${_mode})
    set_tests_properties(${_tname} PROPERTIES LABELS "mp;plugin" TIMEOUT 120
      ENVIRONMENT "WEFT_DEVICE=host")
  endforeach()
  # A peer killed mid-run fails the wait on it promptly through the plugin too.
  add_test(NAME rma_plugin_wait_fails_fast_when_peer_killed COMMAND sh
    ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh $<TARGET_FILE:rma_wait_fails_fast_when_peer_killed_net>
    killed $<TARGET_FILE:nccl-net-weft-socket> fault)
  set_tests_properties(rma_plugin_wait_fails_fast_when_peer_killed PROPERTIES
    LABELS "mp;fault;plugin" TIMEOUT 90 ENVIRONMENT "WEFT_DEVICE=host")
  add_test(NAME rma_plugin_put_fails_fast_when_peer_killed_mid_put COMMAND sh
    ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh $<TARGET_FILE:rma_wait_fails_fast_when_peer_killed_net>
    midput $<TARGET_FILE:nccl-net-weft-socket> fault)
  set_tests_properties(rma_plugin_put_fails_fast_when_peer_killed_mid_put PROPERTIES
    LABELS "mp;fault;plugin" TIMEOUT 90 ENVIRONMENT "WEFT_DEVICE=host")
  add_test(NAME rma_plugin_put_times_out_when_peer_stopped_mid_put COMMAND sh
    ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh $<TARGET_FILE:rma_wait_fails_fast_when_peer_killed_net>
    stopped $<TARGET_FILE:nccl-net-weft-socket> fault)
  set_tests_properties(rma_plugin_put_times_out_when_peer_stopped_mid_put PROPERTIES
    LABELS "mp;fault;plugin" TIMEOUT 90 ENVIRONMENT "WEFT_DEVICE=host")
endif()
# The same through net-ib's RMA table over fakeverbs (tests/netib): every peer's puts and
# signals, and a killed peer.
if(TARGET nccl-net-weft-ib AND TARGET fakeverbs)
  set(_fv "WEFT_DEVICE=host;WEFT_IB_VERBS_LIB=$<TARGET_FILE:fakeverbs>")
  add_test(NAME rma_plugin_every_peer_ib COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh
    $<TARGET_FILE:rma_put_signal_wait_2_ranks_shm> 3 $<TARGET_FILE:nccl-net-weft-ib> good)
  set_tests_properties(rma_plugin_every_peer_ib PROPERTIES LABELS "mp;plugin" TIMEOUT 120
    ENVIRONMENT "${_fv}")
  add_test(NAME rma_plugin_ib_wait_fails_fast_when_peer_killed COMMAND sh
    ${CMAKE_CURRENT_LIST_DIR}/rma_plugin_path.sh $<TARGET_FILE:rma_wait_fails_fast_when_peer_killed_net>
    killed $<TARGET_FILE:nccl-net-weft-ib> fault)
  set_tests_properties(rma_plugin_ib_wait_fails_fast_when_peer_killed PROPERTIES
    LABELS "mp;fault;plugin" TIMEOUT 90 ENVIRONMENT "${_fv}")
endif()
weft_add_test(NAME rma_wait_times_out_naming_peer SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_faults.c
  LABELS mp fault ARGS timeout shm TIMEOUT 90)
weft_add_test(NAME rma_one_thread_drives_every_rank_in_a_group
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_one_thread.c ${CMAKE_CURRENT_LIST_DIR}/rma_ref.c LABELS mp)
weft_add_test(NAME rma_bad_arguments_are_refused SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_bad_args.c
  LABELS mp fault)

# docs/one-sided.md's example, taken from the page at configure time, compiled and run as is
# (its main renamed, so that a driver checks first that weft's library is the one loaded).
set(_doc ${PROJECT_SOURCE_DIR}/docs/one-sided.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_doc})
file(READ ${_doc} _text)
string(FIND "${_text}" "<!-- one-sided example" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "docs/one-sided.md lost its example marker")
endif()
string(SUBSTRING "${_text}" ${_at} -1 _text)
string(FIND "${_text}" "```c\n" _begin)
math(EXPR _begin "${_begin} + 5")
string(SUBSTRING "${_text}" ${_begin} -1 _text)
string(FIND "${_text}" "\n```" _end)
string(SUBSTRING "${_text}" 0 ${_end} _code)
file(WRITE ${PROJECT_BINARY_DIR}/tests/one_sided_example.c "${_code}\n")
weft_add_test(NAME docs_one_sided_example
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_doc_example.c
    ${PROJECT_BINARY_DIR}/tests/one_sided_example.c
  LABELS mp)
set_source_files_properties(${PROJECT_BINARY_DIR}/tests/one_sided_example.c PROPERTIES
  COMPILE_DEFINITIONS main=one_sided_example_main)

# GPU communicators (label gpu; exit 77 without a usable GPU): puts, signals and waits on
# cudaMalloc windows, rounds checked against a reference and a captured graph replayed, on 2 and
# 4 ranks sharing the visible GPUs, in separate processes and in one (rma_gpu.c).
if(WEFT_HAVE_CUDA)
  add_executable(rma_gpu ${CMAKE_CURRENT_LIST_DIR}/rma_gpu.c ${CMAKE_CURRENT_LIST_DIR}/rma_ref.c
    ${PROJECT_SOURCE_DIR}/tests/gpu/gpu_world.c ${PROJECT_SOURCE_DIR}/tests/gpu/gpu_same.c)
  target_include_directories(rma_gpu PRIVATE ${PROJECT_SOURCE_DIR}/tests/gpu)
  target_link_libraries(rma_gpu PRIVATE weft_testlib CUDA::cudart Threads::Threads)
  set_target_properties(rma_gpu PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  foreach(cfg "procs;2" "procs;4" "gpus;2" "gpus;4")
    list(GET cfg 0 _m)
    list(GET cfg 1 _n)
    set(_labels gpu)
    if(_m STREQUAL "procs")
      list(APPEND _labels mp)
    endif()
    add_test(NAME rma_gpu_${_n}${_m}_shared COMMAND rma_gpu --${_m} ${_n} --share)
    set_tests_properties(rma_gpu_${_n}${_m}_shared PROPERTIES LABELS "${_labels}" TIMEOUT 300
      SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
      ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
  endforeach()
  add_test(NAME rma_gpu_wait_timeout_names_peer COMMAND rma_gpu --timeout)
  set_tests_properties(rma_gpu_wait_timeout_names_peer PROPERTIES LABELS "gpu;mp;fault" TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
    ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
endif()
