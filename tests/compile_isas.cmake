# Compiles the kernel sources, syntax only, for the x86 levels this machine does not have: the kernels'
# instruction paths are chosen at compile time (-march=native), so a build only ever compiles its own
# machine's path, and a change made on an AVX2 machine could break the AVX-512 build unseen (it did
# once: an AVX2-only shuffle compiled into the 16-lane build). Levels: sapphirerapids (AVX-512 with VNNI
# and BF16), cooperlake (BF16 without VBMI: int3 leaves the bf16 path), icelake-server (VBMI and VNNI without
# BF16: the fp32 int3 kernel's vpermb load), skylake-avx512 (AVX-512 without VNNI or BF16: the bf16 weight-only
# path compiled out), haswell (AVX2 + FMA + F16C, no AVX-512), x86-64 (none of them: the portable twins alone).
# Invoked by ctest (CMakeLists.txt): cmake -DCXX=<compiler> -DSRC=<source dir> -DINCLUDES=<dirs> -P this.
set(flags -std=c++20 -fopenmp -fsyntax-only -I${SRC}/src)
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
set(failed "")
foreach(arch sapphirerapids cooperlake icelake-server skylake-avx512 haswell x86-64)
  foreach(file weight_only.cpp dynamic.cpp blocked_bf16.cpp float.cpp kquant.cpp kquant_dynamic.cpp)
    execute_process(COMMAND ${CXX} ${flags} -march=${arch} ${SRC}/src/miniquant/kernels/${file}
                    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(NOT rc EQUAL 0)
      string(APPEND failed "\n-march=${arch} ${file}:\n${err}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "kernel sources do not compile for every x86 level:${failed}")
endif()
message(STATUS "kernel sources compile for sapphirerapids, cooperlake, icelake-server, skylake-avx512, haswell and x86-64")
