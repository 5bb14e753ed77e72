# What `cmake --install` puts where (GNUInstallDirs; CMAKE_INSTALL_PREFIX and DESTDIR honoured),
# by component (debian/*.install split them into the Debian packages; docs/install.md):
#
#   runtime    libweft.so.<soversion>; weft's libnccl.so.2 in the private LIBDIR/weft/ (never on
#              the loader path unless the admin opts in: docs/install.md); the socket net plugin,
#              the tuner, the env and trace plugins in LIBDIR, where stock NCCL and weft both
#              dlopen them; a disabled ld.so.conf.d snippet under DATADIR/weft/
#   plugin_ib  libnccl-net-weft-ib.so         plugin_ofi  libnccl-net-weft-ofi.so
#   tools      weft-perf, weft-conformance, weft-policy, weft-ras, weft-trace-merge; the
#              documentation (DOCDIR); the example policies (DATADIR/weft/policies)
#   dev        the headers (INCLUDEDIR/weft/: abi/ as it is, every frozen plugin ABI version;
#              include/ beside it: nccl_device.h and nccl_device/, the device API for kernels),
#              the libweft.so and LIBDIR/weft/libnccl.so link names, libweft-net-export.a
#              (old-ABI net tables over a v11 plugin), the CMake package (LIBDIR/cmake/weft:
#              weft::weft, weft::nccl, weft::plugin_abi, weft::net_export) and pkg-config files
#              (weft, weft-nccl, weft-plugin-abi, weft-net-export)
#
# Nothing here installs a default-name libnccl-net.so, libnccl-tuner.so or libnccl-env.so: any
# stock-NCCL job on the host would load it. Included last by the top-level CMakeLists.txt; it
# only refers to targets the other folders define.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WEFT_INSTALL_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/weft)
set(WEFT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
set(WEFT_INSTALL_PCDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(WEFT_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/weft)
set(WEFT_SOVERSION ${PROJECT_VERSION_MAJOR})

# weft_install_configured(<template> <destination dir> <name> <component>): the template, with
# its @VARIABLES@ replaced now and @WEFT_PREFIX@ replaced at install time by the prefix installed
# to (`cmake --install --prefix`), into DESTDIR.
function(weft_install_configured template dest name component)
  set(WEFT_PREFIX "@WEFT_PREFIX@")
  set(stage ${PROJECT_BINARY_DIR}/install/${name}.in)
  configure_file(${template} ${stage} @ONLY)
  install(CODE "set(WEFT_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(_out \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${dest}/${name}\")
    message(STATUS \"Installing: \${_out}\")
    configure_file(\"${stage}\" \"\${_out}\" @ONLY)" COMPONENT ${component})
endfunction()

# ---- libraries ----------------------------------------------------------------------------
set_target_properties(weft PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${WEFT_SOVERSION})
# Consumers include <nccl.h> (and <weft.h>) from INCLUDEDIR/weft.
foreach(lib weft nccl)
  target_include_directories(${lib} INTERFACE $<INSTALL_INTERFACE:${WEFT_INSTALL_INCLUDEDIR}>)
endforeach()
install(TARGETS weft EXPORT weftTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
    NAMELINK_COMPONENT dev)
install(TARGETS nccl EXPORT weftTargets
  LIBRARY DESTINATION ${WEFT_INSTALL_PRIVATE_LIBDIR} COMPONENT runtime
    NAMELINK_COMPONENT dev)

# Header-only target for plugin authors: the ABI headers, nothing to link.
add_library(weft_plugin_abi INTERFACE)
set_target_properties(weft_plugin_abi PROPERTIES EXPORT_NAME plugin_abi)
target_include_directories(weft_plugin_abi INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/abi> $<INSTALL_INTERFACE:${WEFT_INSTALL_INCLUDEDIR}>)
install(TARGETS weft_plugin_abi EXPORT weftTargets)

# The old-ABI net exports weft's own plugins link (plugins/common), for plugins outside weft:
# implement ncclNetPlugin_v11, link weft::net_export, and ncclNetPlugin_v10 … _v6 come with it.
# The archive is linked whole (nothing in a plugin refers to those tables); weft::net_export
# says so itself, so a consumer only names it.
set_target_properties(weft_net_export PROPERTIES OUTPUT_NAME weft-net-export
  EXPORT_NAME net_export_archive)
add_library(weft_net_export_whole INTERFACE)
set_target_properties(weft_net_export_whole PROPERTIES EXPORT_NAME net_export)
target_link_libraries(weft_net_export_whole INTERFACE weft_plugin_abi Threads::Threads
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,$<BUILD_INTERFACE:weft_net_export>$<INSTALL_INTERFACE:weft::net_export_archive>>")
install(TARGETS weft_net_export weft_net_export_whole EXPORT weftTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/plugins/common/net_export.h
  DESTINATION ${WEFT_INSTALL_INCLUDEDIR} RENAME weft_net_export.h COMPONENT dev)

# ---- plugins ------------------------------------------------------------------------------
# weft_install_plugin(<component> <target>): the plugin, when it was built.
function(weft_install_plugin component t)
  if(TARGET ${t})
    install(TARGETS ${t} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${component}
      NAMELINK_SKIP)
    set_property(GLOBAL APPEND PROPERTY WEFT_INSTALLED_PLUGINS ${component}:${t})
  endif()
endfunction()
weft_install_plugin(runtime nccl-net-weft-socket)
weft_install_plugin(runtime nccl-tuner-weft)
weft_install_plugin(runtime nccl-env-weft)
weft_install_plugin(runtime nccl-profiler-weft-trace)
weft_install_plugin(plugin_ib nccl-net-weft-ib)
weft_install_plugin(plugin_ofi nccl-net-weft-ofi)

# The loader-path opt-in, shipped where ld.so does not read it (docs/install.md).
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(WEFT_LDCONF_DIR ${CMAKE_INSTALL_LIBDIR}/weft)
else()
  set(WEFT_LDCONF_DIR "@WEFT_PREFIX@/${CMAKE_INSTALL_LIBDIR}/weft")
endif()
# Its directory can be moved (debian/rules puts it in LIBDIR/weft: the file names an
# architecture's directory, so a Multi-Arch: same package must not ship it under share/).
set(WEFT_LDCONF_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/weft/ld.so.conf.d CACHE STRING
  "Where the disabled ld.so.conf.d snippet 00-weft-nccl.conf is installed (under the prefix)")
weft_install_configured(${CMAKE_CURRENT_LIST_DIR}/00-weft-nccl.conf.in
  ${WEFT_LDCONF_INSTALL_DIR} 00-weft-nccl.conf runtime)

# ---- tools and docs -----------------------------------------------------------------------
foreach(t weft-perf weft-conformance weft-policy weft-ras)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
endforeach()
# --version prints weft's version (weft-perf has its own WEFT_PERF_VERSION).
target_compile_definitions(weft-policy PRIVATE WEFT_TOOL_VERSION="${PROJECT_VERSION}")
target_compile_definitions(weft-conformance PRIVATE WEFT_TOOL_VERSION="${PROJECT_VERSION}")
# weft-trace-merge (python3), for the trace profiler plugin's files: its version filled in and
# python3 named directly (no /usr/bin/env lookup in an installed script).
file(READ ${PROJECT_SOURCE_DIR}/tools/weft-trace-merge _weft_merge)
string(REPLACE "@PROJECT_VERSION@" "${PROJECT_VERSION}" _weft_merge "${_weft_merge}")
string(REPLACE "#!/usr/bin/env python3" "#!/usr/bin/python3" _weft_merge "${_weft_merge}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/install/weft-trace-merge CONTENT "${_weft_merge}" @ONLY)
file(CHMOD ${PROJECT_BINARY_DIR}/install/weft-trace-merge PERMISSIONS OWNER_READ OWNER_WRITE
  OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/tools/weft-trace-merge)
install(PROGRAMS ${PROJECT_BINARY_DIR}/install/weft-trace-merge
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
# The example policies of docs/policy.md, where `weft-policy check` can be tried on them.
file(GLOB WEFT_EXAMPLE_POLICIES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/examples/policies/*.yaml)
install(FILES ${WEFT_EXAMPLE_POLICIES} DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/policies
  COMPONENT tools)
# weft-perf finds the library under test at ../LIBDIR/weft/libnccl.so.2 from its own directory.
file(RELATIVE_PATH WEFT_PERF_REL_LIB ${CMAKE_INSTALL_FULL_BINDIR}
  ${CMAKE_INSTALL_FULL_LIBDIR}/weft/libnccl.so.2)
target_compile_definitions(weft-perf PRIVATE WEFT_PERF_INSTALLED_LIB="${WEFT_PERF_REL_LIB}")

file(GLOB WEFT_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${WEFT_DOCS} ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
  ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools)

# ---- headers ------------------------------------------------------------------------------
# abi/ as it is: nccl.h, nccl_common.h, weft.h and every plugin kind's umbrella header with its
# frozen per-version headers (net/, tuner/, …), so relative includes keep working.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/abi/ DESTINATION ${WEFT_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h")
# include/ beside it: nccl_device.h next to nccl.h, its layers in nccl_device/ (kernels build
# with -I INCLUDEDIR/weft, which pkg-config's weft-nccl Cflags give).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${WEFT_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h")

# ---- CMake package ------------------------------------------------------------------------
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${WEFT_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/install/weftConfig.cmake INSTALL_DESTINATION ${WEFT_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/weftConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install/weftConfig.cmake
  ${PROJECT_BINARY_DIR}/install/weftConfigVersion.cmake
  DESTINATION ${WEFT_INSTALL_CMAKEDIR} COMPONENT dev)

# ---- pkg-config ---------------------------------------------------------------------------
# Paths as ${prefix}/… where they are under the prefix, so `pkg-config --define-prefix` works.
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_${d}})
    set(WEFT_PC_${d} ${CMAKE_INSTALL_${d}})
  else()
    set(WEFT_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
foreach(pc weft weft-nccl weft-plugin-abi weft-net-export)
  weft_install_configured(${CMAKE_CURRENT_LIST_DIR}/pkgconfig/${pc}.pc.in ${WEFT_INSTALL_PCDIR}
    ${pc}.pc dev)
endforeach()
