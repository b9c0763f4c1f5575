# tern_add_plugin(NAME SOURCES src...): one plugin = one MODULE library named
# NAME.so in the build tree's plugin directory, exporting only its entry point.
# Plugins include the SDK headers and link nothing of libtern (DESIGN.md §3).
function(tern_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/core/include)
  target_link_libraries(${name} PRIVATE ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${TERN_PLUGIN_OUTPUT_DIR})
  install(TARGETS ${name} LIBRARY DESTINATION ${TERN_PLUGIN_INSTALL_DIR})
endfunction()
