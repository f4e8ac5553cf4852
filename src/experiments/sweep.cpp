#include "experiments/sweep.h"

#include "experiments/method_compare.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include <fmt/core.h>

#include "experiments/ceilings.h"
#include "experiments/evaluate.h"
#include "experiments/pareto.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/format.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/calibrate.h"
#include "minigpt/channel_stats.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/throughput.h"

namespace mqexp {
namespace {

minigpt::SpeedOptions speed_options(const minigpt::ModelConfig& c) {
  minigpt::SpeedOptions so;
  so.prompt = c.n_ctx / 2;  // decode runs from half the context to the full context
  so.decode = c.n_ctx / 2;
  so.reps = 1;
  return so;
}

// The cache length at the middle of the timed decode: the traffic of that step is the mean one.
int mean_context(const minigpt::ModelConfig& c) {
  const minigpt::SpeedOptions so = speed_options(c);
  return so.prompt + so.decode / 2;
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

void fail(SchemeRow& r, const std::exception& e) {
  r.ok = false;
  r.error = e.what();
}

}  // namespace

// A row named by its plan, with what the plan's recipes store and how they quantize: the scheme's name,
// or "mixed" when a quant map stores its Linears in several; "none" (nothing quantized), "rtn", "gptq",
// or "mixed" (a map quantizing some Linears by GPTQ and others by round-to-nearest).
SchemeRow row_for(const minigpt::QuantPlan& plan) {
  SchemeRow r;
  r.scheme = plan.id;
  const std::vector<minigpt::LinearRecipe> recipes = plan.recipes();
  const bool one_scheme =
      std::all_of(recipes.begin(), recipes.end(), [&](const minigpt::LinearRecipe& x) { return x.scheme == plan.base.scheme; });
  r.storage_scheme = one_scheme ? plan.base.scheme.name() : "mixed";
  bool gptq = false, rtn = false;
  for (const auto& x : recipes)
    if (!x.keeps_fp32()) (x.gptq ? gptq : rtn) = true;
  r.method = gptq && rtn ? "mixed" : gptq ? "gptq" : rtn ? "rtn" : "none";
  return r;
}

minigpt::ModelConfig gpt2_shape(int vocab_size) {
  return {.vocab_size = vocab_size, .n_ctx = 256, .d_model = 768, .n_layer = 12, .n_head = 12, .d_ff = 3072};
}

const std::vector<std::string>& core_sweep_schemes() {
  static const std::vector<std::string> k = {"fp32",     "fp16",      "int8-per-tensor", "int8-per-channel",
                                             "int4-g64", "int4-g128", "int4-g64-gptq",   "int8-per-channel+a8",
                                             "int4-g64+a8", "int4-g64+bf16",
                                             // the breaking region: where perplexity, KLD and margins move
                                             // (one scale per row at 4 bits; act-order where GPTQ has most to fix)
                                             "int4-per-channel", "int4-per-channel-gptq", "int3-g64", "int3-g64-gptq",
                                             "int3-g64-gptq-act-order", "int2-g64", "int2-g64-gptq",
                                             // GPTQ on the importance-weighted shrink-grid search (issue 39's 2-bit goal)
                                             "int2-g64-imatrix-gptq"};
  return k;
}

const std::vector<std::string>& default_sweep_schemes() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> all = core_sweep_schemes();
    for (const char* s : {// AWQ against RTN and GPTQ at each width (method_compare.h pairs them)
                          "int4-g128-awq", "int4-g128-gptq", "int4-g128-awq-gptq", "int3-g128", "int3-g128-awq",
                          "int3-g128-gptq", "int3-g128-awq-gptq", "int3-g64-awq", "int3-g64-awq-gptq", "int2-g64-awq",
                          "int2-g64-awq-gptq",
                          // SmoothQuant against plain +a8
                          "int8-per-channel-smooth+a8", "int4-g64-smooth+a8"})
      all.push_back(s);
    return all;
  }();
  return k;
}

std::vector<std::string> expand_scheme_sets(const std::vector<std::string>& names) {
  static const std::vector<std::string> lab02 = {"fp32", "fp16", "int8-per-tensor", "int8-per-channel", "int4-g64", "int4-g128", "int4-g64-gptq"};
  std::vector<std::string> out;
  for (const auto& n : names) {
    const std::vector<std::string>* set = n == "lab02" ? &lab02 : n == "default" ? &default_sweep_schemes() : nullptr;
    if (set) out.insert(out.end(), set->begin(), set->end());
    else out.push_back(n);
  }
  return out;
}

