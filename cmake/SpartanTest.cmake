include(GoogleTest)

# spartan_add_gtest(NAME SOURCES a.cpp b.cpp LIBS lib1 lib2 [LABELS l] [TIMEOUT s])
# Builds one GoogleTest executable beside the module and registers its tests with CTest.
function(spartan_add_gtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/cmake/sc_main_weak.cpp)
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  spartan_target_defaults(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  # Tests labelled `mpi` start Open MPI, which creates its session directory (/tmp/ompi.HOST.UID) on start-up;
  # two starting at once can both try to create it and one fails ("A call to mkdir was unable to create the
  # desired directory ... File exists", a fresh clone's .ci/run, forty-fourth session): they hold one lock.
  set(lock "")
  if("mpi" IN_LIST T_LABELS)
    set(lock RESOURCE_LOCK openmpi_session_dir)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}" ${lock}
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
endfunction()
