// experiments/29-kquants: llama.cpp's K quantizer beside ours on the same fp32 MiniGPT (kquants.h).
#include "experiments/kquants.h"

#include <cstring>
#include <map>
#include <memory>

#include <fmt/core.h>

#include "experiments/evaluate.h"
#include "experiments/ggml_quant.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/layers/linear.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/calibrate.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_projection.h"

namespace mqexp {

const std::vector<std::string>& kquant_quantizers() {
  static const std::vector<std::string> q = {"llama.cpp", "llama.cpp+imatrix", "ours", "ours+imatrix", "ours+fisher", "ours-gptq"};
  return q;
}

namespace {

bool is_llama(const std::string& q) { return q.starts_with("llama.cpp"); }
bool with_importance(const std::string& q) { return q.ends_with("+imatrix"); }
// Our recipe suffix of a quantizer: the plain search, the search weighted by importance, the search weighted per
// weight by the loss's Fisher diagonal, GPTQ on the grid the importance-weighted search chose, columns in act-order.
std::string our_suffix(const std::string& q) {
  return q == "ours+imatrix" ? "-imatrix" : q == "ours+fisher" ? "-fisher" : q == "ours-gptq" ? "-imatrix-gptq-act-order" : "";
}

// The Linears of `m` quantized by llama.cpp to the types the plan of `type` gives each one (a mix's per-tensor
// rules included), with the importance of each Linear when given. Every tensor is decoded by both
// dequantizers; mismatches are counted.
void llama_quantize(minigpt::Model& m, const std::string& type, const GgmlQuant& g,
                    const std::map<std::string, std::vector<float>>* importance, KquantsResults& res) {
  const minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(type, m.config().n_layer);
  for (const minigpt::LinearInfo& li : m.linears()) {
    const mq::Scheme s = plan.recipe_for(li.layer, li.kind).scheme;
    const float* imp = importance ? importance->at(li.name).data() : nullptr;
    const std::vector<uint8_t> blocks = g.quantize(s, li.weight, li.out, li.in, imp);
    mq::QTensor q;
    q.scheme = s;
    q.name = li.name + ".weight";
    q.rows = li.out;
    q.cols = li.in;
    q.codes.assign(blocks.begin(), blocks.end());
    const std::vector<float> theirs = g.dequantize(s, blocks.data(), li.out * li.in), ours = mq::dequantize(q);
    ++res.dequant_tensors_checked;
    res.dequant_mismatches += std::memcmp(theirs.data(), ours.data(), ours.size() * sizeof(float)) != 0;
    m.set_projection(li.name, std::make_unique<minigpt::QuantizedProjection>(mq::QuantizedLinear(std::move(q))));
  }
  minigpt::QuantPlan embedding;  // the embedding in fp16, as every quantized plan stores it
  embedding.embedding = mq::Scheme::fp16();
  minigpt::quantize_model(m, embedding);
}

nlohmann::json quality_json(const Quality& q) {
  const Divergence& d = *q.divergence;
  return {{"ppl", q.ppl},
          {"verb_tense_accuracy", q.verb_tense.accuracy()},
          {"kld", {{"mean", d.kl_mean}, {"low", d.kl_low}, {"high", d.kl_high}, {"median", d.kl_median}, {"p99", d.kl_p99}, {"max", d.kl_max}}},
          {"top1", d.top1},
          {"dppl", {{"mean", d.dppl}, {"low", d.dppl_low}, {"high", d.dppl_high}}},
          {"tokens", d.tokens}};
}

}  // namespace

KquantsResults run_kquants(const KquantsOptions& o, const KquantsProgress& progress) {
  std::string why;
  const std::optional<GgmlQuant> ggml = GgmlQuant::load(o.ggml_library, why);
  if (!ggml) throw mq::Error(fmt::format("kquants: llama.cpp's quantizer is not installed: {}", why));
  const int per_type = static_cast<int>(kquant_quantizers().size());
  const int total = 2 + static_cast<int>(o.types.size()) * (per_type + 1);
  int done = 0;
  const auto stage = [&](const std::string& what) { progress(done++, total, what); };

  KquantsResults res;
  res.seed = o.seed;
  res.calibration_windows = o.calibration;
  // Relative to the source tree when inside it, so committed results do not name this machine's checkout.
  const std::string root = MQ_SOURCE_DIR "/";
  res.ggml_library = o.ggml_library.starts_with(root) ? o.ggml_library.substr(root.size()) : o.ggml_library;
  res.ggml_sha256 = mq::sha256_file(o.ggml_library);

  stage("corpus, fp32 checkpoint, its verb-tense margins");
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  LoadedModel ref = load_checkpoint(o.model, &c.tok);
  for (const std::string& t : o.types) (void)minigpt::QuantPlan::uniform(t, ref.model.config().n_layer);  // bad names fail now
  const EvalLimits limits{.ppl_tokens = o.ppl_tokens, .max_slots = o.max_slots, .perplexity = false, .max_items = o.max_items};
  ItemScores ref_margins;
  (void)evaluate_quality(ref.model, ref.tok, c, limits, &ref_margins);
  const std::vector<std::vector<int32_t>> calib =
      minigpt::calibration_windows(minigpt::encode_split(c.tok, c.corpus.val), o.calibration, ref.model.config().n_ctx);

  stage("importance: the diagonal of every Linear's calibration Hessian on the fp32 model");
  std::map<std::string, std::vector<float>> importance;
  for (auto& [name, h] : minigpt::collect_hessians(ref.model, calib)) {
    const Eigen::MatrixXd m = h.matrix();
    std::vector<float>& v = importance[name];
    for (int64_t j = 0; j < m.rows(); ++j) v.push_back(static_cast<float>(m(j, j)));
  }

  for (const std::string& type : o.types) {
    std::vector<std::unique_ptr<LoadedModel>> kept;
    std::vector<ItemScores> margins(static_cast<size_t>(per_type));
    const size_t first = res.rows.size();
    for (const std::string& q : kquant_quantizers()) {
      stage(type + ": " + q);
      KquantRow row;
      row.type = type;
      row.quantizer = q;
      try {
        auto lm = std::make_unique<LoadedModel>(load_checkpoint(o.model, &c.tok));
        const mq::Stopwatch t;
        if (is_llama(q)) {
          llama_quantize(lm->model, type, *ggml, with_importance(q) ? &importance : nullptr, res);
          row.recipe = with_importance(q) ? "ggml_quantize_chunk with imatrix" : "ggml_quantize_chunk";
        } else {
          minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(type + our_suffix(q), lm->model.config().n_layer);
          plan.gptq.calibration_windows = o.calibration;
          // The search's importance from the fp32 model, the vector llama.cpp is given; GPTQ stays sequential.
          if (!plan.any_gptq()) plan.gptq.sequential = false;
          minigpt::quantize_model(lm->model, plan, calib);
          row.recipe = plan.id;
        }
        row.quantize_seconds = t.seconds();
        long long weights = 0;
        for (const minigpt::LinearInfo& li : lm->model.linears()) {
          row.linear_bytes += lm->model.projection(li.name).weight_bytes();
          weights += static_cast<long long>(li.in) * li.out;
        }
        row.bits_per_weight = 8.0 * static_cast<double>(row.linear_bytes) / static_cast<double>(weights);
        row.quality = evaluate_quality(lm->model, lm->tok, c, limits, &margins[res.rows.size() - first]);
        row.ok = true;
        kept.push_back(std::move(lm));
      } catch (const std::exception& e) {
        row.error = e.what();
        kept.push_back(nullptr);
      }
      res.rows.push_back(std::move(row));
    }
    stage(type + ": divergence against fp32, its rows in one pass");
    std::vector<Evaluated> ev;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i]) ev.push_back({&kept[i]->model, &*res.rows[first + i].quality, &margins[i]});
    evaluate_divergence(ref.model, "fp32", &ref_margins, ev, c.tok, c, limits);
    for (size_t i = first; i < res.rows.size(); ++i)
      if (res.rows[i].ok) res.reference_ppl = res.rows[i].quality->divergence->ppl_reference;
    // The goals' ratios, paired by test window: both rows of a pair come from the same pass over the same windows.
    auto row_of = [&](const std::string& q) -> const KquantRow* {
      for (size_t i = first; i < res.rows.size(); ++i)
        if (res.rows[i].quantizer == q && res.rows[i].ok) return &res.rows[i];
      return nullptr;
    };
    for (const auto& [num, den] : kquant_ratio_pairs()) {
      const KquantRow* a = row_of(num);
      const KquantRow* b = row_of(den);
      if (a && b) res.ratios.push_back({type, num, den, clustered_ratio(a->quality->divergence->window_kl, b->quality->divergence->window_kl)});
    }
  }
  progress(total, total, "done");
  return res;
}

