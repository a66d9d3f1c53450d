# Finds every third-party dependency once, for all modules.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(MPI REQUIRED COMPONENTS CXX)

pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# SystemC and TLM (TLM-2.0 headers ship with SystemC 2.3.4) through pkg-config.
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc)

find_package(verilator REQUIRED HINTS /usr/share/verilator $ENV{VERILATOR_ROOT})

# CUDA is optional: compiled wherever nvcc exists; tests skip cleanly without a GPU.
set(SPARTAN_HAVE_CUDA OFF)
if(SPARTAN_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # SASS for sm_75 (T4, RTX 20), sm_80 (A100; also runs on sm_86/sm_89, RTX 30/40) and sm_90 (H100/H200),
    # plus compute_90 PTX for newer parts; sm_70 (V100) SASS where the toolkit still builds it (CUDA < 13).
    # On a GPU without a kernel image the engines throw "unsupported GPU architecture"
    # (gemm::cuda_unusable_reason()) and the CUDA tests skip.
    set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90-real 90-virtual)
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13)
      list(PREPEND CMAKE_CUDA_ARCHITECTURES 70-real)
    endif()
    set(SPARTAN_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "spartan: CUDA ${SPARTAN_HAVE_CUDA}; SystemC ${SYSTEMC_VERSION}; Verilator ${verilator_VERSION}")

# Yosys / OpenSTA / liberty for spartan-area (found at run time too; recorded here for tests).
find_program(SPARTAN_YOSYS yosys)
find_program(SPARTAN_STA sta)
set(SPARTAN_OSU018_LIB /usr/share/qflow/tech/osu018/osu018_stdcells.lib CACHE FILEPATH "OSU 0.18um liberty")

# Project-wide: warnings on for our own targets.
function(spartan_target_defaults tgt)
  target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${SPARTAN_WARNINGS}>)
endfunction()
