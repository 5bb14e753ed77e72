# Unit tests of core/tune: NCCL_ALGO/NCCL_PROTO grammar and tune_choose (pure, linked in).
weft_add_test(NAME tune_algo_proto_grammar_matches_nccl
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_grammar.c ${PROJECT_SOURCE_DIR}/core/tune/algo_proto.c
  LABELS unit)
weft_add_test(NAME tune_choose_stays_inside_mask_and_caps
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_choose.c ${PROJECT_SOURCE_DIR}/core/tune/algo_proto.c
  LABELS unit)
