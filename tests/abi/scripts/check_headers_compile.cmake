# abi_headers_compile_strict (run with cmake -P):
#   -DABI_DIR=<abi/> -DWORK=<scratch dir> -DCC=<C compiler> [-DCXX=<C++ compiler>]
#   [-DCUDA_INCLUDE=<dir with cuda_runtime.h>]
# Each public header compiles on its own as strict C11 (-pedantic -Werror) and, when a C++
# compiler is given, as C++; nccl.h also compiles with cuda_runtime.h included before or after
# it, when the CUDA headers are installed.
cmake_minimum_required(VERSION 3.25)

set(headers nccl.h nccl_common.h nccl_net.h nccl_tuner.h weft.h
  net/net_device.h net/net_v6.h net/net_v7.h net/net_v8.h net/net_v9.h net/net_v10.h
  net/net_v11.h nccl_devcomm.h devcomm/devcomm_v2_30.h devcomm/devcomm_v2_32.h
  tuner/tuner_v2.h tuner/tuner_v3.h tuner/tuner_v4.h tuner/tuner_v5.h
  nccl_gin.h nccl_rma.h nccl_collnet.h gin/gin_v11.h gin/gin_v12.h gin/gin_v13.h gin/gin_v14.h
  gin/gin_v15.h rma/rma_v13.h rma/rma_v14.h rma/rma_v15.h collnet/collnet_v6.h
  collnet/collnet_v7.h collnet/collnet_v8.h collnet/collnet_v9.h collnet/collnet_v10.h
  collnet/collnet_v11.h collnet/collnet_v12.h)
file(MAKE_DIRECTORY "${WORK}")
set(failures 0)

function(try_compile_one name lang text)
  if(lang STREQUAL "c")
    set(compiler "${CC}")
    set(flags -x c -std=c11)
  else()
    set(compiler "${CXX}")
    set(flags -x c++ -std=c++11)
  endif()
  set(src "${WORK}/${name}.${lang}.src")
  file(WRITE "${src}" "${text}")
  execute_process(
    COMMAND "${compiler}" ${flags} -Wall -Wextra -Werror -pedantic -fsyntax-only
            -I "${ABI_DIR}" ${ARGN} "${src}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message("FAIL ${name} (${lang}):\n${out}")
    math(EXPR n "${failures} + 1")
    set(failures ${n} PARENT_SCOPE)
  endif()
endfunction()

foreach(h IN LISTS headers)
  string(REPLACE "/" "_" tag "${h}")
  try_compile_one("${tag}" c "#include \"${h}\"\nint main(void) { return 0; }\n")
  if(CXX)
    try_compile_one("${tag}" cxx "#include \"${h}\"\nint main() { return 0; }\n")
  endif()
endforeach()

if(CUDA_INCLUDE AND EXISTS "${CUDA_INCLUDE}/cuda_runtime.h")
  set(before "#include <cuda_runtime.h>\n#include \"nccl.h\"\nint main(void) { return 0; }\n")
  set(after "#include \"nccl.h\"\n#include <cuda_runtime.h>\nint main(void) { return 0; }\n")
  # CUDA's own headers are not -pedantic clean in every mode: take them as system headers.
  try_compile_one(cuda_before c "${before}" -isystem "${CUDA_INCLUDE}")
  try_compile_one(cuda_after c "${after}" -isystem "${CUDA_INCLUDE}")
  if(CXX)
    try_compile_one(cuda_before cxx "${before}" -isystem "${CUDA_INCLUDE}")
    try_compile_one(cuda_after cxx "${after}" -isystem "${CUDA_INCLUDE}")
  endif()
else()
  message("cuda_runtime.h not found: skipped the mixed-include checks")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} header compile checks failed")
endif()
if(CXX)
  message("ok: every header compiles as strict C11 and C++11")
else()
  message("ok: every header compiles as strict C11 (no C++ compiler given)")
endif()
