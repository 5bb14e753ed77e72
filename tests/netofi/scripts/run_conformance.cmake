# Runs weft-conformance on libnccl-net-weft-ofi.so for one provider (cmake -P), in the environment
# ctest gives it (WEFT_OFI_PROVIDER, WEFT_OFI_DOMAIN, …). Variables:
#   CONF      the weft-conformance program
#   PLUGIN    libnccl-net-weft-ofi.so
#   ARGS      extra arguments, separated by '|' (e.g. --filter|!net_two_threads*)
#   SUITE     the suite (net when unset; rma: the plugin's RMA tables)
#   JSON      where the report goes
#   PROVIDER  the provider, for messages ('+' stands for ';': tcp+ofi_rxm)
#   REQUIRED  ON: an unusable provider fails the test; otherwise it prints "SKIP: …" (the test's
#             SKIP_REGULAR_EXPRESSION) and the suite is not run.
foreach(v CONF PLUGIN JSON PROVIDER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_conformance: ${v} is not set")
  endif()
endforeach()
string(REPLACE "+" ";" PROVIDER "${PROVIDER}")
set(args)
if(ARGS)
  string(REPLACE "|" ";" args "${ARGS}")
endif()

message("net-ofi on ${PROVIDER}: WEFT_OFI_PROVIDER=$ENV{WEFT_OFI_PROVIDER} "
  "WEFT_OFI_DOMAIN=$ENV{WEFT_OFI_DOMAIN}")
# Can this provider be opened here at all?
execute_process(COMMAND "${CONF}" net "${PLUGIN}" --filter net_init_with_logger_succeeds -v
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  set(all "${out}${err}")
  if(NOT REQUIRED AND all MATCHES "NET/OFI: (no libfabric provider|provider [^\n]* has no usable domain)[^\n]*")
    message("SKIP: ${PROVIDER} is not usable on this machine: ${CMAKE_MATCH_0}")
    return()
  endif()
  message(FATAL_ERROR "the plugin cannot initialise with ${PROVIDER}:\n${all}")
endif()

if(NOT SUITE)
  set(SUITE net)
endif()
file(REMOVE "${JSON}")
execute_process(COMMAND "${CONF}" ${SUITE} "${PLUGIN}" ${args} --json "${JSON}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
# A provider without FI_RMA / FI_ATOMIC: the RMA tables refuse listen, saying so.
if(NOT rc EQUAL 0 AND NOT REQUIRED AND SUITE STREQUAL "rma"
   AND "${out}${err}" MATCHES "RMA/OFI: [^\n]*cannot carry one-sided operations")
  message("SKIP: ${PROVIDER} has no RDM endpoint with FI_RMA and FI_ATOMIC here")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft-conformance on ${PROVIDER} failed (exit ${rc})\n${err}")
endif()
if(SUITE STREQUAL "rma" AND NOT out MATCHES "[0-9]+ passed, 0 failed, 0 inconclusive, 0 skipped")
  message(FATAL_ERROR "weft-conformance rma on ${PROVIDER}: not every test passed")
endif()
