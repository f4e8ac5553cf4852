# The kernel library's sources, one list for the x86 build (CMakeLists.txt) and the aarch64 one
# (cmake/kernels_only.cmake): the top level (formats, quantizers, packing, GPTQ, roofline probes), kquant/,
# kernels/, layers/ (QuantizedLinear) and util/. util/sysinfo.cpp is its own library (mq_sysinfo: OpenSSL, hwloc),
# as are energy/ and gguf/.
file(GLOB MQ_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/miniquant/*.cpp ${CMAKE_SOURCE_DIR}/src/miniquant/kquant/*.cpp
     ${CMAKE_SOURCE_DIR}/src/miniquant/kernels/*.cpp ${CMAKE_SOURCE_DIR}/src/miniquant/layers/*.cpp
     ${CMAKE_SOURCE_DIR}/src/miniquant/util/*.cpp)
list(REMOVE_ITEM MQ_KERNEL_SOURCES ${CMAKE_SOURCE_DIR}/src/miniquant/util/sysinfo.cpp)
