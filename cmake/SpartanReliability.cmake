# Reliability checks (issue 12; docs/reliability.md): libFuzzer targets, the bad-input driver for every
# command, determinism and memory-growth tests. Included last from the top-level CMakeLists.txt, so every
# module target exists (or not: each block is guarded with if(TARGET ...) so this works before it lands).

# ---------------------------------------------------------------------------------------------------------
# libFuzzer targets: only with -DSPARTAN_FUZZ=ON and clang (`make fuzz` configures build-fuzz that way and
# adds -fsanitize=fuzzer-no-link,address,undefined to CMAKE_CXX_FLAGS so the libraries under test are
# coverage-instrumented too). Each target has a seed corpus <module>/fuzz/corpus/<name>/; the list of
# (target, corpus) pairs is written to ${CMAKE_BINARY_DIR}/fuzz_targets.txt for scripts/run-fuzz.sh.
#
# Without SPARTAN_FUZZ, every target is instead linked with cmake/fuzz_replay_main.cpp and registered as the
# CTest `fuzz_replay.<name>`: it replays the seed corpus and <module>/fuzz/regressions/<name>/ (inputs that
# once crashed) in the normal and the sanitizer builds, with any compiler.
set(SPARTAN_FUZZ_BUILD OFF)
if(SPARTAN_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(SPARTAN_FUZZ_BUILD ON)
  add_custom_target(fuzz_all)
endif()
function(spartan_add_fuzzer name dir)
  cmake_parse_arguments(F "" "" "SOURCES;INCLUDES;LIBS" ${ARGN})
  if(SPARTAN_FUZZ_BUILD)
    set(exe ${name})
    add_executable(${name} ${F_SOURCES})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    add_dependencies(fuzz_all ${name})
    set_property(GLOBAL APPEND PROPERTY SPARTAN_FUZZERS "${name} ${CMAKE_SOURCE_DIR}/${dir}/corpus/${name}")
  else()
    set(exe ${name}_replay)
    add_executable(${exe} ${F_SOURCES} ${CMAKE_SOURCE_DIR}/cmake/fuzz_replay_main.cpp)
    set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    add_test(NAME fuzz_replay.${name} COMMAND ${exe} ${CMAKE_SOURCE_DIR}/${dir}/corpus/${name}
             ${CMAKE_SOURCE_DIR}/${dir}/regressions/${name})
    set_tests_properties(fuzz_replay.${name} PROPERTIES TIMEOUT 120 LABELS reliability
                         ENVIRONMENT SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1)
  endif()
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/cmake ${F_INCLUDES})
  target_link_libraries(${exe} PRIVATE ${F_LIBS})
  spartan_target_defaults(${exe})
endfunction()

if(SPARTAN_FUZZ_BUILD AND TARGET fuzz_sptrace_reader)  # the fuzz executable is defined by traces/
  add_dependencies(fuzz_all fuzz_sptrace_reader)
  set_property(GLOBAL APPEND PROPERTY SPARTAN_FUZZERS "fuzz_sptrace_reader ${CMAKE_SOURCE_DIR}/traces/fuzz/corpus/fuzz_sptrace_reader")
elseif(TARGET spartan_trace)
  spartan_add_fuzzer(fuzz_sptrace_reader traces/fuzz SOURCES traces/fuzz/fuzz_reader.cpp LIBS spartan_trace spartan_common)
endif()
if(TARGET spartan_sdnn)
  # The readers only: compiled from source so the fuzzer needs neither MPI nor Zoltan.
  spartan_add_fuzzer(fuzz_sdnn_matrix_market sw/sdnn/fuzz
    SOURCES sw/sdnn/fuzz/fuzz_matrix_market.cpp sw/sdnn/src/io.cpp
    INCLUDES ${CMAKE_SOURCE_DIR}/sw/sdnn/include LIBS spartan_common ZLIB::ZLIB)
  spartan_add_fuzzer(fuzz_sdnn_tsv sw/sdnn/fuzz
    SOURCES sw/sdnn/fuzz/fuzz_tsv.cpp sw/sdnn/src/io.cpp
    INCLUDES ${CMAKE_SOURCE_DIR}/sw/sdnn/include LIBS spartan_common ZLIB::ZLIB)
endif()
if(TARGET spartan_train)
  spartan_add_fuzzer(fuzz_train_idx sw/train/fuzz
    SOURCES sw/train/fuzz/fuzz_idx.cpp sw/train/src/idx.cpp
    INCLUDES ${CMAKE_SOURCE_DIR}/sw/train/include LIBS spartan_common ZLIB::ZLIB)
endif()
if(TARGET spartan_hw_common)
  spartan_add_fuzzer(fuzz_gpu_config hw/common/fuzz SOURCES hw/common/fuzz/fuzz_gpu_config.cpp LIBS spartan_hw_common)
endif()
if(TARGET spartan_hw_units)
  spartan_add_fuzzer(fuzz_hw_mmio hw/spartan/fuzz SOURCES hw/spartan/fuzz/fuzz_mmio.cpp LIBS spartan_hw_units)
endif()
if(SPARTAN_FUZZ_BUILD)
  get_property(_fuzzers GLOBAL PROPERTY SPARTAN_FUZZERS)
  string(REPLACE ";" "\n" _fuzzers "${_fuzzers}")
  file(WRITE ${CMAKE_BINARY_DIR}/fuzz_targets.txt "${_fuzzers}\n")
endif()

# ---------------------------------------------------------------------------------------------------------
# Command-level tests (python driver, /usr/bin/python3). Each test gets the executables that exist now.
find_program(SPARTAN_RELIABILITY_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(_rel_tools "")
foreach(t spartan-train spartan-trace spartan-sim spartan-area spartan-sdnn bench_hw_gpu bench-gemm spartan-rtl-bench bench-train)
  if(TARGET ${t})
    list(APPEND _rel_tools "--tool=${t}=$<TARGET_FILE:${t}>")
  endif()
endforeach()
set(_rel_common ${SPARTAN_RELIABILITY_PYTHON} ${CMAKE_SOURCE_DIR}/sim/tests/reliability/reliability.py
  --source-dir=${CMAKE_SOURCE_DIR} --work-dir=${CMAKE_BINARY_DIR}/reliability ${_rel_tools})
if(_rel_tools)
  add_test(NAME reliability.bad_input COMMAND ${_rel_common} bad-input)
  # ~60 s on an idle 2-core machine (275 command runs); it timed out at 300 s under a load average of 6
  set_tests_properties(reliability.bad_input PROPERTIES TIMEOUT 900 LABELS reliability)
endif()
if(TARGET spartan-train)
  add_test(NAME reliability.determinism_train COMMAND ${_rel_common} determinism-train)
  set_tests_properties(reliability.determinism_train PROPERTIES TIMEOUT 300 LABELS reliability)
endif()
if(TARGET spartan-sim)
  add_test(NAME reliability.determinism_sim COMMAND ${_rel_common} determinism-sim)
  add_test(NAME reliability.sim_memory_growth COMMAND ${_rel_common} memory-growth)
  # Peak RSS is meaningless under ASan (shadow memory, quarantine): the memory test skips itself there.
  set_tests_properties(reliability.determinism_sim reliability.sim_memory_growth PROPERTIES
    TIMEOUT 300 LABELS reliability SKIP_RETURN_CODE 77)
endif()
