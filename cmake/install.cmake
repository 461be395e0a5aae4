# Installation and packaging of libanvil.
#
#   cmake --install <build> [--prefix <dir>]
#
# installs
#   <libdir>/libanvil.so.0.1.0 (+ libanvil.so.0, libanvil.so links)
#   <libdir>/libanvil.a
#   <includedir>/anvil/*.h, *.hpp
#   <libdir>/cmake/anvil/anvilConfig.cmake, anvilConfigVersion.cmake,
#     anvilTargets*.cmake (anvil::anvil), anvilStaticTargets*.cmake
#     (anvil::anvil_static)
#   <libdir>/pkgconfig/anvil.pc
#
# Everything installed is relocatable: the CMake files and anvil.pc locate
# the prefix relative to their own directory, so --prefix at install time
# (not only CMAKE_INSTALL_PREFIX at configure time) gives a working tree.
#
# Xbyak is header-only and used only inside the library (anvil_objects links
# it PRIVATE, and the installed targets are built from the object files), so
# neither the CMake package nor anvil.pc mention it.  The shared library's
# exported interface carries no dependencies at all; the static library needs
# Highway and (with ANVIL_USE_OPENMP) OpenMP at link time.

include(CMakePackageConfigHelpers)

set(ANVIL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/anvil"
    CACHE STRING "Where anvilConfig.cmake is installed (relative to the prefix)")
set(ANVIL_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where anvil.pc is installed (relative to the prefix)")
mark_as_advanced(ANVIL_INSTALL_CMAKEDIR ANVIL_INSTALL_PKGCONFIGDIR)

# ---- libraries -----------------------------------------------------------------
install(TARGETS anvil EXPORT anvilTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime NAMELINK_COMPONENT devel
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
install(TARGETS anvil_static EXPORT anvilStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)

# ---- public headers (C API and the header-only C++ wrapper) --------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/anvil
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# ---- CMake package -------------------------------------------------------------
install(EXPORT anvilTargets NAMESPACE anvil::
  DESTINATION ${ANVIL_INSTALL_CMAKEDIR} COMPONENT devel)
install(EXPORT anvilStaticTargets NAMESPACE anvil::
  DESTINATION ${ANVIL_INSTALL_CMAKEDIR} COMPONENT devel)

set(ANVIL_CONFIG_USE_OPENMP ${ANVIL_USE_OPENMP})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/anvilConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/anvilConfig.cmake
  INSTALL_DESTINATION ${ANVIL_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases break compatibility between minor versions.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/packaging/anvilConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/packaging/anvilConfig.cmake
  ${PROJECT_BINARY_DIR}/packaging/anvilConfigVersion.cmake
  DESTINATION ${ANVIL_INSTALL_CMAKEDIR} COMPONENT devel)

# ---- pkg-config ----------------------------------------------------------------
# prefix is derived from ${pcfiledir}, so the file stays valid wherever the
# tree is installed.  Absolute install dirs are written as they are.
if(IS_ABSOLUTE "${ANVIL_INSTALL_PKGCONFIGDIR}")
  set(ANVIL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _anvil_pc_up "/anvil_root/${ANVIL_INSTALL_PKGCONFIGDIR}" "/anvil_root")
  string(REGEX REPLACE "/$" "" _anvil_pc_up "${_anvil_pc_up}")
  set(ANVIL_PC_PREFIX "\${pcfiledir}/${_anvil_pc_up}")
endif()
foreach(_d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(ANVIL_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(ANVIL_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
# Static linking: Highway (libhwy.pc), the C++ runtime and, with OpenMP, libgomp.
set(ANVIL_PC_REQUIRES_PRIVATE "libhwy")
set(ANVIL_PC_LIBS_PRIVATE "")
if(ANVIL_USE_OPENMP)
  # The objects call the GNU OpenMP runtime when built with GCC; name it
  # directly so any compiler driver links it.  Otherwise use the flag.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    string(APPEND ANVIL_PC_LIBS_PRIVATE " -lgomp")
  else()
    string(APPEND ANVIL_PC_LIBS_PRIVATE " ${OpenMP_CXX_FLAGS}")
  endif()
endif()
string(APPEND ANVIL_PC_LIBS_PRIVATE " -lstdc++ -lm -lpthread")
string(STRIP "${ANVIL_PC_LIBS_PRIVATE}" ANVIL_PC_LIBS_PRIVATE)
configure_file(${CMAKE_CURRENT_LIST_DIR}/anvil.pc.in
  ${PROJECT_BINARY_DIR}/packaging/anvil.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/anvil.pc
  DESTINATION ${ANVIL_INSTALL_PKGCONFIGDIR} COMPONENT devel)