Footprint describe(const minigpt::Model& m, int context) {
  const auto& c = m.config();
  Footprint f;
  for (const auto& li : m.linears()) {
    f.bytes_linear += m.projection(li.name).weight_bytes();
    f.linear_weights += static_cast<long long>(li.in) * li.out;
  }
  f.bytes_embedding = m.embedding().bytes();
  // Everything else stays fp32: biases, LayerNorms, position embeddings.
  f.bytes_other =
      4LL * (static_cast<long long>(m.layout().total()) - f.linear_weights - static_cast<long long>(c.vocab_size) * c.d_model);
  f.bytes = f.bytes_linear + f.bytes_embedding + f.bytes_other;
  f.bits_per_weight = 8.0 * static_cast<double>(f.bytes_linear) / static_cast<double>(f.linear_weights);
  f.embedding_format = m.embedding().format_name();
  const minigpt::DecodeTraffic tr = minigpt::decode_traffic(m, context);
  f.decode = {context,        tr.flops,         tr.weight_bytes, tr.embedding_bytes, tr.other_param_bytes,
              tr.activation_bytes, tr.kv_bytes, tr.total_bytes(), tr.intensity()};
  return f;
}

// The arithmetic a configured model's decode runs, as named in ceilings.json's "datatype": Linears that
// run `+a8` multiply int8 codes by int8 activations (vpdpbusd, 512-bit where the machine has it), the
// others widen their weights to fp32 and run FMAs. A dot is judged against the peak of what it
// executes; a quant map whose Linears run both is judged against the int8 peak, so the bound stays an
// upper bound (the mix runs no faster than its fastest arithmetic), as a +a8 row's fp32 attention and
// LM head already are.
static std::string arithmetic_of(const minigpt::Model& m, const nlohmann::json& ceilings) {
  const std::vector<minigpt::LinearInfo> lin = m.linears();
  if (std::none_of(lin.begin(), lin.end(), [&](const minigpt::LinearInfo& li) { return m.projection(li.name).int8_activations(); }))
    return "fp32";
  for (const char* dt : {"int8", "int8-ymm"})
    for (const auto& c : ceilings.at("ceilings"))
      if (c.at("kind") == "compute" && c.value("datatype", "") == dt) return dt;
  // No VNNI probe ran on this machine: the AVX2 (vpmaddubsw) or portable path is judged against the fp32 FMA
  // peak, an approximate compute ceiling (no AVX2 int8 probe exists); decode sits under a bandwidth line anyway.
  return "fp32";
}

// Decode and prefill speed of several configured models, timed in interleaved rounds (one repetition of
// each model per round, after one warm-up each in the first), so a slow spell of a shared machine
// spreads over all of them instead of penalising whichever ran then.
void time_models(const std::vector<minigpt::Model*>& models, std::vector<SchemeRow>& rows, const SweepOptions& o) {
  std::vector<size_t> live;
  for (size_t i = 0; i < models.size(); ++i)
    if (models[i]) live.push_back(i);
  const int threads = omp_get_max_threads();
  const mq::LoadAverage before = mq::load_average();
  std::vector<std::vector<double>> dec(models.size()), pre(models.size());
  for (int round = 0; round < o.speed_reps; ++round)
    for (size_t i : live) {
      minigpt::SpeedOptions so = speed_options(models[i]->config());
      so.warmup = round == 0;  // later rounds start warm: the model ran a round ago
      const minigpt::Speed sp = minigpt::measure_speed(*models[i], so);
      dec[i].push_back(sp.decode.median);
      pre[i].push_back(sp.prefill.median);
    }
  const mq::LoadAverage after = mq::load_average();
  // Our own timing threads count towards the load; more than the cores' worth on top of them is other work.
  const double limit = static_cast<double>(mq::cpu_info().logical_cpus) + 0.5;
  for (size_t i : live) {
    Speed s;
    const minigpt::SpeedOptions so = speed_options(models[i]->config());
    const mq::Timing d = mq::summarize(dec[i], 1), p = mq::summarize(pre[i], 1);
    const double tps = 1.0 / d.median;
    const Traffic& t = rows[i].footprint.decode;
    s.threads = threads;
    s.decode_tokens_per_s = RateStat::of(d, 1.0);
    s.prefill_tokens_per_s = RateStat::of(p, so.prompt);
    s.decode_tokens_per_rep = so.decode;
    s.prefill_prompt_tokens = so.prompt;
    s.decode_gflops = t.flops * tps / 1e9;
    s.decode_gbps = t.total * tps / 1e9;
    s.load_before = before.one;
    s.load_after = after.one;
    s.busy = mq::machine_busy(before, limit) || mq::machine_busy(after, limit);
    if (!o.ceilings.is_null()) {
      const Bound b = roofline_bound(o.ceilings, t.flops / t.total, t.total, threads, arithmetic_of(*models[i], o.ceilings));
      s.roofline = RooflinePoint{b.ceiling, b.level, b.attainable / 1e9, t.flops * tps / b.attainable, b.bandwidth / 1e9};
    }
    rows[i].speed = s;
  }
}

