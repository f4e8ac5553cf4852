// Typed results of the experiments. Drivers compute with these structs and write JSON once at the end
// (to_json); reports and tests read them back (from_json). The JSON layout is the one the plot scripts
// in experiments/plot read: a flat object per scheme row.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/intervals.h"
#include "miniquant/util/timer.h"
#include "minigpt/baselines.h"

namespace mqexp {

// A rate measured over repetitions: median, slowest and fastest repetition, and their relative spread.
struct RateStat {
  double median = 0, low = 0, high = 0;
  int reps = 0;
  double spread = 0;  // (slowest - fastest) / median, of the times
  static RateStat of(const mq::Timing& t, double work_per_call);
};

struct Score {
  long long correct = 0, total = 0;
  double accuracy() const { return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total); }
};

// Verb-tense slot margins (log p of the sentence with the true form minus the best wrong form, nats).
struct MarginStats {
  long long slots = 0;
  double median = 0, p1 = 0, min = 0;  // p1: the 1st percentile
};

// A quantized model against a reference (the fp32 model) on the same test windows, token by token
// (experiments/divergence.h). KL(ref || q) per predicted token from the full next-token distributions;
// the intervals are 95%, their variance clustered by perplexity window (tokens of one window are
// correlated). Margins are paired by verb slot.
struct Divergence {
  std::string reference;       // the reference row's scheme, or its checkpoint path
  long long tokens = 0, windows = 0;
  double kl_mean = 0, kl_low = 0, kl_high = 0;  // nats per token
  double kl_median = 0, kl_p99 = 0, kl_max = 0;
  double top1 = 0;                              // fraction of tokens where both argmaxes agree
  // Next-token top-1 accuracy: the fraction of tokens whose most likely prediction is the true next token,
  // of this model and of the reference (a task accuracy well below 1 that moves with every bit removed).
  double next_token_top1 = 0, next_token_top1_reference = 0;
  double ppl_reference = 0;
  double dnll_mean = 0, dnll_low = 0, dnll_high = 0;  // mean of -log q(t) + log p(t), paired per token
  double dppl = 0, dppl_low = 0, dppl_high = 0;       // PPL(q) - PPL(ref), interval from the dnll one
  long long margin_slots = 0;                         // slots scored by both
  double dmargin_mean = 0, dmargin_low = 0, dmargin_high = 0;  // mean of margin(q) - margin(ref)
  long long flipped_to_wrong = 0, flipped_to_right = 0;        // slots whose correctness changed
  // The generalization benchmark's accuracy against the reference's, paired by item (intervals.h
  // paired_difference: only_a = items only this model gets right, only_b = only the reference), overall
  // and per paradigm; absent when either side did not score it.
  std::optional<PairedDifference> generalization_change;
  std::map<std::string, PairedDifference> generalization_change_by_paradigm;
  double seconds = 0;
  std::vector<double> window_kl;  // (windows) KL summed per test window: for paired ratios between the models
                                  // of one pass (clustered_ratio); not written to results.json
};

// The generalization benchmark (minigpt/corpus/generalization.h) on one half of its items: accuracy
// overall and per paradigm (Wilson intervals written beside them), item margins.
struct Generalization {
  std::string split = "test";  // "test" (every report) or "dev" (for building the benchmark)
  Score overall;     // the scored paradigms (minigpt::paradigm_scored): the benchmark's accuracy
  Score diagnostic;  // the diagnostic paradigms together, reported beside it
  std::map<std::string, Score> by_paradigm;
  MarginStats margin;  // all items; MarginStats::slots counts them
  long long skipped_unknown_form = 0, skipped_too_long = 0;
  double seconds = 0;
  // Per paradigm, per item of the half in the benchmark's order: '1' right, '0' wrong, '-' skipped. Any two
  // rows of one results file pair their answers item by item (generalization_report.h), without the models.
  std::map<std::string, std::string> answers;
};

// Quality of one model on the test split: perplexity and verb-tense accuracy per construction.
struct Quality {
  double ppl = 0, nats_per_token = 0, ppl_floor = 0;
  long long test_tokens = 0;
  int window = 0, stride = 0;
  Score verb_tense;                        // all constructions
  std::map<std::string, Score> by_construction;
  long long skipped_unknown_form = 0, skipped_too_long = 0;
  double perplexity_seconds = 0, verb_tense_seconds = 0;
  MarginStats margin;                                     // all constructions
  std::map<std::string, MarginStats> margin_by_construction;
  std::optional<Divergence> divergence;                   // against the reference model, when given
  std::optional<Generalization> generalization;           // the generalization benchmark, when scored
};

// Bytes one decode step moves, term by term, and its arithmetic (at `context` cached positions).
struct Traffic {
  int context = 0;
  double flops = 0;
  double weights = 0, embedding = 0, other_params = 0, activations = 0, kv_cache = 0, total = 0;
  double intensity = 0;  // flops / total
};

