# SPDX-License-Identifier: MIT
# The efap2p tool (go build), and what 'cmake --install' puts where: the
# same files as 'make install' (ctests/shim/check_install.sh compares the
# two), with the directories of GNUInstallDirs.

# go on PATH, else where go.dev's tarball unpacks (the Makefile passes its GO)
find_program(GO_EXECUTABLE NAMES go PATHS /usr/local/go/bin REQUIRED)
find_package(PkgConfig QUIET)

# systemd and udev take their files from /lib or /usr/lib for the /usr
# prefix (as systemd.pc and udev.pc say), from PREFIX/lib otherwise.
set(_unitdir "lib/systemd/system")
set(_rulesdir "lib/udev/rules.d")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_unitdir "/usr/lib/systemd/system")
  set(_rulesdir "/usr/lib/udev/rules.d")
  if(PKG_CONFIG_FOUND)
    pkg_get_variable(_pc_unitdir systemd systemdsystemunitdir)
    pkg_get_variable(_pc_udevdir udev udevdir)
    if(_pc_unitdir)
      set(_unitdir "${_pc_unitdir}")
    endif()
    if(_pc_udevdir)
      set(_rulesdir "${_pc_udevdir}/rules.d")
    endif()
  endif()
endif()
set(EFAP2P_SYSTEMDUNITDIR "${_unitdir}" CACHE STRING "systemd system unit directory (relative: to the prefix)")
set(EFAP2P_UDEVRULESDIR "${_rulesdir}" CACHE STRING "udev rules directory (relative: to the prefix)")
set(EFAP2P_SYSTEMCTL "/bin/systemctl" CACHE FILEPATH "systemctl, as the udev rule runs it")

# The tool, as the Makefile builds it: a PIE linked with libc by the C
# linker, with its version and the libdir it is installed to (where
# 'efap2p sim' looks for libefasim.so).
# The commit --version names where go build cannot stamp it (the Makefile
# passes it; see main.commit).
set(EFAP2P_COMMIT "" CACHE STRING "the commit efap2p --version names")
add_custom_target(efap2p-tool ALL
  COMMAND ${CMAKE_COMMAND} -E env CGO_ENABLED=1
          ${GO_EXECUTABLE} build -trimpath -buildmode=pie
          "-ldflags=-linkmode=external -X main.version=${PROJECT_VERSION} -X main.libDir=${CMAKE_INSTALL_FULL_LIBDIR} -X main.commit=${EFAP2P_COMMIT} -X main.docDir=${CMAKE_INSTALL_FULL_DOCDIR} -X main.dataDir=${CMAKE_INSTALL_FULL_DATADIR}/efap2p -X main.includeDir=${CMAKE_INSTALL_FULL_INCLUDEDIR}"
          -o ${EFAP2P_BUILD_DIR}/efap2p ./cmd/efap2p
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  BYPRODUCTS ${EFAP2P_BUILD_DIR}/efap2p
  COMMENT "go build efap2p"
  VERBATIM)

set(_lib_perms OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(TARGETS efap2p LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} PERMISSIONS ${_lib_perms})
install(TARGETS efasim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/efap2p PERMISSIONS ${_lib_perms})
install(FILES ${EFAP2P_BUILD_DIR}/libefap2p-core.so DESTINATION ${CMAKE_INSTALL_LIBDIR}/efap2p
  PERMISSIONS ${_lib_perms})
