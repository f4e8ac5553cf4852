# llama_speed (bench/vs_llama/llama_speed.cpp): llama.cpp's llama_decode timed through its C API, the llama.cpp side
# of `miniquant vs-llama`. Built in every preset of this machine's own architecture where the node-llama-cpp package
# and its bundle are present (cmake/llama_bundle.cmake), next to the miniquant binary, which finds it there; never
# linked into miniquant: the driver opens the package's libraries with dlopen and runs as its own process.
include(cmake/llama_bundle.cmake)
if(CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  return()  # the package's libraries are linux-x64 builds
endif()
if(NOT MQ_LLAMA_BUNDLE_FOUND)
  message(STATUS "llama_speed: skipped, no node-llama-cpp package under ${MQ_LLAMA_NODE_MODULES} (bash scripts/setup_node.sh installs it)")
  return()
endif()
add_executable(llama_speed bench/vs_llama/llama_speed.cpp bench/vs_ggml/ggml_api.cpp bench/vs_ggml/abi_check.cpp)
set_target_properties(llama_speed PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
target_include_directories(llama_speed PRIVATE ${CMAKE_SOURCE_DIR}/bench)
target_include_directories(llama_speed SYSTEM PRIVATE "${MQ_LLAMA_SRC}/include" "${MQ_LLAMA_SRC}/ggml/include")
target_link_libraries(llama_speed PRIVATE miniquant ${CMAKE_DL_LIBS})
target_compile_options(llama_speed PRIVATE ${MQ_WARNINGS})
target_compile_definitions(llama_speed PRIVATE MQ_GGML_BINS_DIR="${MQ_LLAMA_BINS}" MQ_GGML_HEADER_VERSION="${MQ_GGML_HEADER_VERSION}"
                           MQ_GGML_HEADER_COMMIT="${MQ_GGML_HEADER_COMMIT}")
# `miniquant vs-llama` starts it from the binary's folder: building the binary builds the driver too.
add_dependencies(miniquant_cli llama_speed)