void mark_pareto(std::vector<SchemeRow>& rows) {
  std::vector<std::pair<double, double>> xy;
  for (const auto& r : rows)
    xy.emplace_back(r.ok && r.quality ? static_cast<double>(r.footprint.bytes) : NAN, r.ok && r.quality ? r.quality->ppl : NAN);
  const std::vector<bool> on = pareto_frontier(xy);
  for (size_t i = 0; i < on.size(); ++i) rows[i].on_pareto_frontier = on[i];
}

void compare(SweepResults& res) {
  const auto base = std::find_if(res.schemes.begin(), res.schemes.end(), [](const SchemeRow& r) { return r.ok; });
  if (base != res.schemes.end()) {
    res.baseline = base->scheme;
    for (auto& r : res.schemes)
      if (r.ok)
        r.vs_baseline = Comparison{
            r.quality->ppl / base->quality->ppl,
            r.speed->decode_tokens_per_s.median / base->speed->decode_tokens_per_s.median,
            r.speed->prefill_tokens_per_s.median / base->speed->prefill_tokens_per_s.median,
            static_cast<double>(r.footprint.bytes) / static_cast<double>(base->footprint.bytes)};
  } else if (!res.schemes.empty()) {
    res.baseline = res.schemes.front().scheme;
  }
  mark_pareto(res.schemes);
}

std::vector<minigpt::QuantPlan> sweep_plans(const SweepOptions& o) {
  std::vector<minigpt::QuantPlan> plans;
  for (const auto& n : o.schemes) {
    plans.push_back(minigpt::QuantPlan::uniform(n));
    plans.back().gptq.calibration_windows = o.calibration;
  }
  plans.insert(plans.end(), o.quant_maps.begin(), o.quant_maps.end());
  if (plans.empty()) throw mq::UsageError("sweep: no schemes");
  std::set<std::string> names;
  for (const auto& p : plans)
    if (!names.insert(p.id).second)
      throw mq::UsageError(fmt::format("sweep: two rows are named '{}' (a scheme given twice, or a quant map's config_id "
                                       "that is already a row); rows need unique names",
                                       mq::clip_text(p.id)));
  return plans;
}

