# ctest packaging_install: cmake --install BUILD_DIR into a fresh PREFIX and
# check what landed there.
foreach(v BUILD_DIR PREFIX LIBDIR INCLUDEDIR CMAKEDIR PKGCONFIGDIR SOVERSION VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_tree.cmake: -D${v}= missing")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed: ${rc}")
endif()

set(lib "${PREFIX}/${LIBDIR}")
set(expected
  "${lib}/libanvil.so.${VERSION}"
  "${lib}/libanvil.so.${SOVERSION}"
  "${lib}/libanvil.so"
  "${lib}/libanvil.a"
  "${PREFIX}/${INCLUDEDIR}/anvil/anvil.h"
  "${PREFIX}/${INCLUDEDIR}/anvil/anvil.hpp"
  "${PREFIX}/${CMAKEDIR}/anvilConfig.cmake"
  "${PREFIX}/${CMAKEDIR}/anvilConfigVersion.cmake"
  "${PREFIX}/${CMAKEDIR}/anvilTargets.cmake"
  "${PREFIX}/${CMAKEDIR}/anvilStaticTargets.cmake"
  "${PREFIX}/${PKGCONFIGDIR}/anvil.pc")
foreach(f ${expected})
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
foreach(link "libanvil.so" "libanvil.so.${SOVERSION}")
  if(NOT IS_SYMLINK "${lib}/${link}")
    message(FATAL_ERROR "${lib}/${link} should be a symlink")
  endif()
endforeach()

# SONAME libanvil.so.<major>
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND "${READELF}" -d "${lib}/libanvil.so.${VERSION}"
    OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT dyn MATCHES "\\(SONAME\\)[^\n]*\\[libanvil\\.so\\.${SOVERSION}\\]")
    message(FATAL_ERROR "libanvil.so.${VERSION}: SONAME is not libanvil.so.${SOVERSION}:\n${dyn}")
  endif()
  if(dyn MATCHES "\\((RPATH|RUNPATH)\\)")
    message(FATAL_ERROR "installed libanvil.so.${VERSION} carries an RPATH/RUNPATH:\n${dyn}")
  endif()
else()
  message(STATUS "readelf not found: SONAME not checked")
endif()

# Xbyak is internal: nothing installed for consumers may use it (comments aside).
file(GLOB pkg_files "${PREFIX}/${CMAKEDIR}/*.cmake")
foreach(f ${pkg_files} "${PREFIX}/${PKGCONFIGDIR}/anvil.pc")
  if(f MATCHES "\\.pc$")
    set(re "^(Requires|Libs|Cflags)[^:]*:.*[Xx]byak")
  else()
    set(re "^[^#]*[Xx]byak")
  endif()
  file(STRINGS "${f}" hits REGEX "${re}")
  if(hits)
    message(FATAL_ERROR "${f} uses Xbyak: ${hits}")
  endif()
endforeach()
file(GLOB_RECURSE headers "${PREFIX}/${INCLUDEDIR}/anvil/*")
foreach(f ${headers})
  file(STRINGS "${f}" hits REGEX "#[ \t]*include[ \t]*[<\"](xbyak|hwy)/")
  if(hits)
    message(FATAL_ERROR "installed header ${f} includes an internal dependency: ${hits}")
  endif()
endforeach()
message(STATUS "installed into ${PREFIX}")
