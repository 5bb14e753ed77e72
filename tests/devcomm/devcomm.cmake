# The device API's layout tests (label unit, no GPU). devcomm_layout_<version>: weft's frozen
# layouts (abi/nccl_devcomm.h) and weft's own nccl_device.h against NVIDIA's headers of that
# release, fetched from PyPI (nvidia-nccl-cu13) into WEFT_NCCL_WHEEL_DIR at test time and
# kept there; a failed fetch fails the test. Scripts: devcomm_layout_check.cmake.

set(WEFT_NCCL_WHEEL_DIR ${PROJECT_BINARY_DIR}/nccl-wheels CACHE PATH
  "Where the device-API layout tests keep NVIDIA's nvidia-nccl-cu13 wheels (a wheel already there is not fetched again)")
find_program(WEFT_DEVCOMM_PYTHON NAMES python3 python)
find_program(WEFT_DEVCOMM_CXX NAMES c++ g++ clang++)
if(CUDAToolkit_INCLUDE_DIRS)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 WEFT_DEVCOMM_CUDA_INCLUDE)
else()
  set(WEFT_DEVCOMM_CUDA_INCLUDE /usr/local/cuda/include)
endif()

foreach(v 2.30.7:V2_30 2.32.6:V2_32)
  string(REPLACE ":" ";" pair ${v})
  list(GET pair 0 version)
  list(GET pair 1 layout)
  set(weft_header_arg)
  if(layout STREQUAL "V2_30" AND EXISTS ${PROJECT_SOURCE_DIR}/include/nccl_device.h)
    set(weft_header_arg -DWEFT_INCLUDE=${PROJECT_SOURCE_DIR}/include)
  endif()
  add_test(NAME devcomm_layout_${version}
    COMMAND ${CMAKE_COMMAND} -DVERSION=${version} -DLAYOUT=${layout}
      -DWHEELS=${WEFT_NCCL_WHEEL_DIR} -DPYTHON=${WEFT_DEVCOMM_PYTHON}
      -DCC=${CMAKE_C_COMPILER} -DCXX=${WEFT_DEVCOMM_CXX}
      -DCUDA_INCLUDE=${WEFT_DEVCOMM_CUDA_INCLUDE} -DSRC=${PROJECT_SOURCE_DIR}
      -DWORK=${CMAKE_CURRENT_BINARY_DIR}/devcomm_layout ${weft_header_arg}
      -P ${CMAKE_CURRENT_LIST_DIR}/devcomm_layout_check.cmake)
  set_tests_properties(devcomm_layout_${version} PROPERTIES LABELS unit TIMEOUT 600
    SKIP_REGULAR_EXPRESSION "SKIP:")
endforeach()
