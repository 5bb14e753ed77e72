# Debian packages from the install components of cmake/install.cmake:
#
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build -j
#   cd build && cpack -G DEB        # libweft<soversion>, weft-dev, weft-tools, weft-plugin-ib/-ofi
#
# Depends come from the binaries (dpkg-shlibdeps; CPACK_DEBIAN_PACKAGE_SHLIBDEPS) plus what
# the binaries dlopen: weft-tools' weft-perf loads libweft's libnccl.so.2, net-ib loads
# libibverbs.so.1. No package depends on a CUDA toolkit package: the CUDA runtime is linked
# statically and the driver opened at run time, as NCCL does. A build with nvcc carries the
# kernels; one without packages the host executor only. Packages install under the configured
# CMAKE_INSTALL_PREFIX (the .pc files and the ld.so snippet name it), so build distribution
# packages with -DCMAKE_INSTALL_PREFIX=/usr.

# The Maintainer field: DEBFULLNAME/DEBEMAIL as Debian's tools use them, else a placeholder
# that lintian flags (set WEFT_PACKAGE_CONTACT when building packages for distribution).
if(DEFINED ENV{DEBEMAIL})
  set(_weft_contact "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
else()
  set(_weft_contact "weft maintainers <weft@localhost>")
endif()
set(WEFT_PACKAGE_CONTACT "${_weft_contact}" CACHE STRING "Maintainer field of the Debian packages")
set(WEFT_PACKAGE_RELEASE 1 CACHE STRING "Debian revision of the packages")

set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR weft)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${WEFT_PACKAGE_CONTACT})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${WEFT_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)

set(WEFT_DEB_VERSION "${PROJECT_VERSION}-${WEFT_PACKAGE_RELEASE}")
set(WEFT_DEB_LIB libweft${WEFT_SOVERSION})

# Components that have something to install: the fixed ones, and each plugin one whose plugin
# was built (WEFT_NET_IB / WEFT_NET_OFI AUTO skip them without their dev packages).
set(CPACK_COMPONENTS_ALL runtime dev tools)
get_property(_weft_plugins GLOBAL PROPERTY WEFT_INSTALLED_PLUGINS)
foreach(p ${_weft_plugins})
  string(REGEX REPLACE ":.*" "" _comp ${p})
  if(NOT _comp IN_LIST CPACK_COMPONENTS_ALL)
    list(APPEND CPACK_COMPONENTS_ALL ${_comp})
  endif()
endforeach()

# runtime → libweft<soversion>
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${WEFT_DEB_LIB})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# shlibs (packages linking libweft get their Depends from dpkg-shlibdeps) and the ldconfig
# trigger, written here: CPack's GENERATE_SHLIBS would also list libnccl.so.2, which this package
# does not offer on the loader path.
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/install/deb/shlibs
  CONTENT "libweft ${WEFT_SOVERSION} ${WEFT_DEB_LIB} (>= ${PROJECT_VERSION})\n")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/install/deb/triggers
  CONTENT "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/install/deb/shlibs
  ${PROJECT_BINARY_DIR}/install/deb/triggers)
# The plugins are libraries on the loader path too (stock NCCL dlopens them by name).
set(CPACK_DEBIAN_PLUGIN_IB_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/install/deb/triggers)
set(CPACK_DEBIAN_PLUGIN_OFI_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/install/deb/triggers)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "weft: collective communication library with NCCL's API
weft runs applications built for NVIDIA NCCL unchanged, on GPUs or (host mode)
on host memory, and loads NCCL's net and tuner plugins. This package holds
libweft.so.${WEFT_SOVERSION}, the same library as libnccl.so.2 in a private
directory (off the loader path: choose it with LD_LIBRARY_PATH or the disabled
ld.so.conf.d snippet in ${CMAKE_INSTALL_FULL_DATADIR}/weft), and weft's socket
net plugin and tuner, which stock NCCL loads too.")

