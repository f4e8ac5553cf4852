// Grader of lab 02 (the Pareto curve): the learner's frontier and decode traffic against the
// library's, then the learner's sweep output folder (seven schemes on one eval split, the bars of the
// handout, the three figures) and the answers to the four questions.
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/pareto.h"
#include "experiments/results.h"
#include "lab02.h"
#include "labs/grade.h"
#include "labs/workbench.h"
#include "miniquant/error.h"
#include "miniquant/random.h"
#include "miniquant/util/io.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

namespace mqlab {
namespace {

const std::vector<std::string> kSeven = {"fp32",     "fp16",      "int8-per-tensor", "int8-per-channel",
                                         "int4-g64", "int4-g128", "int4-g64-gptq"};

std::string flags(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += b ? '1' : '0';
  return s;
}

void block_a(Checks& c, const mqexp::SweepResults* committed) {
  mq::Rng rng(42);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<std::pair<double, double>>> sets = {
      {},
      {{1, 1}},
      {{1, 2}, {1, 2}},                  // duplicates: neither dominates the other
      {{1, 3}, {2, 2}, {3, 1}, {2, 3}},  // (2,3) dominated by (1,3) and (2,2)
      {{1, 1}, {1, 2}, {2, 1}},          // ties on one axis: strictly worse on the other
      {{nan, 1}, {1, nan}, {5, 5}, {inf, 0}},  // failed schemes never dominate
  };
  for (int k = 0; k < 50; ++k) {
    std::vector<std::pair<double, double>> s;
    const int n = 2 + static_cast<int>(rng.below(15));
    for (int i = 0; i < n; ++i) s.emplace_back(static_cast<double>(rng.below(6)), static_cast<double>(rng.below(6)));
    sets.push_back(s);
  }
  std::string first;
  for (const auto& s : sets) {
    const auto want = mqexp::pareto_frontier(s), got = lab::pareto_frontier(s);
    if (got != want && first.empty()) {
      std::string pts;
      for (const auto& [x, y] : s) pts += fmt::format("({:g}, {:g}) ", x, y);
      first = fmt::format("points {}: {} (library {})", pts, flags(got), flags(want));
    }
  }
  c.expect(first.empty(), fmt::format("{} point sets: duplicates, ties, NaN / Inf, random grids", sets.size()),
           "flags equal to mqexp::pareto_frontier", first.empty() ? "all equal" : first);
  if (committed) {
    std::vector<std::pair<double, double>> xy;
    std::vector<bool> stored;
    for (const auto& r : committed->schemes) {
      const bool ok = r.ok && r.quality;
      xy.emplace_back(ok ? static_cast<double>(r.footprint.bytes) : NAN, ok ? r.quality->ppl : NAN);
      stored.push_back(r.on_pareto_frontier);
    }
    const auto got = lab::pareto_frontier(xy);
    c.expect(got == stored, "the committed sweep (experiments/26-quant-curve): model bytes vs perplexity",
             "its on_pareto_frontier flags " + flags(stored), flags(got));
  }
}

void block_b(Checks& c, const LabOptions& o) {
  const Workbench wb = load_workbench(o);
  for (const char* scheme : {"fp32", "int8-per-channel", "int4-g64"}) {
    minigpt::Model m = wb.fresh();
    minigpt::quantize_model(m, minigpt::QuantPlan::uniform(scheme));
    for (int ctx : {0, 96, m.config().n_ctx - 1}) {
      const minigpt::DecodeTraffic want = minigpt::decode_traffic(m, ctx), got = lab::decode_traffic(m, ctx);
      const std::vector<std::tuple<const char*, double, double>> terms = {
          {"flops", got.flops, want.flops},
          {"weights", got.weight_bytes, want.weight_bytes},
          {"embedding", got.embedding_bytes, want.embedding_bytes},
          {"other params", got.other_param_bytes, want.other_param_bytes},
          {"activations", got.activation_bytes, want.activation_bytes},
          {"KV cache", got.kv_bytes, want.kv_bytes}};
      std::string bad;
      for (const auto& [name, g, w] : terms)
        if (std::fabs(g - w) > 1e-9 * std::fabs(w) && bad.empty()) bad = fmt::format("{} {:.0f} (library {:.0f})", name, g, w);
      c.expect(bad.empty(), fmt::format("MiniGPT {} at context {}", scheme, ctx), "every term equal to minigpt::decode_traffic",
               bad.empty() ? fmt::format("{:.0f} bytes, {:.3f} FLOP/byte", got.total_bytes(), got.intensity()) : bad);
    }
  }
}

void block_c(Checks& c, const std::string& dir) {
  const std::string path = dir + "/results.json";
  if (!std::filesystem::exists(path))
    throw std::runtime_error(fmt::format("lab 02 block C: not implemented yet: no sweep output at {} (run `miniquant sweep "
                                         "--out {}`)", path, dir));
  const mqexp::SweepResults res = mqexp::sweep_results_from_json(mqexp::read_json(path), path);
  std::string missing;
  long long tokens = -1;
  bool same_split = true, fp16_embedding = true;
  for (const std::string& s : kSeven) {
    const mqexp::SchemeRow* r = res.find(s);
    if (!r || !r->quality) {
      missing += (missing.empty() ? "" : ", ") + s;
      continue;
    }
    if (tokens < 0) tokens = r->quality->test_tokens;
    same_split = same_split && r->quality->test_tokens == tokens;
    if (s != "fp32") fp16_embedding = fp16_embedding && r->footprint.embedding_format == "fp16";
  }
  c.expect(missing.empty(), "the seven schemes measured", "fp32, fp16, int8-per-tensor, int8-per-channel, int4-g64, int4-g128, int4-g64-gptq",
           missing.empty() ? "all seven ok" : "missing or failed: " + missing);
  if (!missing.empty()) return;
  c.expect(same_split, "one eval split", "every row scored on the same test tokens",
           same_split ? fmt::format("{} tokens each", tokens) : "rows differ");
  c.expect(fp16_embedding, "embedding storage", "fp16 in every quantized row", fp16_embedding ? "fp16" : "not fp16 everywhere");
  const auto& fp = *res.find("fp32");
  const auto& gq = *res.find("int4-g64-gptq");
  const auto& g64 = *res.find("int4-g64");
  const double gap = gq.quality->ppl / fp.quality->ppl - 1.0;
  c.bar(std::fabs(gap) < 0.15, "INT4 g64 + GPTQ perplexity gap to FP32", "under 15% (two-sided)",
        fmt::format("{:.3f} vs {:.3f} ({})", gq.quality->ppl, fp.quality->ppl, pct(gap, 2)));
  c.bar(g64.footprint.bits_per_weight == 4.25, "INT4 g64 bits per Linear weight", "4.25 (4 code bits + a 16-bit scale per 64)",
        fmt::format("{:g}", g64.footprint.bits_per_weight));
  std::vector<std::pair<double, double>> xy;
  std::vector<bool> stored;
  std::string names;
  for (const auto& r : res.schemes) {
    const bool ok = r.ok && r.quality;
    xy.emplace_back(ok ? static_cast<double>(r.footprint.bytes) : NAN, ok ? r.quality->ppl : NAN);
    stored.push_back(r.on_pareto_frontier);
    if (r.on_pareto_frontier) names += (names.empty() ? "" : ", ") + r.scheme;
  }
  const auto want = mqexp::pareto_frontier(xy);
  const long on = std::count(stored.begin(), stored.end(), true);
  c.bar(stored == want && on >= 2, "Pareto frontier (model bytes vs PPL)", "present (>= 2 schemes), flags as the data says",
        on ? names : "no scheme flagged");
  const double ratio = g64.footprint.decode.intensity / fp.footprint.decode.intensity;
  const bool terms = g64.footprint.decode.activations > 0 && g64.footprint.decode.kv_cache > 0;
  c.bar(ratio >= 2.0 && ratio <= 8.0 && terms, "roofline overlay: INT4 g64 decode intensity / FP32's",
        "between 2x and 8x, traffic counting activations and the KV cache",
        fmt::format("{:.3f} vs {:.3f} FLOP/byte = {:.2f}x{}", g64.footprint.decode.intensity, fp.footprint.decode.intensity,
                    ratio, terms ? "" : " (activations or KV cache missing)"));
  for (const char* fig : {"pareto.png", "verb_tense_accuracy.png", "roofline_overlay.png"}) {
    const std::string p = dir + "/" + fig;
    std::string head;
    try {
      head = mq::read_file(p).substr(0, 8);
    } catch (const mq::Error&) {
    }
    const bool png = head == std::string("\x89PNG\r\n\x1a\n", 8);
    c.expect(png, std::string("figure ") + fig, "a PNG drawn by experiments/plot/", png ? "present" : "missing or not a PNG");
  }
}

// The text under "## N." headings, N = 1..4.
std::map<int, std::string> answers_of(const std::string& text) {
  std::map<int, std::string> out;
  std::istringstream in(text);
  std::string line;
  int current = 0;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      current = 0;
      if (line.size() > 4 && line.rfind("## ", 0) == 0 && line[3] >= '1' && line[3] <= '4' && line[4] == '.') current = line[3] - '0';
      continue;
    }
    if (current) out[current] += line + "\n";
  }
  return out;
}

