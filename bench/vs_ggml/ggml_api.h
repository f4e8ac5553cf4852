// ggml's public API, reached through dlopen instead of the linker: the benchmark then runs (or says in one line
// that it skips) on a machine without the npm package, and never makes ggml a dependency of anything else. Each
// function's type comes from the headers of the same llama.cpp release (cloned from the package's git bundle at
// configure time), so a call through the table is type-checked as a direct call would be; every symbol named
// here must resolve, or loading fails (the "known symbol set" half of the ABI check, abi_check.h).
#pragma once
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace vsggml {

// Exported by libggml-base.so: tensors, graphs, quantization, buffers, devices.
#define VSGGML_BASE_FUNCTIONS(X)                                                                                   \
  X(ggml_version) X(ggml_commit) X(ggml_log_set) X(ggml_init) X(ggml_free) X(ggml_new_tensor_2d) X(ggml_mul_mat)                  \
  X(ggml_new_graph_custom) X(ggml_build_forward_expand) X(ggml_nbytes) X(ggml_type_size) X(ggml_blck_size)        \
  X(ggml_type_name) X(ggml_get_type_traits) X(ggml_quantize_chunk) X(ggml_quantize_requires_imatrix)              \
  X(ggml_tensor_overhead) X(ggml_graph_overhead_custom) X(ggml_threadpool_params_init)                            \
  X(ggml_backend_alloc_ctx_tensors_from_buft) X(ggml_backend_tensor_set) X(ggml_backend_tensor_get)               \
  X(ggml_backend_graph_compute) X(ggml_backend_buffer_free) X(ggml_backend_buft_alloc_buffer)                      \
  X(ggml_backend_buft_name) X(ggml_backend_free) X(ggml_backend_dev_init) X(ggml_backend_dev_name)                 \
  X(ggml_backend_dev_description) X(ggml_backend_dev_buffer_type) X(ggml_backend_dev_supports_op)                  \
  X(ggml_backend_reg_name) X(ggml_backend_reg_dev_count) X(ggml_backend_reg_dev_get)                               \
  X(ggml_backend_reg_get_proc_address)

// Exported by libggml.v<version>.so: the backend registry that loads a CPU variant as llama.cpp's does.
#define VSGGML_REGISTRY_FUNCTIONS(X) X(ggml_backend_load)

// Reached through the CPU backend's get_proc_address, as llama.cpp reaches them (the names are the strings
// ggml-cpu.cpp answers to); their types are the headers' declarations.
#define VSGGML_CPU_PROCS(X)                                                                                        \
  X(ggml_backend_set_n_threads, ggml_backend_set_n_threads_t)                                                     \
  X(ggml_backend_dev_get_extra_bufts, ggml_backend_dev_get_extra_bufts_t)                                         \
  X(ggml_backend_get_features, ggml_backend_get_features_t)                                                       \
  X(ggml_threadpool_new, decltype(&::ggml_threadpool_new))                                                        \
  X(ggml_threadpool_free, decltype(&::ggml_threadpool_free))                                                      \
  X(ggml_backend_cpu_set_threadpool, decltype(&::ggml_backend_cpu_set_threadpool))

// Exported by the chosen CPU variant but not answered by its get_proc_address: resolved with dlsym on it.
// Pausing the pool after ggml's calls stops its workers' polling (poll level 50 spins for millions of rounds),
// which would otherwise run on the cores our calls use next.
#define VSGGML_CPU_EXPORTS(X) X(ggml_threadpool_pause)

// One CPU variant library and its score (ggml_backend_score: 0 = this CPU lacks a feature it was built for).
struct Variant {
  std::string name;  // "zen4", "icelake", ... (the file name between libggml-cpu- and .so)
  std::string path;
  int score = 0;
};

struct Api {
#define VSGGML_MEMBER(f) decltype(&::f) f = nullptr;
  VSGGML_BASE_FUNCTIONS(VSGGML_MEMBER)
  VSGGML_REGISTRY_FUNCTIONS(VSGGML_MEMBER)
  VSGGML_CPU_EXPORTS(VSGGML_MEMBER)
#undef VSGGML_MEMBER
#define VSGGML_PROC_MEMBER(f, T) T f = nullptr;
  VSGGML_CPU_PROCS(VSGGML_PROC_MEMBER)
#undef VSGGML_PROC_MEMBER

  // q8_K, the K types' activation type, has neither a reference quantizer nor a to_float in ggml's type traits
  // (the CPU backend quantizes to it with its own code); libggml-base.so exports its reference row functions
  // (ggml-quants.h, not a public header), whose types are the traits' from_float / to_float types with
  // block_q8_K * for void *. Resolved by name; verify.h quantizes ggml's reference activations with them.
  ggml_from_float_t quantize_row_q8_K_ref = nullptr;
  ggml_to_float_t dequantize_row_q8_K = nullptr;

  // An activation type's reference row functions: its traits' where set (q8_0), else the exports above (q8_K);
  // null where neither exists (the ABI check then fails).
  struct ActRows {
    ggml_from_float_t from_float_ref = nullptr;
    ggml_to_float_t to_float = nullptr;
  };
  ActRows act_rows(ggml_type t) const;

  std::string bins_dir;
  std::vector<Variant> variants;  // every libggml-cpu-*.so in bins_dir, scored
  Variant chosen;  // the highest score, as ggml_backend_load_best picks
  ggml_backend_reg_t reg = nullptr;  // the chosen variant's CPU backend registration
  std::vector<std::string> features;  // ggml_backend_get_features: "AVX512 = 1", ...
};

// The file in dir whose name starts with `prefix` and ends in .so (libggml.v0.5.0.so, libllama.v0.5.0.so carry the
// package's version in their names); mq::Error "no <prefix>*.so in <dir>" where there is none.
std::string find_library(const std::string& dir, const std::string& prefix);

// True when bins_dir holds the package's libraries (libggml-base.so); the caller skips otherwise.
bool package_present(const std::string& bins_dir);
// Opens libggml-base.so and libggml.v*.so from bins_dir, resolves every function above, scores every CPU
// variant, loads the best through ggml_backend_load and resolves the CPU procs. mq::Error naming the first
// library or symbol that is missing, or when no variant runs on this CPU. The libraries stay loaded.
Api load_api(const std::string& bins_dir);

}  // namespace vsggml
