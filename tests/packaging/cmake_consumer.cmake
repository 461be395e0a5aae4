# ctest packaging_cmake_<linkage>: configure, build and run consumer/ against
# the installed PREFIX with find_package(anvil).
foreach(v PREFIX LIBDIR SOURCE_DIR BINARY_DIR LINKAGE GENERATOR C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cmake_consumer.cmake: -D${v}= missing")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE "${BINARY_DIR}")
# Only the scratch prefix may provide anvil: no package registry, and the
# consumer checks where anvil_DIR points.
run(configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}"
  -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}"
  "-DCMAKE_PREFIX_PATH=${PREFIX}"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  "-DANVIL_CONSUMER_LINKAGE=${LINKAGE}"
  "-DANVIL_CONSUMER_EXPECTED_PREFIX=${PREFIX}")
run(build "${CMAKE_COMMAND}" --build "${BINARY_DIR}")

if(DEFINED ENV{LD_LIBRARY_PATH} AND NOT "$ENV{LD_LIBRARY_PATH}" STREQUAL "")
  set(ENV{LD_LIBRARY_PATH} "${LIBDIR}:$ENV{LD_LIBRARY_PATH}")
else()
  set(ENV{LD_LIBRARY_PATH} "${LIBDIR}")
endif()
foreach(exe consumer_cpp consumer_c)
  run("${exe}" "${BINARY_DIR}/${exe}")
endforeach()
