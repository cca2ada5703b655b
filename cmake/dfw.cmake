# Small helpers shared by module CMakeLists files.

# dfw_module(NAME [RECURSE] [DEPS target...]) : static library dfw_NAME from src/NAME/*.cc; with
# RECURSE from the .cc files of its subfolders too (tokenizers' models/, stages' io/ and shuffle/,
# inference's rooms). Without it subfolders are left out, for a module that builds them into another
# target (python's embed/, a library of its own).
function(dfw_module name)
  cmake_parse_arguments(ARG "RECURSE" "" "DEPS" ${ARGN})
  if(ARG_RECURSE)
    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  else()
    file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  endif()
  if(NOT srcs)
    return()  # module folder without sources yet
  endif()
  add_library(dfw_${name} STATIC ${srcs})
  target_include_directories(dfw_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(dfw_${name} PUBLIC ${ARG_DEPS})
endfunction()

# dfw_tests(NAME [DEPS target...]) : test binary dfw_NAME_tests from tests/NAME/*_test.cc,
# registered with CTest (one CTest entry per gtest case).
function(dfw_tests name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(dfw_${name}_tests ${srcs})
  target_include_directories(dfw_${name}_tests PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(dfw_${name}_tests PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(dfw_${name}_tests PRIVATE DFW_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DFW_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # In a sanitizer tree the test sources build at -O0 (the code under test keeps the tree's -O1):
  # clang compiles them in about half the time (13.0 s vs 6.4 s for a heavy TU here), and their own
  # code is not what the sanitizers are there to speed through. CI's sanitizer stage is mostly
  # compile time on 2 cores.
  if(DFW_SANITIZE)
    target_compile_options(dfw_${name}_tests PRIVATE -O0)
  endif()
  # DFW_CACHE_DIR=none: a test's `dfworker run` measures for itself, never reads (or leaves) a
  # decision in the user's cache folder (dfw/common/file.h UserCacheDir).
  gtest_discover_tests(dfw_${name}_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS ${name} ENVIRONMENT "DFW_CACHE_DIR=none")
endfunction()
