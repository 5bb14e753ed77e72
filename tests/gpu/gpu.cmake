# The GPU data path (label gpu; mp too for the multi-process entries): device-mode communicators
# (WEFT_DEVICE=device) checked through the public API and the CUDA runtime only. One program,
# gpu_coll, one registration per configuration: 1 process driving 2 GPUs (ncclCommInitAll, or
# grouped ncclCommInitRank) or 2 processes with one GPU each; Ring and Tree with each protocol
# forced; P2P disabled (SHM); P2P and SHM disabled (NET over loopback, through the net-socket
# plugin and through the built-in socket net); NET with GPUDirect RDMA (GPU memory registered with
# the net plugin) through GdrSim, a test plugin built here (net_gdrsim*, build/lib/
# libnccl-net-gdrsim.so) that acts like a GDR NIC over TCP and prints "gdrsim: FAILED: …" when weft
# did not use GPU memory as WEFT_GDRSIM_EXPECT says or forgot a flush (those entries fail on that
# line as well as on the exit code); send/recv patterns; AlltoAll/Gather/Scatter; CUDA graph
# capture and replay; ncclMemAlloc and registration; collectives in zero-copy windows (--window:
# every buffer registered with ncclCommWindowRegister); a net plugin failure under running
# kernels (GdrSim failing one isend or receive on purpose). Every entry exits 77 (skipped) with one
# line when no GPU is usable, when fewer GPUs than ranks are visible, or while weft says the
# device data path is "not available yet".
#
# Run on a GPU machine:  cd build && ctest -L gpu --output-on-failure
# Inputs derive from the seed (default: the commit hash at configure time; WEFT_TEST_SEED in
# ctest's environment overrides it); every failure prints a "rerun:" line. WEFT_TEST_FULL=1 at
# run time runs the full matrix instead of the sample (set it at configure time too, for the
# week-long timeout).

