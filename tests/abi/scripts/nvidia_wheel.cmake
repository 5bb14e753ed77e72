# NVIDIA's NCCL wheel for tests that compare weft with a given NCCL release (included by
# check_layout_wheel.cmake, tests/mp/scripts/check_exports_wheel.cmake and
# tests/devcomm/devcomm_wheel.cmake, run with cmake -P).
#   nvidia_wheel(<work dir> <version> <out var> [HEADERS_ONLY]) sets <out var> to the unpacked
#   wheel's nvidia/nccl folder (include/nccl.h, lib/libnccl.so.2). With HEADERS_ONLY, include/
#   already unpacked there is enough: a machine without PyPI can be given just
#   <work dir>/nvidia-nccl-<version>/x/nvidia/nccl/include (the device-API tests need no more).
# The wheel is fetched once with `pip download --no-deps nvidia-nccl-cu13==<version>` into the
# work dir (in the build tree) and kept there; a failed fetch is a FATAL_ERROR (the test fails:
# it never passes without comparing). Concurrent tests take a file lock around the fetch.
function(nvidia_wheel work version out)
  set(root ${work}/nvidia-nccl-${version})
  file(MAKE_DIRECTORY ${root})
  file(LOCK ${root}/.lock GUARD FUNCTION TIMEOUT 900)
  set(dir ${root}/x/nvidia/nccl)
  set(need_lib TRUE)
  if(ARGV3 STREQUAL "HEADERS_ONLY")
    set(need_lib FALSE)
  endif()
  if(NOT EXISTS ${dir}/include/nccl.h OR (need_lib AND NOT EXISTS ${dir}/lib/libnccl.so.2))
    file(GLOB wheels ${root}/nvidia_nccl_cu13-${version}-*.whl)
    if(NOT wheels)
      find_program(PIP NAMES pip3 pip)
      if(NOT PIP)
        message(FATAL_ERROR "pip is needed to fetch NVIDIA's nccl ${version} wheel")
      endif()
      # Bounded: on a machine without PyPI (a lent GPU machine) pip's defaults retry for
      # minutes while other tests wait on the lock; this fails in well under a minute instead.
      execute_process(COMMAND ${PIP} download --no-deps --disable-pip-version-check
                              --timeout 15 --retries 2
                              nvidia-nccl-cu13==${version} -d ${root}
        RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
      file(GLOB wheels ${root}/nvidia_nccl_cu13-${version}-*.whl)
      if(NOT rc EQUAL 0 OR NOT wheels)
        message(FATAL_ERROR "pip download nvidia-nccl-cu13==${version} failed (${rc}); offline, "
          "unpack the wheel's include/ under ${root}/x/nvidia/nccl (WEFT_NCCL_WHEEL_DIR):\n${e}")
      endif()
    endif()
    list(GET wheels 0 wheel)
    file(REMOVE_RECURSE ${root}/x)
    file(MAKE_DIRECTORY ${root}/x)
    execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${wheel}
      WORKING_DIRECTORY ${root}/x RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT EXISTS ${dir}/include/nccl.h OR NOT EXISTS ${dir}/lib/libnccl.so.2)
      message(FATAL_ERROR "${wheel} did not unpack to ${dir}/{include/nccl.h,lib/libnccl.so.2}")
    endif()
  endif()
  set(${out} ${dir} PARENT_SCOPE)
endfunction()
