# devcomm_header_compiles (run with cmake -P): weft's nccl_device.h builds as users build it.
#   -DNVCC=<nvcc> -DCC=<C compiler> -DCXX=<C++ compiler> -DSRC=<project source> -DWORK=<dir>
# 1. nvcc, all warnings as errors, compiles devcomm_header_kernel.cu (every function of the
#    header, host code included) to an object for sm_90 (ptxas checks the inline assembly;
#    NCCL_COMM_PROPERTIES_INITIALIZER sets only the head, as NVIDIA's does: no
#    missing-field-initializers warning);
# 2. the host-side part (types, initializers) compiles alone as strict C11 and C++11.
# Without nvcc the test is skipped ("SKIP:").
cmake_minimum_required(VERSION 3.25)
if(NOT NVCC OR NOT EXISTS "${NVCC}")
  message("SKIP: no nvcc found (WEFT_DEVCOMM_NVCC)")
  return()
endif()
file(MAKE_DIRECTORY "${WORK}")
set(inc -I "${SRC}/include" -I "${SRC}/abi")

execute_process(COMMAND "${NVCC}" -std=c++17 -arch=sm_90 --Werror all-warnings
    -Xcompiler=-Wall,-Wextra,-Werror,-Wno-missing-field-initializers ${inc} -c "${SRC}/tests/devcomm/devcomm_header_kernel.cu"
    -o "${WORK}/devcomm_header_kernel.o"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc could not compile devcomm_header_kernel.cu:\n${out}")
endif()

set(host_src "${WORK}/host_side.c")
file(WRITE "${host_src}" "#include \"nccl_device.h\"
int main(void) {
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  ncclTeam_t t = {4, 1, 1};
  return (int)(reqs.size + props.size) + ncclTeamRankToTeam(t, t, 2) +
         (int)ncclGetResourceBufferOffset(1);
}
")
function(host_compile compiler lang std)
  execute_process(COMMAND "${compiler}" -x ${lang} -std=${std} -Wall -Wextra -Werror -pedantic
      -Wno-missing-field-initializers -fsyntax-only ${inc} "${host_src}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nccl_device.h does not compile as ${lang} (${std}) host code:\n${out}")
  endif()
endfunction()
host_compile("${CC}" c c11)
host_compile("${CXX}" c++ c++11)
message("nccl_device.h: every function compiled by nvcc for sm_90; host part compiles as C11 and C++11")
