# Included by the devcomm_* test scripts (cmake -P): the nvidia-nccl-cu13 wheel of VERSION in
# WHEELS, through tests/abi/scripts/nvidia_wheel.cmake (pip downloads it when neither it nor its
# unpacked headers are there yet; a failed download is a FATAL_ERROR, never a skip); sets
# nv_include to NVIDIA's header directory.
# Without cuda.h in CUDA_INCLUDE (NVIDIA's headers include it) it prints "SKIP:" and sets
# devcomm_skip instead. Needs VERSION, WHEELS, WORK, CUDA_INCLUDE.

set(devcomm_skip FALSE)
if(NOT EXISTS "${CUDA_INCLUDE}/cuda.h")
  message("SKIP: no cuda.h under '${CUDA_INCLUDE}' (NVIDIA's nccl_device.h needs the CUDA headers)")
  set(devcomm_skip TRUE)
  return()
endif()

# ---- the wheel: fetched once into WHEELS, shared with the abi and export tests ----------------
file(MAKE_DIRECTORY "${WORK}")
include(${CMAKE_CURRENT_LIST_DIR}/../abi/scripts/nvidia_wheel.cmake)
nvidia_wheel("${WHEELS}" "${VERSION}" nv HEADERS_ONLY)
set(nv_include "${nv}/include")