void block_d(Checks& c, const std::string& path) {
  const std::map<int, std::string> a = answers_of(mq::read_file(path));
  for (int q = 1; q <= 4; ++q) {
    const std::string t = a.count(q) ? a.at(q) : "";
    if (t.find("TODO") != std::string::npos)
      throw std::runtime_error(fmt::format("lab 02 block D: not implemented yet: answer {} in {} still says TODO", q, path));
    std::istringstream words(t);
    std::string w;
    int n = 0;
    while (words >> w) ++n;
    const bool digit = t.find_first_of("0123456789") != std::string::npos;
    c.expect(n >= 25 && digit, fmt::format("answer {}", q), "at least 25 words, with the numbers you measured",
             fmt::format("{} words{}", n, digit ? ", numbers cited" : ", no number"));
  }
}

Lab make(const LabOptions& o) {
  const std::string sweep = o.sweep_dir.empty() ? o.root + "/labs/02-pareto-curve/sweep" : o.sweep_dir;
  const std::string answers = o.answers.empty() ? o.root + "/labs/02-pareto-curve/answers.md" : o.answers;
  const std::string committed = o.root + "/experiments/26-quant-curve/results.json";
  Lab lab{"02", "the quantization Pareto curve", "labs/02-pareto-curve/pareto.cpp (+ your sweep, answers.md)", {}};
  lab.blocks = {
      {"A", "pareto_frontier: the lower-left frontier",
       [committed](Checks& c) {
         const mqexp::SweepResults res = mqexp::sweep_results_from_json(mqexp::read_json(committed), committed);
         block_a(c, &res);
       },
       {}},
      {"B", "decode_traffic: one decode step, term by term", [o](Checks& c) { block_b(c, o); }, {}},
      {"C", "the sweep: " + sweep, [sweep](Checks& c) { block_c(c, sweep); },
       {"INT4 g64 + GPTQ perplexity gap to FP32 under 15%", "INT4 g64 bits per Linear weight 4.25",
        "Pareto frontier present", "roofline overlay: INT4 g64 decode intensity 2x-8x FP32's"}},
      {"D", "the four questions: " + answers, [answers](Checks& c) { block_d(c, answers); }, {}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv); }
