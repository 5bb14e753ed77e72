# Multi-process host-mode tests of communicator lifecycle (forked ranks).
foreach(n 1 2 3 8)
  weft_add_test(NAME comm_init_${n}_ranks SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_init_ranks.c
    LABELS mp ARGS ${n})
endforeach()
weft_add_test(NAME comm_init_comm_id SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_init_ranks.c
  LABELS mp ARGS 4 --comm-id)
weft_add_test(NAME comm_split SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_split.c LABELS mp)
weft_add_test(NAME comm_nonblocking_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_nonblocking.c LABELS mp)
weft_add_test(NAME comm_init_destroy_cycles SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_cycles.c LABELS mp TIMEOUT 300)
weft_add_test(NAME comm_missing_rank_is_named SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_missing_rank.c
  LABELS mp fault ENV WEFT_INIT_TIMEOUT_MS=2000)
weft_add_test(NAME comm_init_survives_stray_clients SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_stray.c
  LABELS mp fault)
weft_add_test(NAME comm_version_mismatch_is_named SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_version.c
  LABELS mp fault)
weft_add_test(NAME api_bad_arguments SOURCES ${CMAKE_CURRENT_LIST_DIR}/api_bad_args.c LABELS unit)
weft_add_test(NAME devapi_host_mode_answers_and_refusals
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/devapi_host.c LABELS unit)
add_test(NAME api_exports_match_nccl
  COMMAND ${CMAKE_COMMAND} -DOURS=$<TARGET_FILE:nccl> -DNVIDIA=/usr/local/cuda/lib/libnccl.so.2
  -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_exports.cmake)
set_tests_properties(api_exports_match_nccl PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "SKIP:")
foreach(m abort destroy init)
  weft_add_test(NAME comm_${m}_inside_group SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_destroy_in_group.c
    LABELS mp fault ARGS ${m})
endforeach()
foreach(m init split)
  foreach(tr shm net)
    weft_add_test(NAME comm_peer_gone_before_first_op_${m}_${tr}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_peer_gone_at_setup.c LABELS mp fault TIMEOUT 90
      ARGS ${m} ${tr})
  endforeach()
endforeach()
foreach(c claim secret)
  weft_add_test(NAME comm_id_rendezvous_${c} SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_id_secret.c
    LABELS mp fault ARGS ${c})
endforeach()
