# What each install component must hold, relative to the install prefix, computed from the
# source tree (abi/, include/, docs/) and the configured directories, independently of cmake/install.cmake
# (include()d by install_tree.cmake). Needs: SRC, LIBDIR, BINDIR,
# INCLUDEDIR, DATADIR, DOCDIR, VERSION, SOVERSION, NCCL_VERSION, PLUGINS (component:file,…).
string(REPLACE "," ";" PLUGINS "${PLUGINS}")
# weft_expected_files(<component> <out>): the sorted list of files (symlinks included).
function(weft_expected_files component out)
  set(f)
  if(component STREQUAL "runtime")
    list(APPEND f ${LIBDIR}/libweft.so.${SOVERSION} ${LIBDIR}/libweft.so.${VERSION}
      ${LIBDIR}/weft/libnccl.so.2 ${LIBDIR}/weft/libnccl.so.${NCCL_VERSION}
      ${DATADIR}/weft/ld.so.conf.d/00-weft-nccl.conf)
  elseif(component STREQUAL "dev")
    list(APPEND f ${LIBDIR}/libweft.so ${LIBDIR}/weft/libnccl.so ${LIBDIR}/libweft-net-export.a
      ${INCLUDEDIR}/weft/weft_net_export.h
      ${LIBDIR}/cmake/weft/weftConfig.cmake ${LIBDIR}/cmake/weft/weftConfigVersion.cmake
      ${LIBDIR}/cmake/weft/weftTargets.cmake ${LIBDIR}/cmake/weft/weftTargets-@CONFIG@.cmake)
    foreach(pc weft weft-nccl weft-plugin-abi weft-net-export)
      list(APPEND f ${LIBDIR}/pkgconfig/${pc}.pc)
    endforeach()
    foreach(dir abi include)
      file(GLOB_RECURSE headers RELATIVE ${SRC}/${dir} ${SRC}/${dir}/*.h)
      foreach(h ${headers})
        list(APPEND f ${INCLUDEDIR}/weft/${h})
      endforeach()
    endforeach()
  elseif(component STREQUAL "tools")
    list(APPEND f ${BINDIR}/weft-perf ${BINDIR}/weft-conformance ${BINDIR}/weft-policy
      ${BINDIR}/weft-ras ${BINDIR}/weft-trace-merge
      ${DOCDIR}/README.md ${DOCDIR}/LICENSE ${DOCDIR}/CONTRIBUTING.md)
    file(GLOB policies RELATIVE ${SRC}/examples/policies ${SRC}/examples/policies/*.yaml)
    foreach(p ${policies})
      list(APPEND f ${DATADIR}/weft/policies/${p})
    endforeach()
    file(GLOB docs RELATIVE ${SRC}/docs ${SRC}/docs/*.md)
    foreach(d ${docs})
      list(APPEND f ${DOCDIR}/${d})
    endforeach()
  endif()
  foreach(p ${PLUGINS})
    string(REGEX MATCH "^[^:]+" c "${p}")
    string(REGEX REPLACE "^[^:]+:" "" file "${p}")
    if(c STREQUAL component)
      list(APPEND f ${LIBDIR}/${file})
    endif()
  endforeach()
  list(SORT f)
  set(${out} ${f} PARENT_SCOPE)
endfunction()

# weft_compare_files(<what> <expected-list-var> <actual-list-var>): FATAL_ERROR naming every
# missing and unexpected file. "@CONFIG@" in an expected name matches any build type.
function(weft_compare_files what expected_var actual_var)
  set(missing)
  set(actual ${${actual_var}})
  foreach(e ${${expected_var}})
    string(REPLACE "+" "\\+" re "${e}")
    string(REPLACE "@CONFIG@" "[a-z]+" re "${re}")
    set(found "")
    foreach(a ${actual})
      if(a MATCHES "^${re}$")
        set(found "${a}")
        break()
      endif()
    endforeach()
    if(found)
      list(REMOVE_ITEM actual "${found}")
    else()
      list(APPEND missing "${e}")
    endif()
  endforeach()
  if(missing OR actual)
    list(JOIN missing "\n  " m)
    list(JOIN actual "\n  " u)
    message(FATAL_ERROR "${what}: files differ from the expected list\nmissing:\n  ${m}\nunexpected:\n  ${u}")
  endif()
endfunction()
