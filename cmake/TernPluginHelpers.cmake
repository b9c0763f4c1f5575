# tern_add_plugin(NAME SOURCES src... [LIBRARIES lib...] [NO_INSTALL])
#
# One plugin = one MODULE library NAME.so that exports only its entry point
# (hidden visibility) and links nothing of libtern, only the SDK headers
# (target Tern::sdk; docs/architecture.md §3). The same function serves the tern source
# tree and out-of-tree projects (find_package(Tern) includes this file).
#
#   TERN_PLUGIN_OUTPUT_DIR   where the .so is built (default: the usual place)
#   TERN_PLUGIN_INSTALL_DIR  where `install` puts it: out of tree, the plugin
#                            directory of the tern found (TernConfig.cmake);
#                            in tern's tree, <libdir>/tern/abi-<major> of the
#                            install prefix. A relative path is under the prefix.
#
# Each installed plugin (not NO_INSTALL) is added to the global property
# TERN_RUNTIME_PLUGINS: in tern's tree, the target tern_runtime builds them.
function(tern_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tern_add_plugin(${name}): no SOURCES given")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Tern::sdk ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(TERN_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TERN_PLUGIN_OUTPUT_DIR})
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION ${TERN_PLUGIN_INSTALL_DIR} COMPONENT runtime)
    set_property(GLOBAL APPEND PROPERTY TERN_RUNTIME_PLUGINS ${name})
  endif()
endfunction()
