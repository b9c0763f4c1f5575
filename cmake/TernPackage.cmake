# Debian packages with CPack: `tern` (command, library, CPU plugins, configs,
# docs) and `libtern-dev` (SDK headers, pkg-config, CMake package, example).
# Build them from a /usr-prefix build: tests/packaging/deb_test.sh shows how.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tern)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "tern developers")
set(CPACK_PACKAGE_CONTACT "tern maintainers <maintainers@tern.invalid>")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The shlibs file is ours (packaging/deb/shlibs.in): CPack's generator looks
# at every .so, and warns for each plugin (a module, without a soname), and
# A program linked with libtern 1.x needs a tern at least as new.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
configure_file(packaging/deb/shlibs.in ${CMAKE_BINARY_DIR}/deb/shlibs @ONLY)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME tern)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
# libtern.so.1 is in the linker's path: dpkg's ldconfig trigger refreshes its
# cache. CPack writes postinst and postrm calling ldconfig for any library
# under /usr/lib unless CONTROL_EXTRA brings its own: ours do nothing (lintian
# warns of ldconfig calls, which policy has replaced by the trigger, and of
# empty scripts: the second is overridden, packaging/deb/tern.lintian-overrides).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/deb/triggers
  ${CMAKE_BINARY_DIR}/deb/shlibs ${PROJECT_SOURCE_DIR}/packaging/deb/postinst
  ${PROJECT_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# the code reward runs programs with them (docs/sandbox.md); tern runs without
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "python3, gcc, libc6-dev")
# `tern plot --png` converts its SVG with rsvg-convert
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "librsvg2-bin")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "reinforcement fine-tuning for language models\n\
tern runs reinforcement fine-tuning loops (explorers, a buffer, a trainer)\n\
for language models. A small core loads plugins through versioned tables:\n\
models, rewards, experience buffers and synchronisation strategies, all\n\
chosen in a libconfig file.\n\
.\n\
This package holds the tern command, libtern and the CPU plugins.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtern-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "tern (= ${PROJECT_VERSION}-1)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "SDK for writing tern plugins\n\
Headers, a pkg-config file (tern.pc, with the plugin directory) and a CMake\n\
package (find_package(Tern), Tern::sdk, tern_add_plugin) for building tern\n\
plugins out of tree, with an example reward plugin.")

# Debian wants a copyright file and a changelog in each package's doc dir.
configure_file(packaging/deb/changelog.in ${CMAKE_BINARY_DIR}/deb/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
  COMMAND ${GZIP_EXECUTABLE} -9n -c ${CMAKE_BINARY_DIR}/deb/changelog
          > ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
  DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz)
# lintian-overrides: the warnings kept on purpose, each with its reason
# (docs/packaging.md, "lintian").
foreach(comp runtime dev)
  string(TOUPPER ${comp} COMP)
  set(pkg ${CPACK_DEBIAN_${COMP}_PACKAGE_NAME})
  install(FILES packaging/deb/copyright ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} COMPONENT ${comp})
  install(FILES packaging/deb/${pkg}.lintian-overrides DESTINATION
    ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME ${pkg} COMPONENT ${comp})
endforeach()

include(CPack)
