# The kernels-only build (MQ_KERNELS_ONLY, preset `aarch64`): the ops of src/miniquant that the kernel,
# quantizer, packing and format tests link, and those tests, for a cross target whose tests run under
# CMAKE_CROSSCOMPILING_EMULATOR (cmake/aarch64-linux-gnu.cmake). Included by CMakeLists.txt, which stops after
# it: no model, experiments, CLI or labs, and nothing that needs a target build of OpenSSL or CLI11.

# -O2: the kernels are explicit xsimd code, so -O3's extra vectorization adds compile time, not coverage.
set(MQ_KERNELS_ONLY_OPT -O2 CACHE STRING "Optimization level of the kernels-only build")
set(CMAKE_CXX_FLAGS_RELEASE "${MQ_KERNELS_ONLY_OPT} -DNDEBUG")

# gcc's aarch64 note that passing std::pair<double, double> changed ABI in gcc 10.1 (-Wpsabi) concerns binaries mixed
# with gcc < 10 code; nothing here is.
list(APPEND MQ_WARNINGS -Wno-psabi)

# Header-only backends: the host's arch-independent copies (the toolchain file says how they are found).
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(nlohmann_json REQUIRED)
find_package(doctest REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)  # the cross gcc's libgomp
# xsimd's CMake package sits in the host's multiarch folder (x86_64-linux-gnu): its header is checked for here
# and found by the compiler's own search.
find_path(MQ_XSIMD_INCLUDE xsimd/xsimd.hpp REQUIRED)
# fmt: its compiled part built here (cmake/fmt_compiled.cpp says why), under the name the library links.
add_library(mq_fmt STATIC ${CMAKE_SOURCE_DIR}/cmake/fmt_compiled.cpp)
add_library(fmt::fmt ALIAS mq_fmt)

# The kernel library, the x86 build's list (cmake/sources.cmake): mq_sysinfo (OpenSSL), mq_gguf and mq_energy are
# libraries of their own there and no test below links them.
include(${CMAKE_SOURCE_DIR}/cmake/sources.cmake)
add_library(miniquant STATIC ${MQ_KERNEL_SOURCES})
target_include_directories(miniquant PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(miniquant PUBLIC Eigen3::Eigen OpenMP::OpenMP_CXX fmt::fmt nlohmann_json::nlohmann_json)
target_compile_options(miniquant PRIVATE ${MQ_WARNINGS})
target_compile_definitions(miniquant PUBLIC MQ_SOURCE_DIR="${CMAKE_SOURCE_DIR}")

# The tests, each run by ctest through the emulator. They are the x86 build's own files, unchanged.
enable_testing()
add_library(mq_test_main STATIC tests/doctest_main.cpp)
target_link_libraries(mq_test_main PUBLIC doctest::doctest)
set(MQ_KERNEL_TESTS test_kernels test_kernel_registry test_blocked test_quantize test_pack test_format test_ref_kernels test_half test_gptq
    test_lab06_portable)
foreach(name ${MQ_KERNEL_TESTS})
  add_executable(${name} tests/${name}.cpp)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  target_link_libraries(${name} PRIVATE mq_test_main miniquant)
  target_compile_options(${name} PRIVATE ${MQ_WARNINGS})
  add_test(NAME ${name} COMMAND ${name} --no-intro=true)
  # MQ_TEST_REDUCED: the largest shape sweeps run their named subsets (tests/reduced_sizes.h): qemu-user is slow.
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=2;OMP_WAIT_POLICY=passive;MQ_TEST_REDUCED=1")
endforeach()
# Lab 06's learner-style solution: the handout promises a portable kernel (plain loops, OpenMP, xsimd).
target_sources(test_lab06_portable PRIVATE ${CMAKE_SOURCE_DIR}/tests/labs/lab06_solution.cpp)
target_include_directories(test_lab06_portable PRIVATE ${CMAKE_SOURCE_DIR}/labs/06-kernel)
