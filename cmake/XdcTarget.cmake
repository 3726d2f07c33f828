# xdc_warnings(target): our code builds with -Wall -Wextra -Werror.
function(xdc_warnings target)
  # GCC 12 at -O3 reports std::string's own appends ("a" + std::string&&) as overlapping
  # copies (-Wrestrict, a false positive of GCC 12): a Release build stopped on it. Kept a
  # warning.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Werror>
    $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-error=restrict>)
endfunction()

# xdc_add_subdirs(a b c): add each sub-folder that has a CMakeLists.txt.
macro(xdc_add_subdirs)
  foreach(sub ${ARGN})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${sub}/CMakeLists.txt)
      add_subdirectory(${sub})
    endif()
  endforeach()
endmacro()

# xdc_gtest(name SOURCES... LIBS...): one GoogleTest binary registered with ctest.
#   xdc_gtest(topology_test SOURCES a.cpp b.cpp LIBS xdc_topology LABELS unit)
function(xdc_gtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  xdc_warnings(${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  include(GoogleTest)
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()