const std::vector<std::pair<std::string, std::string>>& kquant_ratio_pairs() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"ours", "llama.cpp"}, {"ours+imatrix", "llama.cpp+imatrix"}, {"ours+fisher", "llama.cpp+imatrix"},
      {"ours+fisher", "ours+imatrix"}, {"ours-gptq", "llama.cpp+imatrix"}, {"ours-gptq", "llama.cpp"}};
  return pairs;
}

nlohmann::json to_json(const KquantsResults& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const KquantRow& k : r.rows) {
    nlohmann::json j = {{"type", k.type},         {"quantizer", k.quantizer},
                        {"recipe", k.recipe},     {"ok", k.ok},
                        {"quantize_seconds", k.quantize_seconds}, {"bits_per_weight", k.bits_per_weight},
                        {"linear_bytes", k.linear_bytes}};
    if (!k.ok) j["error"] = k.error;
    if (k.quality && k.quality->divergence) j.update(quality_json(*k.quality));
    rows.push_back(j);
  }
  nlohmann::json ratios = nlohmann::json::array();
  for (const KquantRatio& q : r.ratios)
    ratios.push_back({{"type", q.type}, {"numerator", q.numerator}, {"denominator", q.denominator}, {"ratio", q.ratio.mean},
                      {"low", q.ratio.low}, {"high", q.ratio.high}, {"windows", q.ratio.groups}});
  return {{"experiment", "29-kquants"},
          {"seed", r.seed},
          {"calibration_windows", r.calibration_windows},
          {"importance", "diagonal of each Linear's calibration Hessian (X X^T / n) on the fp32 model, the vector "
                         "llama.cpp's imatrix accumulates; given to llama.cpp and to ours alike"},
          {"reference", {{"model", "fp32"}, {"ppl", r.reference_ppl}}},
          {"ggml", {{"library", r.ggml_library},
                    {"sha256", r.ggml_sha256},
                    {"dequantized_tensors_checked", r.dequant_tensors_checked},
                    {"dequantizer_mismatches", r.dequant_mismatches}}},
          {"quantizers", kquant_quantizers()},
          {"rows", rows},
          {"kld_ratios", ratios}};
}

}  // namespace mqexp