SweepRun run_sweep(const SweepOptions& o, const SweepProgress& progress) {
  const std::vector<minigpt::QuantPlan> plans = sweep_plans(o);

  const int stages_per = 2;  // quantize, evaluate
  const int total = 1 + stages_per * static_cast<int>(plans.size()) + 2 + (o.gpt2_shaped ? 2 : 0);
  int done = 0;
  const auto stage = [&](const std::string& what) { progress(done++, total, what); };

  stage("corpus and checkpoint");
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  // Perplexity comes from the divergence pass after the loop (the same numbers, one pass for all rows).
  const EvalLimits limits{.ppl_tokens = o.ppl_tokens, .max_slots = o.max_slots, .perplexity = false, .max_items = o.max_items};

  SweepResults res;
  res.seed = o.seed;
  res.calibration_windows = o.calibration;
  res.baselines = baseline_rows(minigpt::rule_baselines(c.lex, c.corpus.train, c.corpus.test, o.max_slots));
  // Evaluate: quantize every scheme, its quality and bytes. The configured models are kept for timing.
  std::vector<std::unique_ptr<LoadedModel>> kept;  // per row; null when it failed
  std::vector<ItemScores> margins;                 // per row: slot margins and benchmark answers, for pairing with fp32
  for (const minigpt::QuantPlan& plan : plans) {
    margins.emplace_back();
    SchemeRow r = row_for(plan);
    const int base = done;
    try {
      stage(plan.id + ": quantize");
      auto lm = std::make_unique<LoadedModel>(load_checkpoint(o.model, &c.tok));
      const auto calib = calibration_for(plan, c, lm->model.config().n_ctx);
      const mq::Stopwatch tq;
      const minigpt::ModelQuantReport rep = minigpt::quantize_model(lm->model, plan, calib);
      r.quantize_seconds = tq.seconds();
      if (plan.any_gptq())
        r.gptq = GptqRecord{plan.gptq.calibration_windows, plan.gptq.options.percdamp, plan.gptq.options.block,
                            plan.gptq.options.act_order, plan.gptq.sequential, rep.calibration_seconds};
      stage(plan.id + ": verb tense");  // perplexity: in the divergence pass below
      r.quality = evaluate_quality(lm->model, lm->tok, c, limits, &margins.back());
      r.footprint = describe(lm->model, mean_context(lm->model.config()));
      r.ok = true;
      kept.push_back(std::move(lm));
    } catch (const std::exception& e) {
      fail(r, e);
      done = base + stages_per;
      kept.push_back(nullptr);
    }
    res.schemes.push_back(std::move(r));
  }
  // Divergence against fp32 (and every row's perplexity): the fp32 row is the reference when it ran,
  // else the checkpoint unquantized; its logits are computed once per window for all rows.
  stage("perplexity and divergence against fp32, all schemes in one pass");
  {
    const auto is_fp32 = [&](size_t i) { return kept[i] && plans[i].is_identity(); };
    size_t ref_row = kept.size();
    for (size_t i = 0; i < kept.size() && ref_row == kept.size(); ++i)
      if (is_fp32(i)) ref_row = i;
    std::unique_ptr<LoadedModel> own_ref;
    ItemScores own_margins;
    if (ref_row == kept.size()) {
      own_ref = std::make_unique<LoadedModel>(load_checkpoint(o.model, &c.tok));
      (void)evaluate_quality(own_ref->model, own_ref->tok, c, limits, &own_margins);
    }
    const minigpt::Model& ref = own_ref ? own_ref->model : kept[ref_row]->model;
    const ItemScores& ref_margins = own_ref ? own_margins : margins[ref_row];
    std::vector<Evaluated> ev;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i]) ev.push_back({&kept[i]->model, &*res.schemes[i].quality, &margins[i]});
    evaluate_divergence(ref, own_ref ? "fp32" : res.schemes[ref_row].scheme, &ref_margins, ev, c.tok, c, limits);
  }
  // While every row's window KLs from that one pass are in memory: transforms against their baselines.
  res.method_comparisons = compare_methods(res.schemes);
  if (!res.method_comparisons.empty()) {
    LoadedModel fp = load_checkpoint(o.model, &c.tok);
    const auto windows = minigpt::calibration_windows(minigpt::encode_split(c.tok, c.corpus.val), o.calibration, fp.model.config().n_ctx);
    for (const auto& [name, st] : minigpt::collect_channel_stats(fp.model, windows)) res.activation_outliers[name] = st.outlier_ratio();
  }
  // Time: every configured model in the same interleaved rounds.
  stage("decode / prefill speed, all schemes in interleaved rounds");
  {
    std::vector<minigpt::Model*> models;
    for (const auto& k : kept) models.push_back(k ? &k->model : nullptr);
    time_models(models, res.schemes, o);
  }
  kept.clear();
  compare(res);

  if (o.gpt2_shaped) {
    const minigpt::ModelConfig gc = gpt2_shape(c.tok.size());
    std::vector<std::unique_ptr<minigpt::Model>> gm;
    stage("GPT-2-small-shaped: build and quantize fp32, int8-per-channel, int4-g64, both +a8, and int4-g64+bf16");
    for (const std::string name : {"fp32", "int8-per-channel", "int4-g64", "int8-per-channel+a8", "int4-g64+a8", "int4-g64+bf16"}) {
      const minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(name);
      SchemeRow r = row_for(plan);
      try {
        auto m = std::make_unique<minigpt::Model>(gc, o.seed);
        const mq::Stopwatch tq;
        minigpt::quantize_model(*m, plan);
        r.quantize_seconds = tq.seconds();
        r.footprint = describe(*m, mean_context(gc));
        r.ok = true;
        gm.push_back(std::move(m));
      } catch (const std::exception& e) {
        fail(r, e);
        gm.push_back(nullptr);
      }
      res.gpt2_schemes.push_back(std::move(r));
    }
    stage("GPT-2-small-shaped: decode / prefill speed");
    std::vector<minigpt::Model*> models;
    for (const auto& m : gm) models.push_back(m.get());
    time_models(models, res.gpt2_schemes, o);
    res.gpt2_config = ModelShape{gc.vocab_size, gc.n_ctx, gc.d_model, gc.n_layer, gc.n_head, gc.d_ff};
    res.gpt2_weights = fmt::format("random (GPT-2 initialisation, seed {})", o.seed);
  }
  progress(total, total, "done");
  return {std::move(res), corpus_sha256(c.corpus), hash_hex(c.tok.hash())};
}

}  // namespace mqexp
