# bench/vs_ggml: ggml_mul_mat from llama.cpp's CPU backend (the node-llama-cpp npm package, tools/llama) against
# our kernels. Built with MQ_BENCH only, and only where the package and its llama.cpp source bundle are present;
# never linked into miniquant or the CLI: the program opens ggml with dlopen, so it needs only the headers, taken
# from a clone of the package's own git bundle (the same llama.cpp release as its libraries) in the build folder.
set(MQ_LLAMA_NODE_MODULES "${CMAKE_SOURCE_DIR}/tools/llama/node_modules" CACHE PATH
    "node_modules of tools/llama (node-llama-cpp and its prebuilt linux-x64 libraries), for bench/vs_ggml")
set(_vsggml_bins "${MQ_LLAMA_NODE_MODULES}/@node-llama-cpp/linux-x64/bins/linux-x64")
set(_vsggml_bundle "${MQ_LLAMA_NODE_MODULES}/node-llama-cpp/llama/gitRelease.bundle")
if(NOT EXISTS "${_vsggml_bins}/libggml-base.so" OR NOT EXISTS "${_vsggml_bundle}")
  message(STATUS "vs_ggml: skipped, no node-llama-cpp package under ${MQ_LLAMA_NODE_MODULES} (bash scripts/setup_node.sh installs it)")
  return()
endif()
find_package(Git REQUIRED)
set(_vsggml_src "${CMAKE_BINARY_DIR}/llama.cpp-bundle")
# Clone once per bundle: a changed bundle (another package version) is cloned again.
file(SHA256 "${_vsggml_bundle}" _vsggml_sum)
set(_vsggml_have "")
if(EXISTS "${_vsggml_src}/.bundle-sha256")
  file(READ "${_vsggml_src}/.bundle-sha256" _vsggml_have)
endif()
if(NOT _vsggml_have STREQUAL _vsggml_sum)
  file(REMOVE_RECURSE "${_vsggml_src}")
  execute_process(COMMAND ${GIT_EXECUTABLE} clone --quiet --no-checkout "${_vsggml_bundle}" "${_vsggml_src}"
                  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "vs_ggml: cannot clone ${_vsggml_bundle}: ${_err}")
  endif()
  # Only what the build reads: the public headers and the file that states ggml's version.
  execute_process(COMMAND ${GIT_EXECUTABLE} -c advice.detachedHead=false checkout --quiet HEAD -- ggml/include ggml/CMakeLists.txt
                  WORKING_DIRECTORY "${_vsggml_src}" RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "vs_ggml: cannot check out ggml's headers from the bundle: ${_err}")
  endif()
  file(WRITE "${_vsggml_src}/.bundle-sha256" "${_vsggml_sum}")
endif()
execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD WORKING_DIRECTORY "${_vsggml_src}"
                OUTPUT_VARIABLE _vsggml_commit OUTPUT_STRIP_TRAILING_WHITESPACE)
file(STRINGS "${_vsggml_src}/ggml/CMakeLists.txt" _vsggml_ver REGEX "^set\\(GGML_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" _vsggml_version "${_vsggml_ver}")
add_executable(vs_ggml bench/vs_ggml/vs_ggml.cpp bench/vs_ggml/ggml_api.cpp bench/vs_ggml/abi_check.cpp
               bench/vs_ggml/ggml_side.cpp bench/vs_ggml/compare.cpp bench/vs_ggml/verify.cpp)
set_target_properties(vs_ggml PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
target_include_directories(vs_ggml PRIVATE ${CMAKE_SOURCE_DIR}/bench)
target_include_directories(vs_ggml SYSTEM PRIVATE "${_vsggml_src}/ggml/include")
target_link_libraries(vs_ggml PRIVATE miniquant CLI11::CLI11 ${CMAKE_DL_LIBS})
target_compile_options(vs_ggml PRIVATE ${MQ_WARNINGS})
target_compile_definitions(vs_ggml PRIVATE MQ_GGML_BINS_DIR="${_vsggml_bins}" MQ_GGML_HEADER_VERSION="${_vsggml_version}"
                           MQ_GGML_HEADER_COMMIT="${_vsggml_commit}")
message(STATUS "vs_ggml: ggml ${_vsggml_version} headers from the package's bundle (${_vsggml_commit})")
