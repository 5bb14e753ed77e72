# One-sided puts, signals and waits (core/rma/), host mode: forked ranks over shm and over the
# socket net. Small FIFO steps (NCCL_BUFFSIZE) make puts span steps and fill the FIFO.
foreach(tr shm net)
  foreach(n 2 4)
    weft_add_test(NAME rma_put_signal_wait_${n}_ranks_${tr}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_put_signal.c LABELS mp ARGS ${n} ${tr}
      ENV NCCL_BUFFSIZE=262144 TIMEOUT 120)
  endforeach()
  weft_add_test(NAME rma_wait_fails_fast_when_peer_killed_${tr}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_faults.c LABELS mp fault ARGS killed ${tr} TIMEOUT 90)
endforeach()
weft_add_test(NAME rma_wait_times_out_naming_peer SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_faults.c
  LABELS mp fault ARGS timeout shm TIMEOUT 90)
weft_add_test(NAME rma_bad_arguments_are_refused SOURCES ${CMAKE_CURRENT_LIST_DIR}/rma_bad_args.c
  LABELS mp fault)