if(WEFT_HAVE_CUDA)
  set(WEFT_GPU_SEED "" CACHE STRING "default seed of the GPU test sample (empty: git commit)")
  set(_gpu_seed "${WEFT_GPU_SEED}")
  if(_gpu_seed STREQUAL "")
    set(_gpu_seed 0x5eed9b0c)
    find_package(Git QUIET)
    if(GIT_FOUND)
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} rev-parse --short=12 HEAD
        OUTPUT_VARIABLE _gpu_head RESULT_VARIABLE _gpu_git_rc
        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_gpu_git_rc EQUAL 0 AND _gpu_head MATCHES "^[0-9a-f]+$")
        set(_gpu_seed 0x${_gpu_head})
      endif()
    endif()
  endif()

  set(_gpu_timeout 300)
  if("$ENV{WEFT_TEST_FULL}" STREQUAL "1")
    set(_gpu_timeout 604800)
  endif()

  set(_gpu_dir ${CMAKE_CURRENT_LIST_DIR})
  # The device probe and the worlds as a library, for programs that fork their ranks themselves
  # or drive one GPU without a world (gpu_have_device, CUDA_OK, NCCL_OK): devapi_lsa,
  # devapi_kernels_* (their ranks, all on GPU 0: gpu_one_gpu.c), gpu_one_rank_graph_shape.
  add_library(weft_gpu_world STATIC ${_gpu_dir}/gpu_world.c ${_gpu_dir}/gpu_same.c
    ${_gpu_dir}/gpu_one_gpu.c)
  target_include_directories(weft_gpu_world PUBLIC ${_gpu_dir})
  target_link_libraries(weft_gpu_world PUBLIC weft_testlib CUDA::cudart Threads::Threads)
  add_executable(gpu_coll ${_gpu_dir}/gpu_coll.c ${_gpu_dir}/gpu_world.c ${_gpu_dir}/gpu_case.c
    ${_gpu_dir}/gpu_run.c ${_gpu_dir}/gpu_graph.c ${_gpu_dir}/gpu_mem.c ${_gpu_dir}/gpu_netfail.c
    ${_gpu_dir}/gpu_same.c)
  # tests/coll's harness: its reference (coll_ref.h) and number formats (coll_fp.h).
  target_link_libraries(gpu_coll PRIVATE weft_coll_harness CUDA::cudart Threads::Threads)
  set_target_properties(gpu_coll PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

  # GdrSim: a net plugin that behaves like a GPUDirect RDMA NIC on top of weft's socket net
  # (README.md), for the gpu_coll_net_gdr* entries. Linked like libnccl-net-weft-socket.so (the socket
  # net's static library, hidden), exports ncclNetPlugin_v11 only, lands in build/lib; building
  # gpu_coll builds it too.
  add_library(nccl-net-gdrsim SHARED ${_gpu_dir}/net_gdrsim.c ${_gpu_dir}/net_gdrsim_req.c
    ${_gpu_dir}/net_gdrsim_cuda.c ${_gpu_dir}/net_gdrsim_fault.c)
  set_target_properties(nccl-net-gdrsim PROPERTIES OUTPUT_NAME nccl-net-gdrsim
    C_VISIBILITY_PRESET hidden)
  target_link_libraries(nccl-net-gdrsim PRIVATE weft_net_socket_impl weft_util CUDA::cudart)
  target_link_options(nccl-net-gdrsim PRIVATE -Wl,-z,defs)
  add_dependencies(gpu_coll nccl-net-gdrsim)

  # The harness checked without a GPU: gpu_coll built against a fake CUDA runtime on host memory
  # (gpu_fake_cuda.c), driving host-mode communicators (label unit, not gpu).
  add_executable(gpu_harness_selftest ${_gpu_dir}/gpu_coll.c ${_gpu_dir}/gpu_world.c
    ${_gpu_dir}/gpu_case.c ${_gpu_dir}/gpu_run.c ${_gpu_dir}/gpu_graph.c ${_gpu_dir}/gpu_mem.c
    ${_gpu_dir}/gpu_netfail.c ${_gpu_dir}/gpu_same.c ${_gpu_dir}/gpu_fake_cuda.c)
  target_compile_definitions(gpu_harness_selftest PRIVATE GPU_FAKE_CUDA=1)
  target_include_directories(gpu_harness_selftest PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(gpu_harness_selftest PRIVATE weft_coll_harness Threads::Threads)
  set_target_properties(gpu_harness_selftest PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  set(_gpu_fake_env
    "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;WEFT_FAKE_CUDA_DEVICES=4")
  foreach(mode "procs;2;std,p2p" "procs;3;all" "gpus;2;all")
    list(GET mode 0 _m)
    list(GET mode 1 _n)
    list(GET mode 2 _c)
    string(REPLACE "," "_" _cn ${_c})
    add_test(NAME gpu_harness_selftest_${_m}${_n}_${_cn}
      COMMAND gpu_harness_selftest --${_m} ${_n} --colls ${_c} --extra 20
              --default-seed ${_gpu_seed})
    set_tests_properties(gpu_harness_selftest_${_m}${_n}_${_cn} PROPERTIES LABELS "unit"
      TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${_gpu_fake_env}")
  endforeach()
  # Ranks sharing one (fake) GPU, with the direct algorithms forced: --share and the ledger of
  # outputs that must be bit-identical across ranks (gpu_same.c) on weft's host mode.
  foreach(mode "procs;OneShot;std" "gpus;TwoShot;AllReduce")
    list(GET mode 0 _m)
    list(GET mode 1 _a)
    list(GET mode 2 _c)
    add_test(NAME gpu_harness_selftest_${_m}2_shared_${_a}
      COMMAND gpu_harness_selftest --${_m} 2 --share --colls ${_c} --extra 10
              --default-seed ${_gpu_seed})
    set_tests_properties(gpu_harness_selftest_${_m}2_shared_${_a} PROPERTIES LABELS "unit"
      TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT
      "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;WEFT_FAKE_CUDA_DEVICES=1;NCCL_ALGO=${_a}")
  endforeach()
  # The logarithmic algorithms through the per-collective NCCL_ALGO the gpu entries use.
  add_test(NAME gpu_harness_selftest_gpus3_shared_log
    COMMAND gpu_harness_selftest --gpus 3 --share --colls std --extra 10
            --default-seed ${_gpu_seed})
  set_tests_properties(gpu_harness_selftest_gpus3_shared_log PROPERTIES LABELS "unit"
    TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT
    "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;WEFT_FAKE_CUDA_DEVICES=1;NCCL_ALGO=AllReduce:RecDoubling\\;AllGather:PAT\\;ReduceScatter:PAT\\;Broadcast:Binomial\\;Reduce:Binomial")
  # Windows (--window malloc): host mode only records them (never zero copy), so this checks
  # the harness's registration path (grouped for one process's ranks) and deregistration.
  add_test(NAME gpu_harness_selftest_gpus2_window_malloc
    COMMAND gpu_harness_selftest --gpus 2 --colls std --extra 10 --window malloc
            --default-seed ${_gpu_seed})
  set_tests_properties(gpu_harness_selftest_gpus2_window_malloc PROPERTIES LABELS "unit"
    TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${_gpu_fake_env}")
  # --register malloc likewise: ncclCommRegister at rank-dependent offsets, ncclCommDeregister.
  add_test(NAME gpu_harness_selftest_gpus2_register_malloc
    COMMAND gpu_harness_selftest --gpus 2 --colls std --extra 10 --register malloc
            --default-seed ${_gpu_seed})
  set_tests_properties(gpu_harness_selftest_gpus2_register_malloc PROPERTIES LABELS "unit"
    TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${_gpu_fake_env}")
  # ... and it notices wrong bytes (every 5th download has one flipped).
  add_test(NAME gpu_harness_selftest_notices_corruption
    COMMAND gpu_harness_selftest --gpus 2 --colls all --extra 0 --default-seed ${_gpu_seed})
  set_tests_properties(gpu_harness_selftest_notices_corruption PROPERTIES LABELS "unit"
    TIMEOUT 300 ENVIRONMENT "${_gpu_fake_env};WEFT_FAKE_CUDA_CORRUPT=5"
    PASS_REGULAR_EXPRESSION "cases passed, [1-9][0-9]* failed")

  set(_gpu_env "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_NVLS_ENABLE=0;NCCL_SOCKET_IFNAME=lo")
  # weft_gpu_test(NAME n LABELS l … [FAIL regex] [EXPECT ere …] [TIMEOUT s] [ENV K=V …]
  #               ARGS gpu_coll args …)
  # One GPU test at a time (RESOURCE_LOCK), even under ctest -j. FAIL: output matching the regex
  # fails the entry too (the exit code is still checked). EXPECT: a run that exits 0 must also
  # print a line matching each extended regex (gpu_expect_log.sh runs gpu_coll and keeps its
  # exit code: PASS_REGULAR_EXPRESSION would ignore it). TIMEOUT: instead of the default 300 s.
  function(weft_gpu_test)
    cmake_parse_arguments(T "" "NAME;FAIL;TIMEOUT" "LABELS;ENV;ARGS;EXPECT" ${ARGN})
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT ${_gpu_timeout})
    endif()
    if(T_EXPECT)
      set(_expect)
      foreach(e IN LISTS T_EXPECT)
        list(APPEND _expect --expect "${e}")
      endforeach()
      add_test(NAME ${T_NAME} COMMAND bash ${_gpu_dir}/gpu_expect_log.sh ${_expect} --
        $<TARGET_FILE:gpu_coll> ${T_ARGS} --default-seed ${_gpu_seed})
    else()
      add_test(NAME ${T_NAME} COMMAND gpu_coll ${T_ARGS} --default-seed ${_gpu_seed})
    endif()
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
      SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
      ENVIRONMENT "${_gpu_env};${T_ENV}")
    if(T_FAIL)
      set_tests_properties(${T_NAME} PROPERTIES FAIL_REGULAR_EXPRESSION "${T_FAIL}")
    endif()
  endfunction()

  # Collectives (AllReduce, Reduce, Broadcast, AllGather, ReduceScatter) x datatype x op x size x
  # in place x root, sampled; the tuner's choice of algorithm and protocol.
  weft_gpu_test(NAME gpu_coll_1rank LABELS gpu ARGS --gpus 1 --colls std,p2p --extra 20)
  weft_gpu_test(NAME gpu_coll_1proc_2gpus LABELS gpu ARGS --gpus 2 --colls std --big)
  weft_gpu_test(NAME gpu_coll_1proc_2gpus_initrank_group LABELS gpu
    ARGS --gpus 2 --init group --colls std --extra 20)
  weft_gpu_test(NAME gpu_coll_2procs LABELS gpu mp ARGS --procs 2 --colls std --big)

  # Algorithm and protocol forced. Tree exists for AllReduce only (NCCL's rule).
  foreach(proto Simple LL LL128)
    string(TOLOWER ${proto} _p)
    weft_gpu_test(NAME gpu_coll_ring_${_p} LABELS gpu mp ENV NCCL_ALGO=Ring NCCL_PROTO=${proto}
      ARGS --procs 2 --colls std --extra 20)
    weft_gpu_test(NAME gpu_coll_tree_${_p} LABELS gpu mp ENV NCCL_ALGO=Tree NCCL_PROTO=${proto}
      ARGS --procs 2 --colls AllReduce --extra 20)
  endforeach()
  weft_gpu_test(NAME gpu_coll_tree LABELS gpu mp ENV NCCL_ALGO=Tree
    ARGS --procs 2 --colls AllReduce --big)

  # weft's direct algorithms forced (OneShot: the five collectives; TwoShot: AllReduce), every
  # protocol, on 2 and 4 ranks that share the visible GPUs (--share: one GPU is enough; kernels
  # of separate processes on one GPU are time-sliced, so these check correctness, not speed), in
  # one process and in as many; CUDA graph capture and replay; the device rule's own choice
  # (OneShot for small AllReduce). Every entry also requires bit-identical outputs across ranks.
  foreach(proto Simple LL LL128)
    string(TOLOWER ${proto} _p)
    weft_gpu_test(NAME gpu_coll_oneshot_${_p}_2procs_shared LABELS gpu mp
      ENV NCCL_ALGO=OneShot NCCL_PROTO=${proto} ARGS --procs 2 --share --colls std --extra 10)
    weft_gpu_test(NAME gpu_coll_twoshot_${_p}_2ranks_1proc_shared LABELS gpu
      ENV NCCL_ALGO=TwoShot NCCL_PROTO=${proto} ARGS --gpus 2 --share --colls AllReduce --extra 10)
  endforeach()
  weft_gpu_test(NAME gpu_coll_oneshot_4ranks_1proc_shared LABELS gpu ENV NCCL_ALGO=OneShot
    ARGS --gpus 4 --share --init group --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_oneshot_4procs_shared LABELS gpu mp ENV NCCL_ALGO=OneShot
    ARGS --procs 4 --share --colls std --extra 0)
  weft_gpu_test(NAME gpu_coll_twoshot_4procs_shared LABELS gpu mp ENV NCCL_ALGO=TwoShot
    ARGS --procs 4 --share --colls AllReduce --extra 10)
  weft_gpu_test(NAME gpu_coll_default_2ranks_1proc_shared LABELS gpu
    ARGS --gpus 2 --share --colls std --extra 10)
  weft_gpu_test(NAME gpu_graph_oneshot_2procs_shared LABELS gpu mp ENV NCCL_ALGO=OneShot
    ARGS --procs 2 --share --suite graph)
  weft_gpu_test(NAME gpu_graph_twoshot_4ranks_1proc_shared LABELS gpu
    ENV NCCL_ALGO=AllReduce:TwoShot ARGS --gpus 4 --share --suite graph)
  weft_gpu_test(NAME gpu_mem_register_oneshot_2procs_shared LABELS gpu mp ENV NCCL_ALGO=OneShot
    ARGS --procs 2 --share --suite mem)

  # weft's logarithmic algorithms forced (the device rule picks them only when NCCL_ALGO leaves
  # nothing else): RecDoubling and Rabenseifner AllReduce on 3 ranks (the fold of a
  # non-power-of-two count) and 4, every protocol; the log-step AllGather/ReduceScatter (PAT's
  # slot) and Binomial Broadcast/Reduce through a per-collective NCCL_ALGO (the harness's gate
  # is an AllReduce, left on the ring); one process and several; a captured RecDoubling.
  # (NCCL_ALGO's ';' escaped for the function's argument list and for the ENVIRONMENT list.)
  set(_log_algo "AllReduce:Ring\\\\\\;AllGather:PAT\\\\\\;ReduceScatter:PAT\\\\\\;Broadcast:Binomial\\\\\\;Reduce:Binomial")
  foreach(algo RecDoubling Rabenseifner)
    string(TOLOWER ${algo} _a)
    weft_gpu_test(NAME gpu_coll_${_a}_3ranks_1proc_shared LABELS gpu ENV NCCL_ALGO=${algo}
      ARGS --gpus 3 --share --colls AllReduce --extra 10)
    foreach(proto Simple LL LL128)
      string(TOLOWER ${proto} _p)
      weft_gpu_test(NAME gpu_coll_${_a}_${_p}_4ranks_1proc_shared LABELS gpu
        ENV NCCL_ALGO=${algo} NCCL_PROTO=${proto} ARGS --gpus 4 --share --colls AllReduce --extra 0)
    endforeach()
    weft_gpu_test(NAME gpu_coll_${_a}_4procs_shared LABELS gpu mp ENV NCCL_ALGO=${algo}
      ARGS --procs 4 --share --colls AllReduce --extra 0)
  endforeach()
  foreach(n 3 4)
    weft_gpu_test(NAME gpu_coll_pat_binomial_${n}ranks_1proc_shared LABELS gpu
      ENV "NCCL_ALGO=${_log_algo}" ARGS --gpus ${n} --share --colls std --extra 10)
  endforeach()
  weft_gpu_test(NAME gpu_coll_pat_binomial_3procs_shared LABELS gpu mp ENV "NCCL_ALGO=${_log_algo}"
    ARGS --procs 3 --share --colls std --extra 0)
  weft_gpu_test(NAME gpu_graph_recdoubling_4ranks_1proc_shared LABELS gpu
    ENV NCCL_ALGO=AllReduce:RecDoubling ARGS --gpus 4 --share --suite graph)

  # Transports: SHM (P2P disabled); NET on loopback (P2P and SHM disabled), through
  # build/lib's net-socket plugin and through the built-in socket net.
  weft_gpu_test(NAME gpu_coll_p2p_disabled_shm LABELS gpu mp ENV NCCL_P2P_DISABLE=1
    ARGS --procs 2 --colls std,p2p)
  weft_gpu_test(NAME gpu_coll_net_socket LABELS gpu mp
    ENV NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=weft-socket
        NCCL_NET_PLUGIN=${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/libnccl-net-weft-socket.so
    ARGS --procs 2 --colls std,p2p)
  weft_gpu_test(NAME gpu_coll_net_builtin LABELS gpu mp
    ENV NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_NET_PLUGIN=none
    ARGS --procs 2 --colls std,p2p)

  # GPUDirect RDMA through GdrSim: Simple-protocol FIFOs in GPU memory registered with the plugin
  # (regMr NCCL_PTR_CUDA, or regMrDmaBuf when the driver gives a dma-buf fd), device pointers to
  # isend/irecv, an iflush after each receive. WEFT_GDRSIM_EXPECT says what the plugin must have
  # seen by the last finalize; GDR_LEVEL=LOC (GDR off by the user) must stage through host memory.
  set(_gdr_env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=GdrSim
      NCCL_NET_PLUGIN=${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/libnccl-net-gdrsim.so)
  weft_gpu_test(NAME gpu_coll_net_gdr LABELS gpu mp FAIL "gdrsim: FAILED"
    ENV ${_gdr_env} NCCL_NET_GDR_LEVEL=SYS WEFT_GDRSIM_EXPECT=cuda
    ARGS --procs 2 --colls std,p2p)
  weft_gpu_test(NAME gpu_coll_net_gdr_1proc_2gpus LABELS gpu FAIL "gdrsim: FAILED"
    ENV ${_gdr_env} NCCL_NET_GDR_LEVEL=SYS WEFT_GDRSIM_EXPECT=cuda
    ARGS --gpus 2 --colls std --extra 20)
  # dma-buf advertised; EXPECT stays cuda: weft falls back to regMr where the driver has no dma-buf.
  weft_gpu_test(NAME gpu_coll_net_gdr_dmabuf LABELS gpu mp FAIL "gdrsim: FAILED"
    ENV ${_gdr_env} NCCL_NET_GDR_LEVEL=SYS WEFT_GDRSIM_DMABUF=1 WEFT_GDRSIM_EXPECT=cuda
    ARGS --procs 2 --colls std,p2p)
  weft_gpu_test(NAME gpu_coll_net_gdr_level_loc LABELS gpu mp FAIL "gdrsim: FAILED"
    ENV ${_gdr_env} NCCL_NET_GDR_LEVEL=LOC WEFT_GDRSIM_EXPECT=host
    ARGS --procs 2 --colls std,p2p)

  # A net plugin failure under running kernels surfaces promptly: GdrSim fails the 20th isend
  # (per process: with --procs 2 each rank's own 20th) or the 20th test of a receive (one
  # process: one of the two communicators) during a 64 Mi-float AllReduce; every rank must see
  # ncclCommGetAsyncError report an error, ncclCommAbort return and its stream complete, each
  # within WEFT_GPU_NETFAIL_S (20 s). A rank whose own plugin did not fail learns it from its
  # connections (the failed rank's abort closes them). Bounded below ctest's limit: the watchdog
  # (90 s, init included) and, with --procs, the parent (--timeout 100). No WEFT_GDRSIM_EXPECT:
  # receives are left unflushed on purpose. No WEFT_TIMEOUT_MS either: a peer that noticed only
  # through the kernels' timeout (600 s by default) would be the hang this test is about.
  set(_netfail_env ${_gdr_env} NCCL_NET_GDR_LEVEL=SYS WEFT_GPU_WATCHDOG_S=90)
  weft_gpu_test(NAME gpu_net_failure_surfaces LABELS gpu mp TIMEOUT 120
    ENV ${_netfail_env} WEFT_GDRSIM_FAIL_SEND=20
    ARGS --procs 2 --suite netfail --timeout 100)
  weft_gpu_test(NAME gpu_net_failure_surfaces_recv LABELS gpu TIMEOUT 120
    ENV ${_netfail_env} WEFT_GDRSIM_FAIL_RECV=20
    ARGS --gpus 2 --suite netfail)

  # A tuner plugin steers device communicators: weft's rule tuner with rules the device rule
  # would not choose (tree/LL128 on 3 channels, LL on 5, Simple on 7; tuner_gpu.yaml).
  weft_gpu_test(NAME gpu_coll_tuner_rules LABELS gpu mp
    ENV NCCL_TUNER_PLUGIN=${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/libnccl-tuner-weft.so
        WEFT_TUNER_CONFIG=${_gpu_dir}/tuner_gpu.yaml
    ARGS --procs 2 --colls std --extra 20)

  # Point-to-point: a shifted ring exchange (every shift) and an all-to-all of Sends/Recvs in
  # one group; ncclAlltoAll, ncclGather, ncclScatter (skipped while "not available yet").
  weft_gpu_test(NAME gpu_sendrecv_1proc_2gpus LABELS gpu ARGS --gpus 2 --colls p2p --extra 40)
  weft_gpu_test(NAME gpu_sendrecv_2procs LABELS gpu mp ARGS --procs 2 --colls p2p --extra 40)
  weft_gpu_test(NAME gpu_alltoall_gather_scatter_2procs LABELS gpu mp
    ARGS --procs 2 --colls extra --extra 20)

  # CUDA graph capture and replay.
  weft_gpu_test(NAME gpu_graph_capture_1rank LABELS gpu ARGS --gpus 1 --suite graph)
  weft_gpu_test(NAME gpu_graph_capture_1proc_2gpus LABELS gpu ARGS --gpus 2 --suite graph)
  weft_gpu_test(NAME gpu_graph_capture_2procs LABELS gpu mp ARGS --procs 2 --suite graph)

  # ncclMemAlloc buffers, ncclCommRegister and ncclCommWindowRegister.
  weft_gpu_test(NAME gpu_mem_register_1proc_2gpus LABELS gpu ARGS --gpus 2 --suite mem)
  weft_gpu_test(NAME gpu_mem_register_2procs LABELS gpu mp ARGS --procs 2 --suite mem)

  # Zero-copy windows (--window): every case's buffers registered as symmetric windows
  # (cudaMalloc or ncclMemAlloc), the same checks, on ranks sharing one GPU, with
  # WEFT_ZERO_COPY=2 (zero copy wherever a direct algorithm can: every collective and size, so
  # every zero-copy step runs; the default takes it only where it measured faster).
  # Zero copy must really engage: every registration logs "is zero copy" (fail on "copies
  # through the FIFOs"), and some collective must run zero copy (the first-use line of an
  # algorithm). ncclMemAlloc windows across processes: correctness only, whichever path weft
  # takes (zero copy needs pidfd_getfd, Linux 5.6 and ptrace rights over the peer; else the
  # copy path).
  # WEFT_ZERO_COPY=0: the copy path on the same windows, and no zero copy at all.
  set(_win_env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,REG WEFT_ZERO_COPY=2)
  set(_win_zc FAIL "copies through the FIFOs"
    EXPECT "is zero copy" "runs [A-Za-z]+/Simple zero copy")
  weft_gpu_test(NAME gpu_coll_window_memalloc_2ranks_1proc_shared LABELS gpu ${_win_zc}
    ENV ${_win_env} ARGS --gpus 2 --share --window memalloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_window_malloc_4ranks_1proc_shared LABELS gpu ${_win_zc}
    ENV ${_win_env} ARGS --gpus 4 --share --window malloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_window_malloc_2procs_shared LABELS gpu mp ${_win_zc}
    ENV ${_win_env} ARGS --procs 2 --share --window malloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_window_malloc_4procs_shared LABELS gpu mp ${_win_zc}
    ENV ${_win_env} ARGS --procs 4 --share --window malloc --colls std --extra 0)
  weft_gpu_test(NAME gpu_coll_window_memalloc_2procs_shared LABELS gpu mp
    ENV WEFT_ZERO_COPY=2 ARGS --procs 2 --share --window memalloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_window_copy_path_2procs_shared LABELS gpu mp
    FAIL "is zero copy|/Simple zero copy" EXPECT "copies through the FIFOs: WEFT_ZERO_COPY=0"
    ENV NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,REG WEFT_ZERO_COPY=0
    ARGS --procs 2 --share --window malloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_graph_window_malloc_2procs_shared LABELS gpu mp ${_win_zc}
    ENV ${_win_env} ARGS --procs 2 --share --suite graph --window malloc)
  weft_gpu_test(NAME gpu_graph_window_memalloc_2ranks_1proc_shared LABELS gpu ${_win_zc}
    ENV ${_win_env} ARGS --gpus 2 --share --suite graph --window memalloc)

  # Registered buffers (--register: ncclCommRegister, each buffer at a rank-dependent offset of
  # its registration), WEFT_ZERO_COPY=2: every peer must read them in place (the peers' services
  # map cudaMalloc memory by IPC handle, ncclMemAlloc memory by its cuMem descriptor; ranks of
  # one process by address), and some collective must run zero copy. WEFT_ZERO_COPY=0: copied.
  # (A cudaMalloc buffer at an address a peer's process still maps with another extent "goes
  # through the FIFOs ... this time": CUDA maps a range once; that is not a failure here.)
  set(_reg_zc FAIL "is copied to peer|not GPU memory"
    EXPECT "is read in place by [1-7] of [1-7] peers" "runs [A-Za-z]+/Simple zero copy")
  weft_gpu_test(NAME gpu_coll_register_malloc_2procs_shared LABELS gpu mp ${_reg_zc}
    ENV ${_win_env} ARGS --procs 2 --share --register malloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_register_memalloc_2procs_shared LABELS gpu mp ${_reg_zc}
    ENV ${_win_env} ARGS --procs 2 --share --register memalloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_register_malloc_4procs_shared LABELS gpu mp ${_reg_zc}
    ENV ${_win_env} ARGS --procs 4 --share --register malloc --colls std --extra 0)
  weft_gpu_test(NAME gpu_coll_register_memalloc_4ranks_1proc_shared LABELS gpu ${_reg_zc}
    ENV ${_win_env} ARGS --gpus 4 --share --register memalloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_coll_register_copy_path_2procs_shared LABELS gpu mp
    FAIL "is read in place|/Simple zero copy"
    ENV NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,REG WEFT_ZERO_COPY=0
    ARGS --procs 2 --share --register malloc --colls std --extra 10)
  weft_gpu_test(NAME gpu_graph_register_malloc_2procs_shared LABELS gpu mp ${_reg_zc}
    ENV ${_win_env} ARGS --procs 2 --share --suite graph --register malloc)
  weft_gpu_test(NAME gpu_graph_register_memalloc_2ranks_1proc_shared LABELS gpu ${_reg_zc}
    ENV ${_win_env} ARGS --gpus 2 --share --suite graph --register memalloc)
endif()

# KernelCh in device mode, timed on the GPU (device/device_prof.c): 2 ranks sharing the GPU in
# weft-perf with weft's trace plugin, a KernelCh with a GPU-timed duration per channel of every
# collective (tests/gpu/kernelch_trace.py).
if(WEFT_HAVE_CUDA AND TARGET nccl-profiler-weft-trace)
  add_test(NAME gpu_profiler_kernelch_timed_on_gpu
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/kernelch_trace.py $<TARGET_FILE:weft-perf>
      $<TARGET_FILE:nccl-profiler-weft-trace> ${PROJECT_BINARY_DIR}/tests/kernelch_device device)
  set_tests_properties(gpu_profiler_kernelch_timed_on_gpu PROPERTIES LABELS gpu TIMEOUT 240
    SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu ENVIRONMENT "NCCL_DEBUG=WARN")
endif()

# The one-rank path (plan/plan_local.c): what a captured call leaves in the graph (nothing in
# place, one memcpy out of place, one kernel for a scaling PreMulSum) and its results.
if(WEFT_HAVE_CUDA)
  weft_add_test(NAME gpu_one_rank_graph_shape SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_one_rank.c
    LABELS gpu LIBS weft_gpu_world ENV "WEFT_DEVICE=device;NCCL_NVLS_ENABLE=0")
  set_tests_properties(gpu_one_rank_graph_shape PROPERTIES RESOURCE_LOCK weft_gpu)
endif()

# Misuse of device communicators (issue 18, the crash and overflow findings; their host-mode
# tests are comm_*_inside_group, api_bad_arguments and host_mismatch_*): gpu_misuse, one
# subcommand per case, every rank on one shared GPU (2 ranks in one process on one thread, or
# forked processes). ncclCommAbort/ncclCommDestroy inside a group holding queued work, calls on
# destroyed handles, ncclCommRegister/ncclCommWindowRegister with overflowing sizes and NULLs
# (and, device memory only, past the allocation's end), a send matched by a smaller receive
# (guarded receive buffer), mismatched AllReduce count/datatype/op and Broadcast root. The
# same program over gpu_fake_cuda.c (gpu_misuse_selftest, label unit) runs each case but
# register_past_end in host mode without a GPU.
if(WEFT_HAVE_CUDA)
  set(_misuse_src ${_gpu_dir}/gpu_misuse.c ${_gpu_dir}/gpu_misuse_mismatch.c
    ${_gpu_dir}/gpu_world.c ${_gpu_dir}/gpu_same.c)
  add_executable(gpu_misuse ${_misuse_src})
  target_link_libraries(gpu_misuse PRIVATE weft_testlib CUDA::cudart Threads::Threads)
  set_target_properties(gpu_misuse PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_executable(gpu_misuse_selftest ${_misuse_src} ${_gpu_dir}/gpu_fake_cuda.c)
  target_compile_definitions(gpu_misuse_selftest PRIVATE GPU_FAKE_CUDA=1)
  target_include_directories(gpu_misuse_selftest PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(gpu_misuse_selftest PRIVATE weft_testlib Threads::Threads)
  set_target_properties(gpu_misuse_selftest PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

  # weft_gpu_misuse(CASE c RANKS "--gpus 2" SUFFIX s LABELS l …): gpu_misuse_<c>_<s> on the GPU
  # (one at a time, RESOURCE_LOCK) and, unless NOFAKE, gpu_misuse_selftest_<c>_<s> (unit).
  # DEVICE_GAP: the device executor lacks the check the case needs, so the GPU entry is
  # registered disabled (ctest lists it as not run) and the host-mode entry alone runs: the
  # kernels do not compare the operations' signatures yet (host/host_sig.c does, on the host),
  # so on a GPU a send meeting a smaller receive and mismatched collectives complete silently
  # or wait for WEFT_TIMEOUT_MS. Enable an entry once the device guard exists.
  function(weft_gpu_misuse)
    cmake_parse_arguments(T "NOFAKE;DEVICE_GAP" "CASE;SUFFIX" "RANKS;LABELS" ${ARGN})
    set(_n gpu_misuse_${T_CASE}_${T_SUFFIX})
    add_test(NAME ${_n} COMMAND gpu_misuse ${T_CASE} ${T_RANKS} --default-seed ${_gpu_seed})
    set_tests_properties(${_n} PROPERTIES LABELS "${T_LABELS}" TIMEOUT 120 SKIP_RETURN_CODE 77
      RESOURCE_LOCK weft_gpu ENVIRONMENT "${_gpu_env}")
    if(T_DEVICE_GAP)
      set_tests_properties(${_n} PROPERTIES DISABLED TRUE)
    endif()
    if(NOT T_NOFAKE)
      set(_f gpu_misuse_selftest_${T_CASE}_${T_SUFFIX})
      add_test(NAME ${_f} COMMAND gpu_misuse_selftest ${T_CASE} ${T_RANKS})
      set_tests_properties(${_f} PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77
        ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;WEFT_FAKE_CUDA_DEVICES=1")
    endif()
  endfunction()
  foreach(c abort_in_group destroy_in_group)
    weft_gpu_misuse(CASE ${c} SUFFIX 2ranks_1proc RANKS --gpus 2 LABELS gpu)
    weft_gpu_misuse(CASE ${c} SUFFIX 2procs RANKS --procs 2 LABELS gpu mp)
  endforeach()
  foreach(c destroyed_handle register_overflow)
    weft_gpu_misuse(CASE ${c} SUFFIX 2ranks_1proc RANKS --gpus 2 LABELS gpu)
  endforeach()
  weft_gpu_misuse(CASE register_past_end SUFFIX 2ranks_1proc RANKS --gpus 2 LABELS gpu NOFAKE)
  foreach(c p2p_small p2p_large)
    weft_gpu_misuse(CASE ${c} SUFFIX 2procs RANKS --procs 2 LABELS gpu mp DEVICE_GAP)
  endforeach()
  foreach(c coll_count coll_dtype coll_op bcast_root)
    weft_gpu_misuse(CASE ${c} SUFFIX 3procs RANKS --procs 3 LABELS gpu mp DEVICE_GAP)
  endforeach()
endif()

# Revoke and shrink on device-mode communicators whose ranks share GPU 0 (issue 40). Shrink after
# a SIGKILL:
# tests/mp/comm_shrink_after_kill.c built with the CUDA runtime (--device). The survivors revoke
# (their kernels stop), shrink, go on with exact sums and grow back with a spare process.
if(WEFT_HAVE_CUDA)
  add_executable(gpu_shrink_after_kill ${PROJECT_SOURCE_DIR}/tests/mp/comm_shrink_after_kill.c)
  target_compile_definitions(gpu_shrink_after_kill PRIVATE WEFT_TEST_CUDA=1)
  target_link_libraries(gpu_shrink_after_kill PRIVATE weft_gpu_world)
  set_target_properties(gpu_shrink_after_kill PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  # Revoke stops a kernel that waits for a rank that never joins; split works after it.
  add_executable(gpu_revoke ${_gpu_dir}/gpu_revoke.c)
  target_link_libraries(gpu_revoke PRIVATE weft_gpu_world)
  set_target_properties(gpu_revoke PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_test(NAME gpu_revoke_stops_a_waiting_kernel COMMAND gpu_revoke)
  set_tests_properties(gpu_revoke_stops_a_waiting_kernel PROPERTIES LABELS "gpu;mp;fault"
    TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
    ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
  foreach(n 2 4)
    add_test(NAME gpu_shrink_after_kill_${n}_ranks_shared
      COMMAND gpu_shrink_after_kill ${n} kill --device)
    set_tests_properties(gpu_shrink_after_kill_${n}_ranks_shared PROPERTIES LABELS "gpu;mp;fault"
      TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
      ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo")
  endforeach()
endif()

# Suspend and resume of device-mode communicators (issue 40), ranks as processes sharing GPU 0:
# suspend frees what MemStats' Suspend says (cudaMemGetInfo), resume restores a working
# communicator and a graph captured before the suspend replays after it; with
# NCCL_CUMEM_ENABLE=0 (cudaMalloc FIFOs, weft's default until the cuMem FIFOs have run on a GPU:
# the cycle entries opt in) suspend is refused on every rank and nothing changes.
if(WEFT_HAVE_CUDA)
  add_executable(gpu_suspend ${_gpu_dir}/gpu_suspend.c)
  target_link_libraries(gpu_suspend PRIVATE weft_gpu_world)
  set_target_properties(gpu_suspend PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  foreach(n 1 2)
    add_test(NAME gpu_suspend_resume_${n}_ranks_shared COMMAND gpu_suspend ${n} cycle)
    set_tests_properties(gpu_suspend_resume_${n}_ranks_shared PROPERTIES LABELS "gpu;mp"
      TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
      ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;NCCL_CUMEM_ENABLE=1")
  endforeach()
  add_test(NAME gpu_suspend_resume_2_ranks_one_process COMMAND gpu_suspend 2 cycle threads)
  set_tests_properties(gpu_suspend_resume_2_ranks_one_process PROPERTIES LABELS "gpu"
    TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
    ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;NCCL_CUMEM_ENABLE=1")
  add_test(NAME gpu_suspend_refused_without_cumem COMMAND gpu_suspend 2 refuse)
  set_tests_properties(gpu_suspend_refused_without_cumem PROPERTIES LABELS "gpu;mp"
    TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
    ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=lo;NCCL_CUMEM_ENABLE=0")
endif()

# The device API's LSA flat mapping of symmetric windows (issue 39), every rank on GPU 0: 1 rank,
# 2 ranks in one process, 2 and 4 processes sharing the GPU.
if(WEFT_HAVE_CUDA)
  add_executable(devapi_lsa ${_gpu_dir}/devapi_lsa.c)
  target_link_libraries(devapi_lsa PRIVATE weft_gpu_world)
  set_target_properties(devapi_lsa PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  foreach(_lsa inproc:1 inproc:2 procs:2 procs:4)
    string(REPLACE ":" ";" _lsa_args "${_lsa}")
    list(GET _lsa_args 0 _lsa_mode)
    list(GET _lsa_args 1 _lsa_n)
    add_test(NAME devapi_lsa_${_lsa_mode}${_lsa_n} COMMAND devapi_lsa --${_lsa_mode} ${_lsa_n})
    set(_lsa_labels gpu)
    if(_lsa_mode STREQUAL "procs")
      list(APPEND _lsa_labels mp)
    endif()
    set_tests_properties(devapi_lsa_${_lsa_mode}${_lsa_n} PROPERTIES LABELS "${_lsa_labels}" TIMEOUT 300
      SKIP_RETURN_CODE 77 RESOURCE_LOCK weft_gpu
      ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_NVLS_ENABLE=0")
  endforeach()
endif()

# Device-API kernels compiled against NVIDIA's nccl_device.h of 2.29.7, 2.30.7 and 2.32.6 (the
# binary contract; issue 39; 2.29.7's device communicator has no version) and against weft's own
# include/nccl_device.h (the source contract), run on weft's library, every rank on GPU 0:
# devapi_kernels_<2_29_7|2_30_7|2_32_6|weft>_<mode>.
# The headers are the nvidia-nccl-cu13 wheels' include/ directories: by default where the
# devcomm_layout_<v> tests unpack them (run those first, or point these variables elsewhere);
# a version whose headers are missing at configure time gets no executable, and its entries
# say SKIP with the path they looked for.
if(WEFT_HAVE_CUDA)
  foreach(_v 2.29.7 2.30.7 2.32.6 weft)
    string(REPLACE "." "_" _vid ${_v})
    if(_v STREQUAL "weft") # the source contract: weft's own nccl_device.h (include/, abi/)
      set(_inc ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/abi)
    else()
      set(WEFT_NCCL_DEVICE_INCLUDE_${_vid}
        "${WEFT_NCCL_WHEEL_DIR}/nvidia-nccl-${_v}/x/nvidia/nccl/include" CACHE PATH
        "NVIDIA's NCCL ${_v} include/ (nccl.h, nccl_device.h) for the devapi_kernels_${_vid} tests")
      set(_inc ${WEFT_NCCL_DEVICE_INCLUDE_${_vid}})
    endif()
    set(_exe devapi_kernels_${_vid})
    list(GET _inc 0 _inc0)
    if(EXISTS ${_inc0}/nccl_device.h)
      add_executable(${_exe} ${_gpu_dir}/devapi_kernels.cu)
      target_include_directories(${_exe} BEFORE PRIVATE ${_inc})
      target_link_libraries(${_exe} PRIVATE weft_gpu_world)
      set_target_properties(${_exe} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
    endif()
    foreach(_m inproc:1 inproc:2 procs:2 procs:4)
      string(REPLACE ":" ";" _ma "${_m}")
      list(GET _ma 0 _mode)
      list(GET _ma 1 _n)
      set(_t ${_exe}_${_mode}${_n})
      if(TARGET ${_exe})
        add_test(NAME ${_t} COMMAND ${_exe} --${_mode} ${_n})
      else()
        add_test(NAME ${_t} COMMAND ${CMAKE_COMMAND} -E echo
          "SKIP: no NVIDIA ${_v} headers at ${_inc} (WEFT_NCCL_DEVICE_INCLUDE_${_vid})")
      endif()
      set(_labels gpu)
      if(_mode STREQUAL "procs")
        list(APPEND _labels mp)
      endif()
      set_tests_properties(${_t} PROPERTIES LABELS "${_labels}" TIMEOUT 300
        SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "SKIP:" RESOURCE_LOCK weft_gpu
        ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_NVLS_ENABLE=0")
    endforeach()
  endforeach()
endif()

# A kernel using ncclGin (the proxy GIN type: core/gin, issue 48) built against NVIDIA's 2.30.7
# nccl_device.h, 2 and 4 processes on GPU 0 with peer-to-peer and shared memory off, so the data
# go through the GIN proxy and a net plugin (staged through the built-in socket net). SKIP (with
# the reason) only where the communicator reports no GIN (docs/device-api.md, "GIN").
if(WEFT_HAVE_CUDA)
  set(_gin_inc ${WEFT_NCCL_DEVICE_INCLUDE_2_30_7})
  if(EXISTS ${_gin_inc}/nccl_device.h)
    add_executable(devapi_gin_2_30_7 ${_gpu_dir}/devapi_gin.cu)
    target_include_directories(devapi_gin_2_30_7 BEFORE PRIVATE ${_gin_inc})
    target_link_libraries(devapi_gin_2_30_7 PRIVATE weft_gpu_world)
    set_target_properties(devapi_gin_2_30_7 PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
      RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  endif()
  foreach(_n 2 4)
    set(_t devapi_gin_2_30_7_procs${_n})
    if(TARGET devapi_gin_2_30_7)
      add_test(NAME ${_t} COMMAND devapi_gin_2_30_7 --procs ${_n})
    else()
      add_test(NAME ${_t} COMMAND ${CMAKE_COMMAND} -E echo
        "SKIP: no NVIDIA 2.30.7 headers at ${_gin_inc} (WEFT_NCCL_DEVICE_INCLUDE_2_30_7)")
    endif()
    set_tests_properties(${_t} PROPERTIES LABELS "gpu;mp" TIMEOUT 300 SKIP_RETURN_CODE 77
      SKIP_REGULAR_EXPRESSION "SKIP:" RESOURCE_LOCK weft_gpu
      ENVIRONMENT "WEFT_DEVICE=device;NCCL_DEBUG=WARN;NCCL_NVLS_ENABLE=0;NCCL_P2P_DISABLE=1;NCCL_SHM_DISABLE=1")
  endforeach()
endif()
