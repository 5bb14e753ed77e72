# weft-ras: a RAS client with ncclras's flags (core/ras is the service it talks to).
add_executable(weft-ras ${CMAKE_CURRENT_LIST_DIR}/weft-ras.c)
target_compile_definitions(weft-ras PRIVATE WEFT_RAS_VERSION="${PROJECT_VERSION}")
