# core/policy. The engine (engine/*.c: read, validate, match and apply a policy file) is a
# static library of its own, so tools/weft-policy and the tests link it without the rest of the
# core; the init hooks (policy_comm.c) are lifecycle/'s. Included from core/CMakeLists.txt.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(WEFT_YAML QUIET IMPORTED_TARGET yaml-0.1)
endif()
if(TARGET PkgConfig::WEFT_YAML)
  set(WEFT_YAML_TARGET PkgConfig::WEFT_YAML)
else()
  find_path(WEFT_YAML_INCLUDE_DIR yaml.h)
  find_library(WEFT_YAML_LIBRARY NAMES yaml)
  if(NOT WEFT_YAML_INCLUDE_DIR OR NOT WEFT_YAML_LIBRARY)
    message(FATAL_ERROR "weft: libyaml not found (Debian/Ubuntu: libyaml-dev; "
      "Fedora/RHEL: libyaml-devel)")
  endif()
  add_library(weft_yaml INTERFACE)
  target_include_directories(weft_yaml INTERFACE ${WEFT_YAML_INCLUDE_DIR})
  target_link_libraries(weft_yaml INTERFACE ${WEFT_YAML_LIBRARY})
  set(WEFT_YAML_TARGET weft_yaml)
endif()

file(GLOB WEFT_POLICY_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/engine/*.c)
add_library(weft_policy STATIC ${WEFT_POLICY_SOURCES})
set_target_properties(weft_policy PROPERTIES C_VISIBILITY_PRESET hidden)
target_link_libraries(weft_policy PUBLIC weft_util ${WEFT_YAML_TARGET})
