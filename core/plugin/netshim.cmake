# The net shim on its own (a plugin of ABI v6..v12 seen through the v12 view), for the
# conformance suite. Include from core/CMakeLists.txt after weft_util is defined:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/plugin/netshim.cmake)
file(GLOB WEFT_NETSHIM_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/net_shim*.c)
add_library(weft_netshim STATIC ${WEFT_NETSHIM_SOURCES})
set_target_properties(weft_netshim PROPERTIES C_VISIBILITY_PRESET hidden)
target_link_libraries(weft_netshim PUBLIC weft_util)

# The GIN, RMA and CollNet adapters alone (kind_shim.h), for the conformance suite.
add_library(weft_kindshim STATIC ${CMAKE_CURRENT_LIST_DIR}/gin_shim.c
  ${CMAKE_CURRENT_LIST_DIR}/rma_shim.c ${CMAKE_CURRENT_LIST_DIR}/collnet_shim.c)
set_target_properties(weft_kindshim PROPERTIES C_VISIBILITY_PRESET hidden)
target_link_libraries(weft_kindshim PUBLIC weft_util)
