#include "experiments/sweep.h"
#include "miniquant/util/timer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/core.h>

#include "experiments/ceilings.h"
#include "miniquant/error.h"
#include "miniquant/format.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/calibrate.h"
#include "minigpt/eval.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/throughput.h"
#include "experiments/pareto.h"
#include "experiments/workspace.h"

namespace mqexp {
namespace {


// A scheme of the sweep: its name as given and the quantization it asks for.
struct Parsed {
  std::string name;
  minigpt::QuantizeModelOptions options;
};

Parsed parse(const std::string& name) { return {name, minigpt::quantize_options_for(name)}; }

// Quantizes every Linear of `m` (nothing for fp32) and stores the embedding in fp16 (fp32 for the
// fp32 baseline, which is the unmodified checkpoint). Returns the quantization report.
minigpt::ModelQuantReport quantize(minigpt::Model& m, const Parsed& p, const std::vector<std::vector<int32_t>>& calib) {
  if (p.options.scheme.kind == mq::Kind::fp32 && !p.options.gptq) return {};
  const minigpt::ModelQuantReport rep = minigpt::quantize_linears(m, p.options, calib, minigpt::quantized_projections(p.options.act));
  const auto& c = m.config();
  m.set_embedding(std::make_unique<minigpt::HalfEmbedding>(m.param("wte"), c.vocab_size, c.d_model));
  return rep;
}

// work per timed call -> rate; low/high from the slowest/fastest repetition.
nlohmann::json timing_json(const mq::Timing& t, double work) {
  const mq::Rate r = mq::rate_of(work, t);
  return {{"median", r.median}, {"low", r.low}, {"high", r.high}, {"reps", r.reps}, {"spread", t.spread()}};
}

minigpt::SpeedOptions speed_options(const minigpt::ModelConfig& c) {
  minigpt::SpeedOptions so;
  so.prompt = c.n_ctx / 2;  // decode runs from half the context to the full context
  so.decode = c.n_ctx / 2;
  so.reps = 1;
  return so;
}

// Bytes and the traffic of one decode step (at the mean cache length of the timed decode).
nlohmann::json describe(const minigpt::Model& m) {
  const auto& c = m.config();
  long long linear = 0, linear_weights = 0;
  for (const auto& li : m.linears()) {
    linear += m.projection(li.name).weight_bytes();
    linear_weights += static_cast<long long>(li.in) * li.out;
  }
  const long long emb = m.embedding().bytes();
  // Everything else stays fp32: biases, LayerNorms, position embeddings.
  const long long other =
      4LL * (static_cast<long long>(m.layout().total()) - linear_weights - static_cast<long long>(c.vocab_size) * c.d_model);
  const minigpt::SpeedOptions so = speed_options(c);
  const int context = so.prompt + so.decode / 2;
  const minigpt::DecodeTraffic tr = minigpt::decode_traffic(m, context);
  return {
      {"bytes", linear + emb + other},
      {"bytes_linear", linear},
      {"bytes_embedding", emb},
      {"bytes_other", other},
      {"linear_weights", linear_weights},
      {"bits_per_weight", 8.0 * static_cast<double>(linear) / static_cast<double>(linear_weights)},
      {"embedding_format", m.embedding().format_name()},
      {"decode_traffic",
       {{"context", context},
        {"flops", tr.flops},
        {"bytes", {{"weights", tr.weight_bytes}, {"embedding", tr.embedding_bytes}, {"other_params", tr.other_param_bytes},
                   {"activations", tr.activation_bytes}, {"kv_cache", tr.kv_bytes}, {"total", tr.total_bytes()}}},
        {"intensity", tr.intensity()}}},
  };
}

// Decode and prefill speed of several configured models, timed in interleaved rounds (one
// repetition of each model per round, after one warm-up each in the first), so a slow spell of a shared machine
// spreads over all of them instead of penalising whichever ran then. Adds the speed fields and the
// roofline bound to rows[i] for every model that is not null (a failed scheme has none).
void time_models(const std::vector<minigpt::Model*>& all, nlohmann::json& all_rows, const SweepOptions& o) {
  std::vector<minigpt::Model*> models;
  std::vector<nlohmann::json*> rows;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i]) {
      models.push_back(all[i]);
      rows.push_back(&all_rows[i]);
    }
  const size_t k = models.size();
  std::vector<std::vector<double>> dec(k), pre(k);
  for (int round = 0; round < o.speed_reps; ++round)
    for (size_t i = 0; i < k; ++i) {
      minigpt::SpeedOptions so = speed_options(models[i]->config());
      so.warmup = round == 0;  // later rounds start warm: the model ran a round ago
      const minigpt::Speed sp = minigpt::measure_speed(*models[i], so);
      dec[i].push_back(sp.decode.median);
      pre[i].push_back(sp.prefill.median);
    }
  for (size_t i = 0; i < k; ++i) {
    nlohmann::json& r = *rows[i];
    const minigpt::SpeedOptions so = speed_options(models[i]->config());
    const mq::Timing d = mq::summarize(dec[i], 1), p = mq::summarize(pre[i], 1);
    const double tps = 1.0 / d.median;
    const double flops = r["decode_traffic"]["flops"].get<double>(), bytes = r["decode_traffic"]["bytes"]["total"].get<double>();
    r["threads"] = omp_get_max_threads();
    r["decode_tokens_per_s"] = timing_json(d, 1.0);
    r["prefill_tokens_per_s"] = timing_json(p, so.prompt);
    r["decode_tokens_per_rep"] = so.decode;
    r["prefill_prompt_tokens"] = so.prompt;
    r["decode_gflops"] = flops * tps / 1e9;
    r["decode_gbps"] = bytes * tps / 1e9;
    if (!o.ceilings.is_null()) {
      const Bound b = roofline_bound(o.ceilings, flops / bytes, bytes, omp_get_max_threads());
      r["roofline"] = {{"ceiling", b.ceiling}, {"level", b.level}, {"attainable_gflops", b.attainable / 1e9},
                       {"fraction_of_bound", flops * tps / b.attainable}, {"level_bandwidth_gbps", b.bandwidth / 1e9}};
    }
  }
}

