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
# Four ranks: a survivor that only accepts from the dead rank (issue 42).
weft_add_test(NAME comm_peer_gone_before_first_op_init_net_4r
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_peer_gone_at_setup.c LABELS mp fault TIMEOUT 90
  ARGS init net 4)
foreach(c claim secret)
  weft_add_test(NAME comm_id_rendezvous_${c} SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_id_secret.c
    LABELS mp fault ARGS ${c})
endforeach()
# A rank SIGKILLed at a seeded moment of a Split/AllReduce/Destroy loop: the survivors' calls
# return within WEFT_TIMEOUT_MS, not the init timeout (issue 42).
foreach(tr shm net)
  weft_add_test(NAME comm_split_kill_bounded_by_timeout_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_split_kill.c LABELS mp fault TIMEOUT 120 ARGS ${tr})
endforeach()
# Split/Destroy cycles in a network namespace with few ephemeral ports: none may run out
# (issue 42). Root only (label netns; skipped otherwise).
foreach(tr shm net)
  weft_add_test(NAME comm_split_cycles_keep_ports_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_split_ports.c LABELS netns TIMEOUT 600 ARGS ${tr})
endforeach()
# A rank with another nranks: every rank's init fails soon, naming both counts (issue 42).
foreach(o odd-first odd-last)
  weft_add_test(NAME comm_nranks_mismatch_fails_all_${o}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_nranks_mismatch.c LABELS mp fault TIMEOUT 90 ARGS ${o})
endforeach()
weft_add_test(NAME comm_init_root_gone_fails_fast SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_root_gone.c
  LABELS mp fault TIMEOUT 60)
weft_add_test(NAME comm_id_require_secret_refuses_unsecured
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_id_require_secret.c LABELS mp fault)
weft_add_test(NAME comm_fd_limit_named SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm_fd_limit.c
  LABELS mp fault)
