# weft-policy: check, explain and schema for cluster policy files (core/policy's engine).
add_executable(weft-policy ${CMAKE_CURRENT_LIST_DIR}/weft-policy.c
  ${CMAKE_CURRENT_LIST_DIR}/weft-policy-explain.c)
target_link_libraries(weft-policy PRIVATE weft_policy)