install(PROGRAMS ${EFAP2P_BUILD_DIR}/efap2p DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/infiniband/efadv_p2p.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/infiniband)
file(GLOB _man1 ${CMAKE_SOURCE_DIR}/man/*.1)
file(GLOB _man3 ${CMAKE_SOURCE_DIR}/man/*.3)
install(FILES ${_man1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${_man3} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
install(FILES ${CMAKE_SOURCE_DIR}/dist/libefap2p.supp ${CMAKE_SOURCE_DIR}/dist/efap2p.rules.yml
  ${CMAKE_SOURCE_DIR}/dist/efap2p-check.daemonset.yaml ${CMAKE_SOURCE_DIR}/docs/check-report.schema.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/efap2p)
install(FILES ${CMAKE_SOURCE_DIR}/sim/preload/efasim.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The documents the tool's help and the man pages point to (the Makefile's DOCS).
foreach(doc README.md docs/operators.md docs/kernel-releases.md docs/topology-file.md docs/nccl-topology.md docs/consumers.md)
  install(FILES ${CMAKE_SOURCE_DIR}/${doc} DESTINATION ${CMAKE_INSTALL_DOCDIR})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/models/machines/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME machine-models.md)
install(FILES ${CMAKE_SOURCE_DIR}/sim/preload/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME emulator.md)
install(FILES ${CMAKE_SOURCE_DIR}/shim/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME library.md)

# The files that name install paths (the pkg-config file, the systemd
# unit, the udev rule) are written at install time, so that they name the
# prefix of 'cmake --install --prefix DIR'; then ldconfig, when installing
# to the live system (no DESTDIR; $LDCONFIG overrides the command, as in
# the Makefile).
install(CODE "
set(EFAP2P_SRC \"${CMAKE_SOURCE_DIR}\")
set(EFAP2P_GEN \"${CMAKE_BINARY_DIR}/install-generated\")
set(EFAP2P_VERSION \"${PROJECT_VERSION}\")
set(EFAP2P_DIRS \"${CMAKE_INSTALL_BINDIR};${CMAKE_INSTALL_LIBDIR};${CMAKE_INSTALL_INCLUDEDIR};${EFAP2P_SYSTEMDUNITDIR};${EFAP2P_UDEVRULESDIR};${CMAKE_INSTALL_DATADIR}\")
set(systemctl \"${EFAP2P_SYSTEMCTL}\")
")
install(CODE [[
set(_abs)
foreach(d IN LISTS EFAP2P_DIRS)
  if(IS_ABSOLUTE "${d}")
    list(APPEND _abs "${d}")
  else()
    list(APPEND _abs "${CMAKE_INSTALL_PREFIX}/${d}")
  endif()
endforeach()
list(GET _abs 0 bindir)
list(GET _abs 1 libdir)
list(GET _abs 2 includedir)
list(GET _abs 3 unitdir)
list(GET _abs 4 rulesdir)
list(GET _abs 5 datadir)
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(version "${EFAP2P_VERSION}")
configure_file("${EFAP2P_SRC}/efap2p.pc.in" "${EFAP2P_GEN}/efap2p.pc" @ONLY)
configure_file("${EFAP2P_SRC}/dist/efap2p-topology.service.in" "${EFAP2P_GEN}/efap2p-topology.service" @ONLY)
configure_file("${EFAP2P_SRC}/dist/70-efap2p-topology.rules.in" "${EFAP2P_GEN}/70-efap2p-topology.rules" @ONLY)
configure_file("${EFAP2P_SRC}/dist/efap2p-slurm-healthcheck.in" "${EFAP2P_GEN}/slurm-healthcheck" @ONLY)
configure_file("${EFAP2P_SRC}/dist/efap2p-slurm-taskprolog.in" "${EFAP2P_GEN}/slurm-taskprolog" @ONLY)
file(INSTALL DESTINATION "${libdir}/pkgconfig" TYPE FILE FILES "${EFAP2P_GEN}/efap2p.pc")
file(INSTALL DESTINATION "${unitdir}" TYPE FILE FILES "${EFAP2P_GEN}/efap2p-topology.service")
file(INSTALL DESTINATION "${rulesdir}" TYPE FILE FILES "${EFAP2P_GEN}/70-efap2p-topology.rules")
file(INSTALL DESTINATION "${datadir}/efap2p" TYPE PROGRAM FILES "${EFAP2P_GEN}/slurm-healthcheck" "${EFAP2P_GEN}/slurm-taskprolog")
if("$ENV{DESTDIR}" STREQUAL "")
  set(_ldconfig "$ENV{LDCONFIG}")
  if(_ldconfig STREQUAL "")
    set(_ldconfig ldconfig)
  endif()
  message(STATUS "${_ldconfig}")
  execute_process(COMMAND sh -c "${_ldconfig}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(WARNING "${_ldconfig} failed; run it as root so that programs find libefap2p.so.1")
  endif()
endif()
]])