# dev → weft-dev
set(CPACK_DEBIAN_DEV_PACKAGE_NAME weft-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${WEFT_DEB_LIB} (= ${WEFT_DEB_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "weft: headers, CMake and pkg-config files
The NCCL application API (nccl.h) and weft's extensions (weft.h), every frozen
net, tuner and other plugin ABI header of NCCL's plugin interfaces, the CMake
package (find_package(weft): weft::weft, weft::nccl, weft::plugin_abi,
weft::net_export) and the pkg-config files weft, weft-nccl, weft-plugin-abi
and weft-net-export. Plugin authors need only this package: see
${CMAKE_INSTALL_FULL_DOCDIR}/plugins.md in weft-tools.")

# tools → weft-tools
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME weft-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${WEFT_DEB_LIB} (= ${WEFT_DEB_VERSION})")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "weft: benchmark, plugin conformance suite and policy tool
weft-perf (nccl-tests' collectives benchmark, for weft or any NCCL-ABI
library), weft-conformance (tests any NCCL net or tuner plugin against the
ABI's rules) and weft-policy (checks and explains cluster policy files), with
weft's documentation.")

# plugin_ib → weft-plugin-ib: verbs are dlopen'ed (the plugin loads on hosts without them).
set(CPACK_DEBIAN_PLUGIN_IB_PACKAGE_NAME weft-plugin-ib)
set(CPACK_DEBIAN_PLUGIN_IB_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PLUGIN_IB_PACKAGE_DEPENDS "libibverbs1")
set(CPACK_DEBIAN_PLUGIN_IB_PACKAGE_RECOMMENDS "ibverbs-providers")
set(CPACK_DEBIAN_PLUGIN_IB_DESCRIPTION "weft: InfiniBand/RoCE net plugin for NCCL and weft
A net plugin over rdma-core verbs (RC queue pairs, RDMA write with immediate),
exporting ncclNetPlugin_v6 and newer, so weft and stock NCCL 2.18+ load it
(NCCL_NET_PLUGIN=weft-ib).")

# plugin_ofi → weft-plugin-ofi: libfabric is linked, so shlibdeps finds libfabric1.
set(CPACK_DEBIAN_PLUGIN_OFI_PACKAGE_NAME weft-plugin-ofi)
set(CPACK_DEBIAN_PLUGIN_OFI_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PLUGIN_OFI_DESCRIPTION "weft: libfabric net plugin for NCCL and weft
A net plugin over any libfabric provider with reliable-datagram endpoints
(tcp, verbs, efa, cxi, psm3, shm...), exporting ncclNetPlugin_v6 and newer, so
weft and stock NCCL 2.18+ load it (NCCL_NET_PLUGIN=weft-ofi).")

# Every package carries its copyright file (Debian policy 12.5), installed only by component
# installs (cpack), not by a plain cmake --install.
set(_weft_copyright ${PROJECT_BINARY_DIR}/install/copyright)
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _weft_license)
string(REGEX REPLACE "\n+$" "" _weft_license "${_weft_license}")
string(REGEX REPLACE "\n\n" "\n.\n" _weft_license "${_weft_license}")
string(REGEX REPLACE "\n" "\n " _weft_license "${_weft_license}")
file(CONFIGURE OUTPUT ${_weft_copyright} CONTENT
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: weft

Files: *
Copyright: 2026 the weft authors
License: BSD-3-Clause
 ${_weft_license}
")
# And its Debian changelog, gzip -9n (no name, no time stamp in the header).
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP _weft_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
else()
  string(TIMESTAMP _weft_date "%a, %d %b %Y 00:00:00 +0000" UTC)
endif()
find_program(WEFT_GZIP gzip)
foreach(comp ${CPACK_COMPONENTS_ALL})
  string(TOUPPER ${comp} _up)
  set(_pkg ${CPACK_DEBIAN_${_up}_PACKAGE_NAME})
  set(_docdir ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg})
  install(FILES ${_weft_copyright} DESTINATION ${_docdir} COMPONENT ${comp} EXCLUDE_FROM_ALL)
  if(WEFT_GZIP)
    set(_log ${PROJECT_BINARY_DIR}/install/deb/${_pkg}/changelog.Debian)
    file(CONFIGURE OUTPUT ${_log} CONTENT
"${_pkg} (${WEFT_DEB_VERSION}) unstable; urgency=medium

  * weft ${PROJECT_VERSION}, packaged by cpack from weft's source tree.

 -- ${WEFT_PACKAGE_CONTACT}  ${_weft_date}
")
    execute_process(COMMAND ${WEFT_GZIP} -9nc ${_log} OUTPUT_FILE ${_log}.gz)
    install(FILES ${_log}.gz DESTINATION ${_docdir} COMPONENT ${comp} EXCLUDE_FROM_ALL)
  endif()
endforeach()

include(CPack)