// What a configured model stores.
struct Footprint {
  long long bytes = 0, bytes_linear = 0, bytes_embedding = 0, bytes_other = 0, linear_weights = 0;
  double bits_per_weight = 0;  // of the Linears
  std::string embedding_format;
  Traffic decode;
};

// The roofline ceiling that bounds a decode step, and how close the measurement came.
struct RooflinePoint {
  std::string ceiling, level;
  double attainable_gflops = 0, fraction_of_bound = 0, level_bandwidth_gbps = 0;
};

// Decode and prefill speed (interleaved rounds).
struct Speed {
  int threads = 0;
  RateStat decode_tokens_per_s, prefill_tokens_per_s;
  int decode_tokens_per_rep = 0, prefill_prompt_tokens = 0;
  double decode_gflops = 0, decode_gbps = 0;
  std::optional<RooflinePoint> roofline;
  // Load average (1 min) before and after the rounds, and whether the machine was busier than its cores.
  double load_before = 0, load_after = 0;
  bool busy = false;
};

// One row against the baseline row.
struct Comparison {
  double ppl_over_baseline = 0, decode_speedup = 0, prefill_speedup = 0, bytes_ratio = 0;
};

struct GptqRecord {
  int calibration_windows = 0;
  double percdamp = 0;
  long long block = 0;
  bool act_order = false, sequential = true;
  double calibration_seconds = 0;
};

// One scheme of the sweep. A failed row has status "failed", its error, and nothing measured.
struct SchemeRow {
  std::string scheme;          // as given, e.g. "int4-g64-gptq+a8"
  std::string storage_scheme;  // the format table's name of the stored weights
  std::string method;          // "none" (fp32), "rtn", "gptq"
  bool ok = false;
  std::string error;
  double quantize_seconds = 0;
  std::optional<GptqRecord> gptq;
  std::optional<Quality> quality;  // the MiniGPT rows; the GPT-2-shaped body is timed only
  Footprint footprint;
  std::optional<Speed> speed;
  std::optional<Comparison> vs_baseline;
  bool on_pareto_frontier = false;
};

struct ModelShape {
  int vocab_size = 0, n_ctx = 0, d_model = 0, n_layer = 0, n_head = 0, d_ff = 0;
};

// A rule that picks a slot's form without a model (minigpt/baselines.h), scored on the same slots.
struct BaselineRow {
  std::string name, rule;
  Score overall;
  std::map<std::string, Score> by_construction;
};
std::vector<BaselineRow> baseline_rows(const std::vector<minigpt::BaselineScore>& b);
nlohmann::json to_json(const BaselineRow& b);
BaselineRow baseline_row_from_json(const nlohmann::json& j);

// A row that runs an equivalence transform (transform_table.h: AWQ, SmoothQuant) against the same recipe without
// it (e.g. int4-g128-awq-gptq against int4-g128-gptq), paired on the same test windows and benchmark items:
// computed when both rows ran in one sweep (method_compare.h), stored, so a report redraws without the windows.
struct MethodComparison {
  std::string method;    // the transform's suffix: "awq", "smooth"
  std::string scheme;    // the row with it
  std::string baseline;  // the row without it
  MeanInterval kl_ratio;  // KLD(scheme) / KLD(baseline), clustered by test window
  std::optional<PairedDifference> accuracy;  // benchmark accuracy, scheme minus baseline, paired by item
  double seconds = 0, baseline_seconds = 0;  // quantization, each row's (calibration included)
};

struct SweepResults {
  std::string baseline;  // the first row that succeeded, fp32 in the default list
  unsigned long long seed = 0;
  int calibration_windows = 0;
  std::vector<SchemeRow> schemes;
  std::optional<ModelShape> gpt2_config;      // the GPT-2-small-shaped body, when timed
  std::string gpt2_weights;
  std::vector<SchemeRow> gpt2_schemes;
  std::string ceilings_file;                  // relative to the results folder
  std::vector<BaselineRow> baselines;         // rule baselines on the same verb slots
  std::vector<MethodComparison> method_comparisons;
  // Per Linear input, the largest channel's max |x| over the median channel's on the calibration windows (fp32
  // model): how much AWQ and SmoothQuant can buy. Measured when a transform row ran.
  std::map<std::string, double> activation_outliers;

  const SchemeRow* find(const std::string& scheme) const;  // an ok row, or null
};

nlohmann::json to_json(const Generalization& g);
Generalization generalization_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SchemeRow& r);
SchemeRow scheme_row_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SweepResults& r);
// mq::Error naming `file` and what is missing or of the wrong type.
SweepResults sweep_results_from_json(const nlohmann::json& j, const std::string& file = "sweep results");

}  // namespace mqexp