nlohmann::json score_json(const minigpt::ConstructionScore& s) {
  return {{"correct", s.correct}, {"total", s.total}, {"accuracy", s.accuracy()}};
}

// SHA-256 of the generated corpus: every split's stories, tokens separated by spaces, one story per line.
std::string corpus_sha256(const minigpt::Corpus& c) {
  std::string text;
  for (const auto* split : {&c.train, &c.val, &c.test}) {
    for (const auto& st : *split) {
      for (size_t i = 0; i < st.tokens.size(); ++i) {
        if (i) text += ' ';
        text += st.tokens[i];
      }
      text += '\n';
    }
    text += "\f\n";  // split boundary
  }
  return mq::sha256_hex(text.data(), text.size());
}

}  // namespace

const std::vector<std::string>& default_sweep_schemes() {
  // The seven storage schemes, then the two dynamic-activation runs (same storage, int8 activations).
  static const std::vector<std::string> k = {"fp32",     "fp16",      "int8-per-tensor", "int8-per-channel",
                                             "int4-g64", "int4-g128", "int4-g64-gptq",   "int8-per-channel+a8",
                                             "int4-g64+a8"};
  return k;
}

void mark_pareto(nlohmann::json& results) {
  std::vector<std::pair<double, double>> xy;
  for (const auto& s : results.at("schemes"))
    xy.emplace_back(s.value("status", "") == "ok" ? s.at("bytes").get<double>() : NAN,
                    s.value("status", "") == "ok" ? s.at("ppl").get<double>() : NAN);
  const std::vector<bool> on = pareto_frontier(xy);
  for (size_t i = 0; i < on.size(); ++i) results["schemes"][i]["on_pareto_frontier"] = static_cast<bool>(on[i]);
}

