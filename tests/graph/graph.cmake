# Unit tests of core/graph: ring orders and the double binary tree (pure functions, linked in).
weft_add_test(NAME graph_ring_is_one_cycle_per_channel
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/graph_ring.c ${PROJECT_SOURCE_DIR}/core/graph/ring.c
  LABELS unit)
weft_add_test(NAME graph_double_binary_tree_is_valid_and_complementary
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/graph_tree.c ${PROJECT_SOURCE_DIR}/core/graph/tree.c
  LABELS unit)
