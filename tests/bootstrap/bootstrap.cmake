# core/bootstrap tests. The bootstrap_* functions are internal (hidden in libnccl), so the tests
# link a static copy of core/bootstrap built here, plus weft_util.
file(GLOB WEFT_BOOTSTRAP_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/core/bootstrap/*.c)
add_library(weft_bootstrap_test STATIC ${WEFT_BOOTSTRAP_TEST_SOURCES})
target_link_libraries(weft_bootstrap_test PUBLIC weft_util)

set(BS_DIR ${CMAKE_CURRENT_LIST_DIR})
weft_add_test(NAME bootstrap_unique_id_roundtrip_and_rejects_garbage
  SOURCES ${BS_DIR}/bootstrap_id_test.c ${BS_DIR}/bs_testutil.c
  LABELS unit TIMEOUT 30 LIBS weft_bootstrap_test ENV WEFT_INIT_TIMEOUT_MS=400)
weft_add_test(NAME bootstrap_ranks_allgather_barrier_p2p
  SOURCES ${BS_DIR}/bootstrap_ranks_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 60 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_ranks_allgather_barrier_p2p_ipv6
  SOURCES ${BS_DIR}/bootstrap_ranks_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 60 LIBS weft_bootstrap_test ARGS --ipv6
  ENV NCCL_SOCKET_IFNAME=lo NCCL_SOCKET_FAMILY=AF_INET6)
weft_add_test(NAME bootstrap_comm_id_env_init
  SOURCES ${BS_DIR}/bootstrap_comm_id_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 30 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_missing_rank_named_in_timeout
  SOURCES ${BS_DIR}/bootstrap_missing_rank_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 30 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_stray_clients_do_not_disturb_init
  SOURCES ${BS_DIR}/bootstrap_stray_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 30 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_abort_unblocks_recv
  SOURCES ${BS_DIR}/bootstrap_abort_test.c ${BS_DIR}/bs_testutil.c
  LABELS unit TIMEOUT 30 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_init_cycles_leak_no_threads_or_fds
  SOURCES ${BS_DIR}/bootstrap_cycles_test.c ${BS_DIR}/bs_testutil.c
  LABELS unit TIMEOUT 60 LIBS weft_bootstrap_test ENV WEFT_INIT_TIMEOUT_MS=500)
weft_add_test(NAME bootstrap_p2p_errors_name_the_peer
  SOURCES ${BS_DIR}/bootstrap_p2p_errors_test.c ${BS_DIR}/bs_testutil.c
  LABELS mp TIMEOUT 30 LIBS weft_bootstrap_test)
weft_add_test(NAME bootstrap_unused_ids_share_one_root
  SOURCES ${BS_DIR}/bootstrap_many_ids_test.c ${BS_DIR}/bs_testutil.c
  LABELS unit TIMEOUT 60 LIBS weft_bootstrap_test ENV WEFT_INIT_TIMEOUT_MS=4000)
