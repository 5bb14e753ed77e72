# Host data path: collectives, groups, threads, checks and faults on the host executor
# (forked ranks on one machine; "net" runs force NCCL_SHM_DISABLE=1, i.e. the socket plugin).
foreach(n 2 3)
  foreach(proto Simple LL)
    foreach(tr shm net)
      weft_add_test(NAME host_coll_smoke_${n}r_${proto}_${tr}
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_coll_smoke.c LABELS mp ARGS ${n} ${proto} ${tr})
    endforeach()
    weft_add_test(NAME host_coll_smoke_${n}r_${proto}_tree
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_coll_smoke.c LABELS mp ARGS ${n} ${proto} shm Tree)
  endforeach()
endforeach()
# Several channels (the 2-core default is 1): parts, both trees of the double binary tree.
weft_add_test(NAME host_coll_smoke_4r_Simple_shm_3ch SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_coll_smoke.c
  LABELS mp ARGS 4 Simple shm ENV NCCL_MIN_NCHANNELS=3)
weft_add_test(NAME host_coll_smoke_5r_LL_tree_2ch SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_coll_smoke.c
  LABELS mp ARGS 5 LL shm Tree ENV NCCL_MIN_NCHANNELS=2)
weft_add_test(NAME host_coll_smoke_3r_Simple_net_2ch SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_coll_smoke.c
  LABELS mp ARGS 3 Simple net ENV NCCL_MIN_NCHANNELS=2)
weft_add_test(NAME host_group_patterns_shm SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_group_patterns.c
  LABELS mp ARGS 4 shm)
weft_add_test(NAME host_group_patterns_net SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_group_patterns.c
  LABELS mp ARGS 4 net)
weft_add_test(NAME host_redops SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_redops.c LABELS mp)
weft_add_test(NAME host_redops_tree SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_redops.c LABELS mp
  ARGS tree)
weft_add_test(NAME host_check_collectives_names_mismatch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_check_collectives.c LABELS mp fault TIMEOUT 60)
weft_add_test(NAME host_two_comms_two_threads_shm SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_two_threads.c
  LABELS mp ARGS shm)
weft_add_test(NAME host_two_comms_two_threads_net SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_two_threads.c
  LABELS mp ARGS net)
foreach(tr shm net)
  foreach(mode kill stop)
    weft_add_test(NAME host_peer_${mode}_fails_survivors_${tr}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_peer_death.c LABELS mp fault TIMEOUT 60
      ARGS ${mode} ${tr})
  endforeach()
  weft_add_test(NAME host_abort_with_call_in_flight_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_peer_death.c LABELS mp fault TIMEOUT 60
    ARGS abort ${tr})
  weft_add_test(NAME host_destroy_with_call_in_flight_refused_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_peer_death.c LABELS mp fault TIMEOUT 60
    ARGS destroy ${tr})
endforeach()
weft_add_test(NAME host_unknown_algo_fails_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_bad_env.c
  LABELS mp ARGS NCCL_ALGO Ring,Bogus)
weft_add_test(NAME host_unknown_proto_fails_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_bad_env.c
  LABELS mp ARGS NCCL_PROTO ^LL9)
# Mismatched arguments without WEFT_CHECK_COLLECTIVES: errors naming both sides (issue 18).
foreach(c p2p_small p2p_short p2p_large p2p_setup coll_count coll_dtype coll_op coll_root)
  foreach(tr shm net)
    # Over the net a protocol's receives are posted only for an operation that expects them,
    # so a send on the other protocol is not seen until then (see host_sig.c).
    if(NOT (c STREQUAL "p2p_large" AND tr STREQUAL "net"))
      weft_add_test(NAME host_mismatch_${c}_${tr} SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_mismatch.c
        LABELS mp fault TIMEOUT 90 ARGS ${c} ${tr})
    endif()
  endforeach()
endforeach()
foreach(m abort destroy)
  weft_add_test(NAME host_${m}_seen_by_shm_peers SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_abort_visible.c
    LABELS mp fault TIMEOUT 60 ARGS ${m})
endforeach()
weft_add_test(NAME host_shm_orphans_swept SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_shm_orphans.c
  LABELS mp fault)
# The hang report names the rank the others wait for (WEFT_HANG_REPORT_MS, weftCommHangReport,
# SIGUSR1), also with WEFT_CHECK_COLLECTIVES.
foreach(c missing roots send destroyed)
  weft_add_test(NAME host_hang_report_${c} SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_hang_report.c
    LABELS mp fault TIMEOUT 90 ARGS ${c} timer)
endforeach()
foreach(t api signal)
  weft_add_test(NAME host_hang_report_missing_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_hang_report.c
    LABELS mp fault TIMEOUT 90 ARGS missing ${t})
endforeach()
weft_add_test(NAME host_hang_report_missing_checked SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_hang_report.c
  LABELS mp fault TIMEOUT 90 ARGS missing timer ENV WEFT_CHECK_COLLECTIVES=1)
# The hang report's board in a hostile /dev/shm: full (a 64 KiB tmpfs), or its file made first
# by another user (issue 42). Each mounts a private tmpfs (unshare -m): skipped where not allowed.
foreach(c full foreign)
  weft_add_test(NAME host_hang_board_shm_${c} SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_shm_hostile.c
    LABELS mp fault TIMEOUT 90 ARGS ${c})
endforeach()
