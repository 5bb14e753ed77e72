# libweft-kernel-times.so (tools/kernel-times): GPU time per kernel from CUPTI, loaded through
# CUDA_INJECTION64_PATH. Built when the CUDA toolkit has CUPTI; links no part of weft.
if(WEFT_HAVE_CUDA AND TARGET CUDA::cupti)
  add_library(weft-kernel-times SHARED ${CMAKE_CURRENT_SOURCE_DIR}/kernel-times/kernel_times.c)
  target_link_libraries(weft-kernel-times PRIVATE CUDA::cupti Threads::Threads)
  set_target_properties(weft-kernel-times PROPERTIES C_VISIBILITY_PRESET default)
endif()
