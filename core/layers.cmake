# The layers of core/, enforced by the build. Included from core/CMakeLists.txt.
#
# Each folder's README.md has one line "Calls: a, b, c" (or "Calls: nothing"): the folders it may
# include headers from and call. WEFT_LAYERS lists the folders bottom to top; a folder may only
# call folders listed before it, so the graph has no cycle (configure fails otherwise). Each
# folder then compiles with an include root of its own, ${CMAKE_BINARY_DIR}/layers/<folder>/,
# holding links to itself and to what it may reach (the folders it calls and, since their
# headers include their own dependencies, what those call): a header of any other folder is
# not found, so an upward include fails to compile. tests/layering checks the symbols (an
# upward call through a hand-written declaration) and docs/design.md's table.
set(WEFT_LAYERS util graph bootstrap plugin topo policy comm ras transport proxy algo host device
    rma gin tune plan lifecycle group api)

# The folders a README's "Calls:" line names, in the variable out.
function(weft_layer_calls dir out)
  set(readme ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/README.md)
  if(NOT EXISTS ${readme})
    message(FATAL_ERROR "weft layers: core/${dir} has no README.md")
  endif()
  file(STRINGS ${readme} lines REGEX "^Calls:")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "weft layers: core/${dir}/README.md needs exactly one line "
      "\"Calls: a, b\" (or \"Calls: nothing\"), found ${n}")
  endif()
  string(REGEX REPLACE "^Calls:[ ]*" "" line "${lines}")
  string(REGEX REPLACE "[. ]+$" "" line "${line}")
  set(calls)
  if(NOT line STREQUAL "nothing")
    string(REPLACE "," ";" items "${line}")
    foreach(i ${items})
      string(STRIP "${i}" i)
      list(APPEND calls ${i})
    endforeach()
  endif()
  set(${out} ${calls} PARENT_SCOPE)
endfunction()

# Read every README, check the order, compute each folder's reach (what it calls, transitively).
set(_seen)
foreach(d ${WEFT_LAYERS})
  weft_layer_calls(${d} calls)
  set(reach)
  foreach(c ${calls})
    list(FIND _seen ${c} at)
    if(at LESS 0)
      list(FIND WEFT_LAYERS ${c} known)
      if(known LESS 0)
        message(FATAL_ERROR "weft layers: core/${d}/README.md calls \"${c}\", not a core folder")
      endif()
      message(FATAL_ERROR "weft layers: core/${d} calls ${c}, which is not below it "
        "(WEFT_LAYERS in core/layers.cmake lists the folders bottom to top): a call goes up")
    endif()
    list(APPEND reach ${c} ${WEFT_REACH_${c}})
  endforeach()
  list(REMOVE_DUPLICATES reach)
  set(WEFT_CALLS_${d} ${calls})
  set(WEFT_REACH_${d} ${reach})
  list(APPEND _seen ${d})
endforeach()

# The include root of a target that sees the given folders (links into core/).
function(weft_layer_root name)
  set(root ${CMAKE_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(d ${ARGN})
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${d} ${root}/${d} SYMBOLIC)
  endforeach()
endfunction()

# Give target (the code of folder dir) its include root: itself and its reach, plus abi/.
function(weft_layer_includes target dir)
  weft_layer_root(${dir} ${dir} ${WEFT_REACH_${dir}})
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/layers/${dir}
    ${PROJECT_SOURCE_DIR}/abi)
endfunction()

# The layer's target name: weft_<dir> (util and policy are the static libraries of old).
function(weft_layer_target dir out)
  set(${out} weft_${dir} PARENT_SCOPE)
endfunction()

# Link each layer target to the layers its README names, exactly.
function(weft_layer_link dir)
  weft_layer_target(${dir} t)
  set(deps)
  foreach(c ${WEFT_CALLS_${dir}})
    weft_layer_target(${c} ct)
    list(APPEND deps ${ct})
  endforeach()
  if(deps)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      target_link_libraries(${t} INTERFACE ${deps})
    else()
      target_link_libraries(${t} PUBLIC ${deps})
    endif()
  endif()
endfunction()

# The layering as text (tests/layering compares it with docs/design.md and the objects).
set(_txt "")
foreach(d ${WEFT_LAYERS})
  string(REPLACE ";" "," c "${WEFT_CALLS_${d}}")
  string(APPEND _txt "${d}:${c}\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/layers/layers.txt "${_txt}")
