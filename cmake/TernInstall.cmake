# Install layout (GNUInstallDirs; relocatable: tern finds its plugins beside
# libtern, so the whole prefix can move) and the Debian packages.
#
#   bin/tern                                  command            (tern)
#   <libdir>/libtern.so.<abi major>           library            (tern)
#   <libdir>/tern/abi-<major>/*.so            plugins            (tern)
#   share/tern/etc/*.cfg, etc/modes/*.cfg,
#   etc/examples/*.cfg, etc/data/*.jsonl      example configs    (tern)
#   share/doc/tern/, share/man/man{1,7}/      docs, man pages    (tern)
#   include/tern/*.h                          the SDK            (libtern-dev)
#   <libdir>/libtern.so                       link for embedders (libtern-dev)
#   <libdir>/pkgconfig/tern.pc                pkg-config         (libtern-dev)
#   <libdir>/cmake/Tern/                      find_package(Tern) (libtern-dev)
#   share/doc/libtern-dev/examples/           example plugin     (libtern-dev)
include(CMakePackageConfigHelpers)

set(TERN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tern)

# Outside /usr the command finds libtern relative to itself; a distro build
# (prefix /usr) needs no run path, and Debian policy forbids one.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  file(RELATIVE_PATH _rel ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(tern_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${_rel}")
endif()

install(TARGETS tern LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS tern_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY core/include/tern DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h")
# The configs as installed speak of installed paths: their comments say
# `build/bin/tern` and `docs/x.md` and `etc/...` for the source tree, which an
# installed system does not have; the copies installed say `tern`, the
# installed docs and share/tern/etc/ (the values, relative paths to ../data,
# stay as they are).
function(tern_install_config src dest)
  file(READ ${PROJECT_SOURCE_DIR}/${src} text)
  string(REPLACE "build/bin/tern" "tern" text "${text}")
  string(REGEX REPLACE "([^A-Za-z0-9_./-])docs/" "\\1${CMAKE_INSTALL_FULL_DOCDIR}/" text "${text}")
  string(REGEX REPLACE "([ `(])etc/" "\\1${CMAKE_INSTALL_FULL_DATADIR}/tern/etc/" text "${text}")
  file(WRITE ${CMAKE_BINARY_DIR}/installed/${src} "${text}")
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/${src})
  install(FILES ${CMAKE_BINARY_DIR}/installed/${src} DESTINATION ${dest} COMPONENT runtime)
endfunction()
tern_install_config(etc/quickstart.cfg ${CMAKE_INSTALL_DATADIR}/tern/etc)
# one demonstration per sync mode (docs/sync.md); their data is ../data
file(GLOB _mode_configs RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/etc/modes/*.cfg)
foreach(cfg ${_mode_configs})
  tern_install_config(${cfg} ${CMAKE_INSTALL_DATADIR}/tern/etc/modes)
endforeach()
# the harder demonstrations (etc/examples/README.md); their data is ../data
file(GLOB _example_configs RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/etc/examples/*.cfg)
foreach(cfg ${_example_configs})
  tern_install_config(${cfg} ${CMAKE_INSTALL_DATADIR}/tern/etc/examples)
endforeach()
# the tasks of the quickstart and the examples, relative to their configs
install(FILES etc/data/arith-train.jsonl etc/data/arith-eval.jsonl
  etc/data/countdown-train.jsonl etc/data/countdown-eval.jsonl
  DESTINATION ${CMAKE_INSTALL_DATADIR}/tern/etc/data COMPONENT runtime)
install(FILES etc/data/smollm2/arith-train.jsonl etc/data/smollm2/arith-eval.jsonl
  DESTINATION ${CMAKE_INSTALL_DATADIR}/tern/etc/data/smollm2 COMPONENT runtime)
install(FILES README.md docs/architecture.md docs/run.md docs/config.md docs/data.md docs/algorithms.md docs/plugins.md
  docs/abi.md docs/packaging.md docs/models.md docs/cli-model.md docs/sync.md docs/buffers.md
  docs/rewards.md docs/sandbox.md docs/timeline.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
file(GLOB _doc_images ${PROJECT_SOURCE_DIR}/docs/img/*.png ${PROJECT_SOURCE_DIR}/docs/img/*.svg)
install(FILES ${_doc_images} DESTINATION ${CMAKE_INSTALL_DOCDIR}/img COMPONENT runtime)
# sources only: build products of someone who built an example in the tree stay out
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libtern-dev/examples
  COMPONENT dev PATTERN "*.so" EXCLUDE PATTERN "*.o" EXCLUDE PATTERN "build*" EXCLUDE)

# Man pages, compressed as Debian wants them (gzip -n: reproducible).
find_program(GZIP_EXECUTABLE gzip REQUIRED)
foreach(page tern.1 tern-plugin.7)
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${GZIP_EXECUTABLE} -9n -c ${PROJECT_SOURCE_DIR}/docs/man/${page}
            > ${CMAKE_BINARY_DIR}/man/${page}.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/${page} VERBATIM)
  list(APPEND _man_pages ${CMAKE_BINARY_DIR}/man/${page}.gz)
  install(FILES ${CMAKE_BINARY_DIR}/man/${page}.gz
    DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT runtime)
endforeach()
add_custom_target(man_pages ALL DEPENDS ${_man_pages})

# pkg-config: the SDK (cflags), libtern for embedders (libs) and the plugin
# directory. Written when installing, with the prefix installed to
# (`cmake --install --prefix P` or CMAKE_INSTALL_PREFIX; DESTDIR is not part
# of it), so that pkg-config prints plain paths: -I/usr/include, not
# -I/usr/lib/x86_64-linux-gnu/pkgconfig/../../../include.
set(TERN_PC_PREFIX "@TERN_PC_PREFIX@") # kept for the install step to fill in
configure_file(cmake/tern.pc.in ${CMAKE_BINARY_DIR}/pc/tern.pc.in @ONLY)
install(CODE "
  set(TERN_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_BINARY_DIR}/pc/tern.pc.in\" \"${CMAKE_BINARY_DIR}/pc/tern.pc\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
       TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES \"${CMAKE_BINARY_DIR}/pc/tern.pc\")" COMPONENT dev)

# CMake package: find_package(Tern 1 REQUIRED), target Tern::sdk,
# tern_add_plugin(). Its version is the ABI version, and SameMajorVersion
# matches the ABI policy: a plugin asking for 1.2 gets any 1.x with x >= 2.
install(TARGETS tern_sdk EXPORT TernTargets COMPONENT dev)
install(EXPORT TernTargets NAMESPACE Tern:: DESTINATION ${TERN_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/TernConfig.cmake.in ${CMAKE_BINARY_DIR}/TernConfig.cmake
  INSTALL_DESTINATION ${TERN_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR TERN_PLUGIN_INSTALL_DIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/TernConfigVersion.cmake
  VERSION ${TERN_ABI_VERSION} COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_BINARY_DIR}/TernConfig.cmake ${CMAKE_BINARY_DIR}/TernConfigVersion.cmake
  cmake/TernPluginHelpers.cmake DESTINATION ${TERN_CMAKE_DIR} COMPONENT dev)

include(cmake/TernPackage.cmake)
