# bench/vs_ggml: ggml_mul_mat from llama.cpp's CPU backend (the node-llama-cpp npm package, tools/llama) against
# our kernels. Built with MQ_BENCH only, and only where the package and its llama.cpp source bundle are present
# (cmake/llama_bundle.cmake); never linked into miniquant or the CLI: the program opens ggml with dlopen.
include(cmake/llama_bundle.cmake)
if(NOT MQ_LLAMA_BUNDLE_FOUND)
  message(STATUS "vs_ggml: skipped, no node-llama-cpp package under ${MQ_LLAMA_NODE_MODULES} (bash scripts/setup_node.sh installs it)")
  return()
endif()
add_executable(vs_ggml bench/vs_ggml/vs_ggml.cpp bench/vs_ggml/ggml_api.cpp bench/vs_ggml/abi_check.cpp
               bench/vs_ggml/ggml_side.cpp bench/vs_ggml/compare.cpp bench/vs_ggml/verify.cpp)
set_target_properties(vs_ggml PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
target_include_directories(vs_ggml PRIVATE ${CMAKE_SOURCE_DIR}/bench)
target_include_directories(vs_ggml SYSTEM PRIVATE "${MQ_LLAMA_SRC}/ggml/include")
target_link_libraries(vs_ggml PRIVATE miniquant mq_sysinfo mq_energy CLI11::CLI11 ${CMAKE_DL_LIBS})  # mq_energy: paired_ratio
target_compile_options(vs_ggml PRIVATE ${MQ_WARNINGS})
target_compile_definitions(vs_ggml PRIVATE MQ_GGML_BINS_DIR="${MQ_LLAMA_BINS}" MQ_GGML_HEADER_VERSION="${MQ_GGML_HEADER_VERSION}"
                           MQ_GGML_HEADER_COMMIT="${MQ_GGML_HEADER_COMMIT}")
message(STATUS "vs_ggml: ggml ${MQ_GGML_HEADER_VERSION} headers from the package's bundle (${MQ_GGML_HEADER_COMMIT})")
