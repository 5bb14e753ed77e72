# Install and packaging tests (label install): cmake --install into a DESTDIR and the tree
# checked (install_tree); the NCCL application of app/ and the plugin template examples/net-plugin
# built against that tree with find_package and with pkg-config, the application run in host
# mode on the installed library and the template through the installed weft-conformance
# (install_consumers_*); the Debian packages built with dpkg-buildpackage, checked with lintian
# and unpacked (package_debian). Nothing is installed on the system.
set(WEFT_TI_DIR ${PROJECT_BINARY_DIR}/tests/install)
set(WEFT_TI_ROOT ${WEFT_TI_DIR}/root)
get_property(WEFT_TI_PLUGINS GLOBAL PROPERTY WEFT_INSTALLED_PLUGINS)
set(WEFT_TI_PLUGIN_FILES)
foreach(p ${WEFT_TI_PLUGINS})
  string(REGEX REPLACE ":.*" "" comp ${p})
  string(REGEX REPLACE "^[^:]*:" "" tgt ${p})
  list(APPEND WEFT_TI_PLUGIN_FILES "${comp}:$<TARGET_FILE_NAME:${tgt}>")
endforeach()
string(REPLACE ";" "," WEFT_TI_PLUGIN_ARG "${WEFT_TI_PLUGIN_FILES}")
# The template must export the ncclNetPlugin_vN tables weft's own plugins export: those of the
# socket plugin, read with nm when the test runs.
# The tree is installed under a prefix of its own (`cmake --install --prefix`), which the
# pkg-config files, the ld.so.conf.d snippet and the CMake package must follow; the packages
# keep the configured CMAKE_INSTALL_PREFIX.
set(WEFT_TI_PREFIX /opt/weft-install-test)
set(WEFT_TI_DIRS -DSRC=${PROJECT_SOURCE_DIR} -DBUILD=${PROJECT_BINARY_DIR}
  -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
  -DBINDIR=${CMAKE_INSTALL_BINDIR} -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}
  -DDATADIR=${CMAKE_INSTALL_DATADIR} -DDATAROOTDIR=${CMAKE_INSTALL_DATAROOTDIR}
  -DDOCDIR=${CMAKE_INSTALL_DOCDIR} -DVERSION=${PROJECT_VERSION} -DSOVERSION=${WEFT_SOVERSION}
  -DNCCL_VERSION=${WEFT_NCCL_MAJOR}.${WEFT_NCCL_MINOR}.${WEFT_NCCL_PATCH}
  "-DPLUGINS=${WEFT_TI_PLUGIN_ARG}")

add_test(NAME install_tree COMMAND ${CMAKE_COMMAND} ${WEFT_TI_DIRS} -DROOT=${WEFT_TI_ROOT}
  -DPREFIX=${WEFT_TI_PREFIX}
  -DREADELF=${CMAKE_READELF} -P ${CMAKE_CURRENT_LIST_DIR}/scripts/install_tree.cmake)
set_tests_properties(install_tree PROPERTIES LABELS install TIMEOUT 120
  FIXTURES_SETUP weft_install_tree)

# nvcc, when there, also builds a device-API kernel against the installed headers.
find_program(WEFT_DEVCOMM_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
foreach(mode cmake pkgconfig)
  add_test(NAME install_consumers_${mode} COMMAND ${CMAKE_COMMAND} ${WEFT_TI_DIRS} -DMODE=${mode}
    -DNVCC=${WEFT_DEVCOMM_NVCC}
    -DPREFIX=${WEFT_TI_PREFIX}
    -DROOT=${WEFT_TI_ROOT} -DWORK=${WEFT_TI_DIR}/${mode} -DCC=${CMAKE_C_COMPILER}
    -DNM=${CMAKE_NM} -DREF_PLUGIN=$<TARGET_FILE:nccl-net-weft-socket>
    -P ${CMAKE_CURRENT_LIST_DIR}/scripts/install_consumers.cmake)
  set_tests_properties(install_consumers_${mode} PROPERTIES LABELS "install;plugin" TIMEOUT 300
    FIXTURES_REQUIRED weft_install_tree)
endforeach()

# The Debian packages: dpkg-buildpackage on a copy of the source tree, lintian, the packages
# unpacked and checked (package_debian.sh says what). Registered where the packaging tools are
# (scripts/install-deps installs them); it skips (77) when a build dependency is missing.
find_program(WEFT_DPKG_BUILDPACKAGE dpkg-buildpackage)
find_program(WEFT_DH dh)
find_program(WEFT_LINTIAN lintian)
find_program(WEFT_HELP2MAN help2man)
find_program(WEFT_MAN man)
if(WEFT_DPKG_BUILDPACKAGE AND WEFT_DH AND WEFT_LINTIAN AND WEFT_HELP2MAN AND WEFT_MAN)
  add_test(NAME package_debian COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/scripts/package_debian.sh
    ${PROJECT_SOURCE_DIR} ${WEFT_TI_DIR}/debian)
  set_tests_properties(package_debian PROPERTIES LABELS install TIMEOUT 1200
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
else()
  message(STATUS "weft: package_debian test not registered (needs dpkg-buildpackage, debhelper, lintian, help2man, man: scripts/install-deps)")
endif()
