// experiments/29-kquants: the same fp32 MiniGPT quantized to every K type and K mix by llama.cpp's own
// quantizer (ggml_quantize_chunk from the shipped libggml-base.so, ggml_quant.h) without and with an
// importance matrix, and by ours (the search without and with the same importance, the search weighted per weight
// by the loss's Fisher diagonal (minigpt/fisher.h: gradients, more than llama.cpp is given), and GPTQ on the K grids),
// each measured against fp32 on the test split: KL divergence, top-1 agreement, ΔPPL with intervals, verb-tense
// accuracy, bits per weight. The importance given to both quantizers is the same vector: the diagonal of each
// Linear's calibration Hessian on the fp32 model (128 windows of the val split), which is what llama.cpp's
// imatrix tool accumulates. Every llama.cpp tensor is also decoded by our dequantizer and by ggml's to_float,
// which must agree bit for bit. Deterministic: a quality measurement, not a timing.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/intervals.h"
#include "experiments/results.h"

namespace mqexp {

struct KquantsOptions {
  std::string model, lexicon;
  uint64_t seed = 42;
  // K types and mixes (the sweep's names).
  std::vector<std::string> types = {"q2_k", "q3_k", "q3_k_s", "q4_k", "q4_k_m", "q5_k", "q5_k_m", "q6_k"};
  int calibration = 128;  // calibration windows (val split, n_ctx tokens each)
  int64_t max_slots = 0;  // verb-tense slots (0: all)
  int64_t max_items = 0;  // generalization benchmark items of the test half (0: all)
  int64_t ppl_tokens = 0;  // test tokens (0: all)
  std::string ggml_library;  // libggml-base.so
};

// The quantizers of every type, in row order: llama.cpp's without and with the importance, ours likewise
// (the plain recipe name and "-imatrix"), ours weighted by the Fisher diagonal ("-fisher"), and our GPTQ
// ("-imatrix-gptq-act-order").
const std::vector<std::string>& kquant_quantizers();

struct KquantRow {
  std::string type;       // "q4_k_m"
  std::string quantizer;  // one of kquant_quantizers()
  std::string recipe;     // our plan's id, or "ggml_quantize_chunk" (+ " with imatrix")
  bool ok = false;
  std::string error;
  double quantize_seconds = 0;  // ours: quantize_model (its calibration included); llama.cpp: the calls
  double bits_per_weight = 0;   // of the Linears
  long long linear_bytes = 0;
  std::optional<Quality> quality;  // with its divergence against fp32
};

// One paired KLD ratio of a type: numerator's mean KL over the denominator's, both on the same test windows
// (clustered_ratio), e.g. ours / llama.cpp.
struct KquantRatio {
  std::string type, numerator, denominator;  // quantizer names
  MeanInterval ratio;
};

// The ratios the goals are about, per type: (numerator, denominator) quantizers.
const std::vector<std::pair<std::string, std::string>>& kquant_ratio_pairs();

struct KquantsResults {
  uint64_t seed = 42;
  int calibration_windows = 0;
  double reference_ppl = 0;
  std::string ggml_library, ggml_sha256;
  long long dequant_tensors_checked = 0, dequant_mismatches = 0;  // ggml's blocks through both decoders
  std::vector<KquantRow> rows;
  std::vector<KquantRatio> ratios;  // kquant_ratio_pairs() of every type whose two rows ran
};

// mq::Error with one line when the ggml library is absent (the command skips then) or refused.
using KquantsProgress = std::function<void(int, int, const std::string&)>;
KquantsResults run_kquants(const KquantsOptions& o, const KquantsProgress& progress);

nlohmann::json to_json(const KquantsResults& r);
// The README block: the table per type and quantizer, the goals and which quantizer wins at each type.
std::string kquants_readme_block(const nlohmann::json& results, const nlohmann::json& manifest);

}  // namespace mqexp
