# llama.cpp's headers for the programs that call the libraries of the node-llama-cpp npm package (tools/llama):
# bench/vs_ggml (ggml_mul_mat) and bench/vs_llama/llama_speed (llama_decode). Both open the libraries with dlopen,
# so they need only the headers, taken from a clone of the package's own git bundle (the same llama.cpp release as
# its libraries) in the build folder. Sets MQ_LLAMA_BUNDLE_FOUND; where it is TRUE also MQ_LLAMA_BINS (the
# prebuilt linux-x64 libraries), MQ_LLAMA_SRC (the clone: include/, ggml/include/), MQ_GGML_HEADER_VERSION and
# MQ_GGML_HEADER_COMMIT. Included once; a second include only reads the variables.
include_guard(GLOBAL)
set(MQ_LLAMA_NODE_MODULES "${CMAKE_SOURCE_DIR}/tools/llama/node_modules" CACHE PATH
    "node_modules of tools/llama (node-llama-cpp and its prebuilt linux-x64 libraries), for bench/vs_ggml and llama_speed")
set(MQ_LLAMA_BINS "${MQ_LLAMA_NODE_MODULES}/@node-llama-cpp/linux-x64/bins/linux-x64")
set(_mqllama_bundle "${MQ_LLAMA_NODE_MODULES}/node-llama-cpp/llama/gitRelease.bundle")
set(MQ_LLAMA_BUNDLE_FOUND FALSE)
if(NOT EXISTS "${MQ_LLAMA_BINS}/libggml-base.so" OR NOT EXISTS "${_mqllama_bundle}")
  return()
endif()
find_package(Git REQUIRED)
set(MQ_LLAMA_SRC "${CMAKE_BINARY_DIR}/llama.cpp-bundle")
# Clone once per bundle: a changed bundle (another package version) is cloned again. The stamp also names the
# folders checked out, so a build folder cloned by an older version of this file (without include/) is redone.
set(_mqllama_paths include ggml/include ggml/CMakeLists.txt)
file(SHA256 "${_mqllama_bundle}" _mqllama_sum)
string(APPEND _mqllama_sum " ${_mqllama_paths}")
set(_mqllama_have "")
if(EXISTS "${MQ_LLAMA_SRC}/.bundle-sha256")
  file(READ "${MQ_LLAMA_SRC}/.bundle-sha256" _mqllama_have)
endif()
if(NOT _mqllama_have STREQUAL _mqllama_sum)
  file(REMOVE_RECURSE "${MQ_LLAMA_SRC}")
  execute_process(COMMAND ${GIT_EXECUTABLE} clone --quiet --no-checkout "${_mqllama_bundle}" "${MQ_LLAMA_SRC}"
                  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "llama.cpp bundle: cannot clone ${_mqllama_bundle}: ${_err}")
  endif()
  # Only what the builds read: the public headers and the file that states ggml's version.
  execute_process(COMMAND ${GIT_EXECUTABLE} -c advice.detachedHead=false checkout --quiet HEAD -- ${_mqllama_paths}
                  WORKING_DIRECTORY "${MQ_LLAMA_SRC}" RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "llama.cpp bundle: cannot check out the headers from the bundle: ${_err}")
  endif()
  file(WRITE "${MQ_LLAMA_SRC}/.bundle-sha256" "${_mqllama_sum}")
endif()
execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD WORKING_DIRECTORY "${MQ_LLAMA_SRC}"
                OUTPUT_VARIABLE MQ_GGML_HEADER_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE)
file(STRINGS "${MQ_LLAMA_SRC}/ggml/CMakeLists.txt" _mqllama_ver REGEX "^set\\(GGML_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" MQ_GGML_HEADER_VERSION "${_mqllama_ver}")
set(MQ_LLAMA_BUNDLE_FOUND TRUE)
