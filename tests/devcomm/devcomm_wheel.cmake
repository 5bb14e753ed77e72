# Included by the devcomm_* test scripts (cmake -P): the nvidia-nccl-cu13 wheel of VERSION in
# WHEELS (pip downloads it when neither it nor its unpacked headers are there yet; a failed
# download is a FATAL_ERROR, never a skip), its include/ unpacked beside it; sets nv_include to
# NVIDIA's header directory.
# Without cuda.h in CUDA_INCLUDE (NVIDIA's headers include it) it prints "SKIP:" and sets
# devcomm_skip instead. Needs VERSION, WHEELS, PYTHON, WORK, CUDA_INCLUDE.

set(devcomm_skip FALSE)
if(NOT EXISTS "${CUDA_INCLUDE}/cuda.h")
  message("SKIP: no cuda.h under '${CUDA_INCLUDE}' (NVIDIA's nccl_device.h needs the CUDA headers)")
  set(devcomm_skip TRUE)
  return()
endif()

# ---- the wheel: cached in WHEELS, fetched once --------------------------------------------
# Headers already unpacked there are enough (a machine without PyPI can be given just those).
set(unpacked "${WHEELS}/nvidia_nccl_cu13-${VERSION}")
set(nv_include "${unpacked}/nvidia/nccl/include")
file(MAKE_DIRECTORY "${WHEELS}" "${WORK}")
file(GLOB wheel "${WHEELS}/nvidia_nccl_cu13-${VERSION}-*.whl")
if(NOT wheel AND NOT EXISTS "${nv_include}/nccl_device.h")
  set(partial "${WHEELS}/.partial-${VERSION}")
  file(REMOVE_RECURSE "${partial}")
  message("fetching nvidia-nccl-cu13==${VERSION} into ${WHEELS}")
  execute_process(
    COMMAND "${PYTHON}" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check
            --quiet "nvidia-nccl-cu13==${VERSION}" -d "${partial}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  file(GLOB got "${partial}/nvidia_nccl_cu13-${VERSION}-*.whl")
  if(NOT rc EQUAL 0 OR NOT got)
    message(FATAL_ERROR "could not fetch nvidia-nccl-cu13==${VERSION} with pip (exit ${rc}):\n${out}"
      "Put the wheel, or its unpacked nvidia_nccl_cu13-${VERSION}/, in ${WHEELS} "
      "(WEFT_NCCL_WHEEL_DIR) to run offline.")
  endif()
  get_filename_component(name "${got}" NAME)
  file(RENAME "${got}" "${WHEELS}/${name}")
  file(REMOVE_RECURSE "${partial}")
  set(wheel "${WHEELS}/${name}")
endif()

# ---- its headers: only nvidia/nccl/include/ is unpacked ------------------------------------
if(NOT EXISTS "${nv_include}/nccl_device.h")
  list(GET wheel 0 wheel)
  file(REMOVE_RECURSE "${unpacked}.partial")
  execute_process(
    COMMAND "${PYTHON}" -c "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor m in z.namelist():\n    if m.startswith('nvidia/nccl/include/'): z.extract(m, sys.argv[2])"
            "${wheel}" "${unpacked}.partial"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${unpacked}.partial/nvidia/nccl/include/nccl_device.h")
    message(FATAL_ERROR "could not unpack the headers of ${wheel} (exit ${rc}):\n${out}")
  endif()
  file(REMOVE_RECURSE "${unpacked}")
  file(RENAME "${unpacked}.partial" "${unpacked}")
endif()
