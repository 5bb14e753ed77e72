# devcomm_interop (run with cmake -P; label gpu): builds devcomm_interop_main.cu against weft's
# headers and devcomm_interop_nvidia.cu against NVIDIA's 2.30.7 ones (the wheel, as for the
# layout tests) into one program with nvcc, and runs it. Skipped ("SKIP:") without cuda.h,
# nvcc, a CUDA driver or a GPU.
#   -DVERSION=2.30.7 -DWHEELS=<dir> -DPYTHON=<python3> -DCUDA_INCLUDE=<dir> -DNVCC=<nvcc>
#   -DSRC=<project source> -DWORK=<dir>
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/devcomm_wheel.cmake)
if(devcomm_skip)
  return()
endif()
if(NOT NVCC OR NOT EXISTS "${NVCC}")
  message("SKIP: no nvcc found (WEFT_DEVCOMM_NVCC)")
  return()
endif()

set(dir "${SRC}/tests/devcomm")
set(flags -std=c++17 -arch=sm_90 -I "${dir}")
foreach(unit main:-I\;${SRC}/include\;-I\;${SRC}/abi\;-I\;${SRC}/tests/gpu
    nvidia:-I\;${nv_include})
  string(REGEX MATCH "^[a-z]+" name "${unit}")
  string(REGEX REPLACE "^[a-z]+:" "" inc "${unit}")
  execute_process(COMMAND "${NVCC}" ${flags} ${inc} -c "${dir}/devcomm_interop_${name}.cu"
      -o "${WORK}/devcomm_interop_${name}.o"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc could not compile devcomm_interop_${name}.cu:\n${out}")
  endif()
endforeach()
execute_process(COMMAND "${NVCC}" -arch=sm_90 "${WORK}/devcomm_interop_main.o"
    "${WORK}/devcomm_interop_nvidia.o" -lcuda -o "${WORK}/devcomm_interop"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not link devcomm_interop:\n${out}")
endif()

execute_process(COMMAND "${WORK}/devcomm_interop" RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 77)
  message("SKIP: no GPU")
elseif(NOT rc EQUAL 0 AND err MATCHES "libcuda\\.so")
  message("SKIP: no CUDA driver (libcuda.so.1)")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "devcomm_interop failed (exit ${rc})")
endif()
