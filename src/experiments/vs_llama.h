// bench/vs_llama: miniquant's decode and prefill speed beside the real llama.cpp's on the same
// exported GGUF file (fp32 -> F32, int8-per-channel -> Q8_0, int4-g64 -> Q4_0, q2_k .. q6_k -> Q2_K .. Q6_K), for the shipped
// MiniGPT and the GPT-2-small-shaped body, same threads, same token ids, interleaved rounds.
//
// llama.cpp (node-llama-cpp's prebuilt CPU build) runs through two drivers that read llama.cpp's own counters of
// llama_decode: llama_speed (bench/vs_llama/llama_speed.cpp: its C API with a persistent thread pool, as
// llama.cpp's own tools run it; the ratios are against this one) and tools/llama/speed.mjs (node-llama-cpp, whose
// per-call cost the README measures beside it; see each program's header for what is timed). miniquant runs
// minigpt::measure_speed on the model the file was exported from, once weight-only and, where the family
// has the path, once with int8 activations (+a8: llama.cpp also quantizes activations to 8 bits for its
// Q8_0 / Q4_0 / K dot products), with prefill computing the last position's logits only, as llama.cpp does.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mqexp {

struct VsLlamaOptions {
  int threads = 2;     // llama.cpp's threads and miniquant's OpenMP threads
  int rounds = 7;      // interleaved rounds (as many as the sweep's timing): llama.cpp, miniquant, llama.cpp, miniquant, ...
  int prompt = 64;     // prefill length (and the cache length decode starts from)
  int decode = 48;     // tokens decoded one at a time after the prompt (prompt + decode < n_ctx: see validate)
  std::vector<std::string> models = {"minigpt", "gpt2"};  // "minigpt": shipped; "gpt2": GPT-2-small shape, random
  std::vector<std::string> formats;  // schemes of vs_llama_formats() to time, in the table's order; empty = all
  std::string checkpoint;  // the shipped MiniGPT (its vocabulary also serves the GPT-2-shaped body)
  uint64_t seed = 42;      // token ids, and the GPT-2-shaped body's random weights
  bool kv_f32 = true;      // llama.cpp's K/V cache in F32, as miniquant keeps it (llama.cpp's default: F16)
  std::string llama_dir;   // tools/llama: speed.mjs and node_modules
  std::string llama_speed; // the llama_speed program (built beside the miniquant binary where the package is present)
  std::string tmp_dir;     // where the GGUF files are written (removed after); "" = the system's temp folder
};

// The model names --models accepts and the formats every model is timed in (--schemes picks some).
const std::vector<std::string>& vs_llama_model_names();
struct VsLlamaFormat {
  std::string scheme;     // miniquant's scheme, as exported (weight-only)
  std::string gguf_type;  // what the exporter writes for it
};
const std::vector<VsLlamaFormat>& vs_llama_formats();

// Throws mq::UsageError naming the bad option: threads, rounds >= 1; prompt >= 2 (llama.cpp counts a
// one-token batch as decode); decode >= 1; prompt + decode <= n_ctx - 1 of every chosen model (node-llama-cpp
// keeps one cache cell free and shifts the context at the last); known,
// distinct, non-empty models; known, distinct formats.
void validate(const VsLlamaOptions& o);

// Throws mq::Error when node or tools/llama's packages are missing (scripts/setup_node.sh), or llama_speed is not
// built (configured before the package was installed).
void check_llama_installed(const VsLlamaOptions& o);

using VsLlamaProgress = std::function<void(const std::string&)>;

// Exports, times and summarizes; returns the results document (see vs_llama_readme_block for what
// it holds). Sets OpenMP's thread count to o.threads for the run and restores it.
nlohmann::json run_vs_llama(const VsLlamaOptions& o, const VsLlamaProgress& progress);

// Median, fastest, slowest of samples (non-empty), as {"median", "min", "max", "samples"}.
nlohmann::json rate_summary(const std::vector<double>& samples);

// The README block: one table row per model, format and side (llama.cpp through its C API; llama.cpp through
// node-llama-cpp; miniquant weight-only; miniquant +a8) with decode and prefill tokens/s (median [min-max]) and the
// ratio of each row's median to the C API row's; the settings; a warning when the machine was busy.
std::string vs_llama_readme_block(const nlohmann::json& results);

}  // namespace mqexp
