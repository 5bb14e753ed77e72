# The RAS service (core/ras) and weft-ras: host-mode jobs of separate rank processes
# (ras_job), driven by ras_test.py, which speaks the RAS protocol itself and runs weft-ras.
add_executable(ras_job ${CMAKE_CURRENT_LIST_DIR}/ras_job.c)
target_link_libraries(ras_job PRIVATE weft_testlib)
set_target_properties(ras_job PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
find_program(WEFT_RAS_PYTHON NAMES python3)
foreach(s healthy stopped killed init hostile)
  set(labels mp)
  if(NOT s STREQUAL "healthy")
    list(APPEND labels fault)
  endif()
  add_test(NAME ras_status_${s}
    COMMAND ${WEFT_RAS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/ras_test.py $<TARGET_FILE:ras_job>
      $<TARGET_FILE:weft-ras> ${s})
  set_tests_properties(ras_status_${s} PROPERTIES LABELS "${labels}" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endforeach()
# Two hosts in network + UTS + mount namespaces (root only; skipped otherwise): the RAS network
# between hosts names the other host's ranks, a stopped one and a dead one.
add_test(NAME ras_status_twohost_netns
  COMMAND ${WEFT_RAS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/ras_test.py $<TARGET_FILE:ras_job>
    $<TARGET_FILE:weft-ras> twohost)
set_tests_properties(ras_status_twohost_netns PROPERTIES LABELS "netns;mp;fault" TIMEOUT 120
  SKIP_RETURN_CODE 77 RUN_SERIAL TRUE ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
# NVIDIA's own client against weft: configure with -DWEFT_NCCLRAS=/path/to/ncclras (built from
# NCCL's src/ras/client.cc, see docs/troubleshooting.md); it takes weft-ras's place, same flags.
set(WEFT_NCCLRAS "" CACHE FILEPATH "NCCL's ncclras client, to run the RAS tests with it too")
if(WEFT_NCCLRAS)
  foreach(s healthy stopped killed)
    add_test(NAME ras_status_${s}_ncclras
      COMMAND ${WEFT_RAS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/ras_test.py $<TARGET_FILE:ras_job>
        ${WEFT_NCCLRAS} ${s})
    set_tests_properties(ras_status_${s}_ncclras PROPERTIES LABELS "mp;fault" TIMEOUT 120
      SKIP_RETURN_CODE 77 ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
  endforeach()
  add_test(NAME ras_status_twohost_netns_ncclras
    COMMAND ${WEFT_RAS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/ras_test.py $<TARGET_FILE:ras_job>
      ${WEFT_NCCLRAS} twohost)
  set_tests_properties(ras_status_twohost_netns_ncclras PROPERTIES LABELS "netns;mp;fault"
    TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE ENVIRONMENT "WEFT_DEVICE=host;NCCL_DEBUG=WARN")
endif()