SweepRun run_sweep(const SweepOptions& o, const SweepProgress& progress) {
  std::vector<Parsed> schemes;
  for (const auto& n : o.schemes) schemes.push_back(parse(n));
  if (schemes.empty()) throw mq::UsageError("sweep: no schemes");
  const bool any_gptq = std::any_of(schemes.begin(), schemes.end(), [](const Parsed& p) { return p.options.gptq; });

  const int stages_per = 3;  // quantize, perplexity, verb tense
  const int total = 1 + stages_per * static_cast<int>(schemes.size()) + 1 + (o.gpt2_shaped ? 2 : 0);
  int done = 0;
  const auto stage = [&](const std::string& what) { progress(done++, total, what); };

  stage("corpus and checkpoint");
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  std::vector<int32_t> test = minigpt::encode_split(c.tok, c.corpus.test);
  if (o.ppl_tokens > 0 && o.ppl_tokens < static_cast<int64_t>(test.size())) test.resize(static_cast<size_t>(o.ppl_tokens));
  const minigpt::SplitStats floor = minigpt::split_stats(c.corpus.test);
  std::vector<std::vector<int32_t>> calib;
  {
    const LoadedModel probe = load_checkpoint(o.model, &c.tok);
    if (any_gptq)
      calib = minigpt::calibration_windows(minigpt::encode_split(c.tok, c.corpus.val), o.calibration,
                                           probe.model.config().n_ctx);
  }

  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::unique_ptr<LoadedModel>> kept;  // per row: the configured model, null when it failed
  for (const Parsed& p : schemes) {
    const mq::Scheme& storage = p.options.scheme;
    nlohmann::json r = {{"scheme", p.name}, {"storage_scheme", storage.name()},
                        {"method", p.options.gptq ? "gptq" : (storage.kind == mq::Kind::fp32 ? "none" : "rtn")}};
    const int base = done;
    try {
      stage(p.name + ": quantize");
      auto held = std::make_unique<LoadedModel>(load_checkpoint(o.model, &c.tok));
      LoadedModel& lm = *held;
      const auto tq = std::chrono::steady_clock::now();
      const minigpt::ModelQuantReport rep = quantize(lm.model, p, calib);
      r["quantize_seconds"] = mq::seconds_since(tq);
      if (p.options.gptq) {
        r["gptq"] = gptq_settings_json(p.options, o.calibration);
        r["gptq"]["calibration_seconds"] = rep.calibration_seconds;
      }

      stage(p.name + ": perplexity");
      const int win = lm.model.config().n_ctx;
      const auto ppl = minigpt::perplexity(lm.model, test, win, win / 2);
      r["ppl"] = ppl.ppl;
      r["nats_per_token"] = ppl.nats_per_token;
      r["ppl_floor"] = floor.floor_ppl;
      r["test_tokens"] = ppl.tokens;
      r["perplexity_seconds"] = ppl.seconds;

      stage(p.name + ": verb tense");
      const auto vt = minigpt::verb_tense_accuracy(lm.model, lm.tok, c.corpus.test, o.max_slots);
      r["verb_tense_accuracy"] = vt.overall.accuracy();
      nlohmann::json by;
      for (int k = 0; k < minigpt::kNumConstructions; ++k)
        by[minigpt::construction_name(static_cast<minigpt::Construction>(k))] = score_json(vt.by_kind[k]);
      r["verb_tense"] = {{"overall", score_json(vt.overall)}, {"by_construction", by},
                         {"skipped_unknown_form", vt.skipped_unknown}, {"skipped_too_long", vt.skipped_long}};
      r["verb_tense_seconds"] = vt.seconds;

      r.update(describe(lm.model));
      r["status"] = "ok";
      kept.push_back(std::move(held));
    } catch (const std::exception& e) {
      r["status"] = "failed";
      r["error"] = e.what();
      done = base + stages_per;
      kept.push_back(nullptr);
    }
    rows.push_back(r);
  }
  stage("decode / prefill speed, all schemes in interleaved rounds");
  {
    std::vector<minigpt::Model*> models;
    for (const auto& k : kept) models.push_back(k ? &k->model : nullptr);
    time_models(models, rows, o);
  }
  kept.clear();
  // Ratios against the baseline (the first scheme that succeeded, fp32 in the default list).
  for (const auto& b : rows)
    if (b.value("status", "") == "ok") {
      for (auto& r : rows)
        if (r.value("status", "") == "ok") {
          r["ppl_over_baseline"] = r["ppl"].get<double>() / b["ppl"].get<double>();
          r["decode_speedup"] = r["decode_tokens_per_s"]["median"].get<double>() / b["decode_tokens_per_s"]["median"].get<double>();
          r["prefill_speedup"] =
              r["prefill_tokens_per_s"]["median"].get<double>() / b["prefill_tokens_per_s"]["median"].get<double>();
          r["bytes_ratio"] = r["bytes"].get<double>() / b["bytes"].get<double>();
        }
      break;
    }

  nlohmann::json out = {{"baseline", rows.front().at("scheme")}, {"schemes", rows}};
  mark_pareto(out);

  if (o.gpt2_shaped) {
    // GPT-2-small's body (768 wide, 12 layers, 12 heads, 3072 MLP) with random weights and
    // MiniGPT's vocabulary (GPT-2's 50257-token tied head alone would be 77 MB of fp16 and dominate
    // decode); its fp32 Linears (340 MB) do not fit in any cache.
    const minigpt::ModelConfig gc{.vocab_size = 1963, .n_ctx = 256, .d_model = 768, .n_layer = 12, .n_head = 12, .d_ff = 3072};
    nlohmann::json g = nlohmann::json::array();
    std::vector<std::unique_ptr<minigpt::Model>> gm;
    stage("GPT-2-small-shaped: build and quantize fp32, int8-per-channel, int4-g64, and both +a8");
    for (const std::string name : {"fp32", "int8-per-channel", "int4-g64", "int8-per-channel+a8", "int4-g64+a8"}) {
      nlohmann::json r = {{"scheme", name}};
      try {
        auto m = std::make_unique<minigpt::Model>(gc, o.seed);
        quantize(*m, parse(name), {});
        r.update(describe(*m));
        r["status"] = "ok";
        gm.push_back(std::move(m));
      } catch (const std::exception& e) {
        r["status"] = "failed";
        r["error"] = e.what();
        gm.push_back(nullptr);
      }
      g.push_back(r);
    }
    stage("GPT-2-small-shaped: decode / prefill speed");
    std::vector<minigpt::Model*> models;
    for (const auto& m : gm) models.push_back(m.get());
    time_models(models, g, o);
    out["gpt2_small_shaped"] = {{"config", {{"vocab_size", gc.vocab_size}, {"n_ctx", gc.n_ctx}, {"d_model", gc.d_model},
                                            {"n_layer", gc.n_layer}, {"n_head", gc.n_head}, {"d_ff", gc.d_ff}}},
                                {"weights", "random (GPT-2 initialisation, seed 42)"},
                                {"schemes", g}};
  }
  progress(total, total, "done");
  return {std::move(out), corpus_sha256(c.corpus), hash_hex(c.tok.hash())};
}

}  // namespace mqexp
