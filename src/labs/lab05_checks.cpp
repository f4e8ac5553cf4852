// Grader of lab 05 (per-layer mixed precision): the learner's quant-map parser against QuantPlan::from_json on
// good maps (rules, order, defaults) and bad ones (one clear mq::UsageError each), the KL divergence and each
// Linear's sensitivity inside the shipped MiniGPT against mqexp::linear_sensitivity, the multiple-choice
// knapsack against brute force and mqexp::allocation_frontier (with a deadline: an exhaustive search over 16
// Linears never ends), EPI and its frontier on paired rounds against mqexp::epi_frontier, and the learner's own
// `miniquant mixed` run with the answers, whose numbers are looked up in its results.json.
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/sensitivity.h"
#include "lab05.h"
#include "labs/answers.h"
#include "labs/grade.h"
#include "labs/ownership.h"
#include "labs/workbench.h"
#include "miniquant/error.h"
#include "miniquant/format.h"
#include "miniquant/random.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/calibrate.h"

namespace mqlab {
namespace {

using nlohmann::json;

// ---- block A: the quant-map parser ----------------------------------------------------------------------

const char* const kGood[] = {
    R"({"config_id": "a", "default": "int4-g64"})",
    R"({"config_id": "protect-early", "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "int8-per-channel"}],
        "tensors": [{"match": "mlp_down", "quant": "int4-g128-asym"}], "gptq": {"calibration_windows": 128}})",
    // A tensor kind beats a layer group; of two matching tensor rules the later wins.
    R"({"config_id": "overlap", "default": "int3-g64-gptq", "layer_groups": [{"layers": [0, 1], "quant": "int8-per-channel"},
        {"layers": [3], "quant": "fp16"}], "tensors": [{"match": "qkv", "quant": "int4-g64+a8"},
        {"match": "qkv", "layers": [1], "quant": "int2-g64"}, {"match": "mlp_up", "layers": [0, 3], "quant": "int8-per-channel-gptq"}]})",
    R"({"config_id": "emb", "default": "int8-per-channel", "embedding": "fp32"})",
    R"({"config_id": "identity", "default": "fp32"})",
    R"({"config_id": "identity2", "default": "fp32", "tensors": [{"match": "attn_out", "quant": "fp32"}]})",
    R"({"config_id": "one-int8", "default": "fp32", "layer_groups": [{"layers": [2], "quant": "int8-per-channel"}]})",
    R"({"config_id": "g", "default": "int4-g64-gptq", "gptq": {"calibration_windows": 32, "percdamp": 0.05, "block": 64,
        "act_order": true, "sequential": false}})",
    R"({"config_id": "bf", "default": "int4-g64+bf16", "tensors": [{"match": "attn_out", "quant": "fp16"}]})",
    R"({"config_id": "far", "default": "int4-g64", "layer_groups": [{"layers": [7], "quant": "int8-per-channel"}]})",
    R"({"config_id": "empty-lists", "default": "int4-g64", "layer_groups": [], "tensors": []})",
};

struct Bad {
  const char* why;
  const char* map;
};
const Bad kBad[] = {
    {"not an object", R"([])"},
    {"no config_id", R"({"default": "int4-g64"})"},
    {"no default", R"({"config_id": "x"})"},
    {"config_id a number", R"({"config_id": 5, "default": "int4-g64"})"},
    {"an unknown scheme", R"({"config_id": "x", "default": "int5-g64"})"},
    {"an unknown key", R"({"config_id": "x", "default": "int4-g64", "colour": "red"})"},
    {"layer_groups not an array", R"({"config_id": "x", "default": "int4-g64", "layer_groups": {"layers": [0], "quant": "fp16"}})"},
    {"a group without layers", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"quant": "fp16"}]})"},
    {"a group with no layer", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [], "quant": "fp16"}]})"},
    {"layers not an array", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": 0, "quant": "fp16"}]})"},
    {"layer 2.5", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [2.5], "quant": "fp16"}]})"},
    {"layer 4294967296", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [4294967296], "quant": "fp16"}]})"},
    {"layer -1", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [-1], "quant": "fp16"}]})"},
    {"a layer in two groups", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "fp16"},
        {"layers": [1, 0], "quant": "int8-per-channel"}]})"},
    {"a group with a match key", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "fp16", "match": "qkv"}]})"},
    {"an unknown tensor kind", R"({"config_id": "x", "default": "int4-g64", "tensors": [{"match": "mlp_gate", "quant": "fp16"}]})"},
    {"int8 activations on fp16", R"({"config_id": "x", "default": "int4-g64", "tensors": [{"match": "qkv", "quant": "fp16+a8"}]})"},
    {"a tensor rule without quant", R"({"config_id": "x", "default": "int4-g64", "tensors": [{"match": "qkv"}]})"},
    {"an int8 embedding", R"({"config_id": "x", "default": "int4-g64", "embedding": "int8-per-channel"})"},
    {"an unknown gptq key", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"damp": 0.1}})"},
    {"a negative percdamp", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"percdamp": -0.5}})"},
    {"percdamp as text", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"percdamp": "0.01"}})"},
    {"0 calibration windows", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"calibration_windows": 0}})"},
    {"bf16 activations on fp32", R"({"config_id": "x", "default": "fp32+bf16"})"},
    {"GPTQ on fp16", R"({"config_id": "x", "default": "fp16-gptq"})"},
    // Gaps the learner run of issue 41 found: each passed undetected when a learner's parser accepted it.
    {"a config_id that is a path", R"({"config_id": "../x", "default": "int4-g64"})"},
    {"a layer group with no layers", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [], "quant": "int8-per-channel"}]})"},
    {"a tensors rule with an empty layer list", R"({"config_id": "x", "default": "int4-g64", "tensors": [{"match": "qkv", "layers": [], "quant": "int8-per-channel"}]})"},
    // Gaps the learner run of issue 57 found: the handout states these rules, no bad map held a learner to them.
    {"a percdamp of 0", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"percdamp": 0}})"},
    {"act_order as 1", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"act_order": 1}})"},
    {"sequential as 0", R"({"config_id": "x", "default": "int4-g64-gptq", "gptq": {"sequential": 0}})"},
};

void block_a(Checks& c) {
  const std::string where = "map.json";
  std::string first;
  int n = 0;
  for (const char* text : kGood) {
    const json j = json::parse(text);
    const minigpt::QuantPlan want = minigpt::QuantPlan::from_json(j, where);
    std::string d;
    try {
      const minigpt::QuantPlan got = lab::quant_map_from_json(j, where);
      if (got.to_json() != want.to_json()) d = fmt::format("the plan {} (library {})", got.to_json().dump(), want.to_json().dump());
      for (int l = 0; l < 8 && d.empty(); ++l)
        for (int k = 0; k < minigpt::kLinearKinds && d.empty(); ++k) {
          const auto kind = static_cast<minigpt::LinearKind>(k);
          const std::string w = want.recipe_for(l, kind).name(), g1 = lab::recipe_for(got, l, kind).name(),
                            g2 = lab::recipe_for(want, l, kind).name();
          if (g1 != w || g2 != w)
            d = fmt::format("layer {} {}: recipe_for gives {} (on the library's plan {}), library {}", l, minigpt::linear_kind_name(kind), g1, g2, w);
        }
    } catch (const std::exception& e) {
      d = std::string("threw: ") + e.what();
    }
    ++n;
    if (!d.empty() && first.empty()) first = fmt::format("map {}: {}", want.id, d);
  }
  c.expect(first.empty(), fmt::format("{} valid maps: groups, tensor kinds, overlaps, embedding and gptq defaults", n),
           "the plan (its JSON) and every Linear's recipe for layers 0-7 equal to QuantPlan::from_json's and recipe_for's",
           first.empty() ? "all equal" : first);
  std::string bad;
  int caught = 0;
  for (const Bad& b : kBad) {
    std::string got;
    try {
      (void)lab::quant_map_from_json(json::parse(b.map), where);
      got = "accepted";
    } catch (const mq::UsageError& e) {
      const std::string msg = e.what();
      if (msg.rfind(where, 0) != 0 || msg.find('\n') != std::string::npos) got = "mq::UsageError, but not one line starting with map.json: " + msg;
    } catch (const std::exception& e) {
      got = std::string("another exception: ") + e.what();
    }
    if (got.empty()) ++caught;
    else if (bad.empty()) bad = fmt::format("{}: {}", b.why, got);
  }
  c.expect(bad.empty(), fmt::format("{} bad maps (missing keys, wrong types, unknown kinds and schemes, overlapping groups, ...)",
                                    std::size(kBad)),
           "mq::UsageError for each, one line starting with the map's name", bad.empty() ? fmt::format("{} refused", caught) : bad);
}

// ---- block B: KL and sensitivity -----------------------------------------------------------------------

void block_b(Checks& c, const LabOptions& o) {
  mq::Rng rng(42);
  const int V = 1963;
  std::vector<float> p(V), q(V);
  std::string first;
  double worst = 0;
  for (int k = 0; k < 40; ++k) {
    const double scale = k < 10 ? 1.0 : k < 30 ? 8.0 : 900.0;  // logits up to +-1000: exp() overflows without the max
    for (int i = 0; i < V; ++i) {
      p[static_cast<size_t>(i)] = static_cast<float>(rng.normal() * scale);
      q[static_cast<size_t>(i)] = k % 7 == 0 ? p[static_cast<size_t>(i)] : static_cast<float>(p[static_cast<size_t>(i)] + rng.normal() * scale * 0.2);
    }
    const double want = mqexp::kl_of_logits(p.data(), q.data(), V), got = lab::kl_divergence(p.data(), q.data(), V);
    const double err = std::fabs(got - want) / std::max(want, 1e-3);
    worst = std::max(worst, std::isfinite(got) ? err : INFINITY);
    if (!(err <= 1e-9) && first.empty()) first = fmt::format("row pair {} (logits ~{:g}): {:.12g} (library {:.12g})", k, scale, got, want);
  }
  c.expect(first.empty(), "KL of 40 pairs of 1963-logit rows (scales 1 to 900, identical pairs among them)",
           "equal to the library's log-softmax KL in double (1e-9)", first.empty() ? fmt::format("worst {:.1e}", worst) : first);

  const Workbench wb = load_workbench(o);
  std::vector<std::vector<int32_t>> windows;
  // Windows of unequal length: the mean is over every position, not the mean of the windows' means.
  for (const auto& [at, len] : std::vector<std::pair<int, int>>{{0, 64}, {64, 24}, {88, 40}})
    windows.emplace_back(wb.val.begin() + at, wb.val.begin() + at + len);
  const auto fresh = [&wb] { return wb.fresh(); };
  const std::vector<double> want = mqexp::linear_sensitivity(fresh, windows, "int2-g64");
  const std::vector<double> got = lab::linear_sensitivity(fresh, windows, "int2-g64");
  double mx = 0;
  for (double v : want) mx = std::max(mx, std::fabs(v));
  std::string d = got.size() == want.size() ? "" : fmt::format("{} values (library {}, one per Linear)", got.size(), want.size());
  const std::vector<minigpt::LinearInfo> lin = wb.fresh().linears();
  for (size_t i = 0; i < want.size() && d.empty(); ++i)
    // Tight: the all-fp16 base's own KL (~4e-8 nats here) is 5e-7 of the largest, and a base left in fp32 must show.
    if (!(std::fabs(got[i] - want[i]) <= 1e-9 * mx)) d = fmt::format("{}: {:.12g} (library {:.12g})", lin[i].name, got[i], want[i]);
  c.expect(d.empty(), "each of the 16 Linears alone in int2-g64 (the rest fp16), 3 windows of 64, 24 and 40 validation tokens",
           "its KL increase over the all-fp16 model equal to mqexp::linear_sensitivity's (1e-9 of the largest)",
           d.empty() ? fmt::format("all equal; largest {:.4g} nats", mx) : d);
  if (d.empty()) {
    size_t a = 0, b = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (got[i] > got[a]) a = i;
      if (want[i] > want[b]) b = i;
    }
    c.bar(a == b, "the most sensitive Linear in int2-g64", "the library's: " + lin[b].name, fmt::format("{} ({:.4g} nats)", lin[a].name, got[a]));
  }
}

// ---- block C: the knapsack -------------------------------------------------------------------------------

std::string check_allocation(const std::vector<mqexp::AllocItem>& items, const mqexp::Allocation& a) {
  if (a.choice.size() != items.size()) return fmt::format("{} choices for {} items", a.choice.size(), items.size());
  long long bytes = 0;
  double cost = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (a.choice[i] < 0 || a.choice[i] >= static_cast<int>(items[i].options.size())) return fmt::format("item {}: option {} does not exist", i, a.choice[i]);
    bytes += items[i].options[static_cast<size_t>(a.choice[i])].bytes;
    cost += items[i].options[static_cast<size_t>(a.choice[i])].cost;
  }
  if (bytes != a.bytes || std::fabs(cost - a.cost) > 1e-9 * std::max(1.0, std::fabs(cost)))
    return fmt::format("its choices add up to {} bytes, cost {:.9g}, not the {} bytes, cost {:.9g} it states", bytes, cost, a.bytes, a.cost);
  return "";
}

std::string compare_frontiers(const std::vector<mqexp::Allocation>& got, const std::vector<mqexp::Allocation>& want) {
  if (got.size() != want.size()) return fmt::format("{} points (library {})", got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i].bytes != want[i].bytes || std::fabs(got[i].cost - want[i].cost) > 1e-9 * std::max(1.0, std::fabs(want[i].cost)))
      return fmt::format("point {}: {} bytes, cost {:.9g} (library {} bytes, cost {:.9g})", i, got[i].bytes, got[i].cost, want[i].bytes, want[i].cost);
  return "";
}

void block_c(Checks& c) {
  mq::Rng rng(42);
  std::string first;
  int cases = 0;
  for (int k = 0; k < 150 && first.empty(); ++k) {
    std::vector<mqexp::AllocItem> items;
    const int n = 1 + static_cast<int>(rng.below(6));
    for (int i = 0; i < n; ++i) {
      mqexp::AllocItem it{fmt::format("item{}", i), {}};
      const int m = 1 + static_cast<int>(rng.below(4));
      for (int j = 0; j < m; ++j)
        it.options.push_back({fmt::format("r{}", j), 1 + static_cast<long long>(rng.below(40)),
                              k % 3 == 0 ? static_cast<double>(rng.below(4)) : rng.uniform() * 10.0});  // ties in a third of them
      items.push_back(std::move(it));
    }
    const std::vector<mqexp::Allocation> fl = mqexp::allocation_frontier(items);
    const std::vector<mqexp::Allocation> fm = lab::allocation_frontier(items);
    std::string d = compare_frontiers(fm, fl);
    for (const auto& a : fm)
      if (d.empty()) d = check_allocation(items, a);
    for (long long budget : {fl.front().bytes - 1, fl.front().bytes, static_cast<long long>(rng.below(120)), fl.back().bytes, 1000LL}) {
      if (!d.empty()) break;
      ++cases;
      const auto brute = mqexp::best_within_brute_force(items, budget);
      const auto got = lab::best_within(fm, budget);
      if (brute.has_value() != got.has_value()) d = fmt::format("budget {}: {} (brute force: {})", budget, got ? "an allocation" : "none", brute ? "one fits" : "none fits");
      else if (got && (got->bytes > budget || std::fabs(got->cost - brute->cost) > 1e-9 * std::max(1.0, brute->cost)))
        d = fmt::format("budget {}: {} bytes, cost {:.9g} (brute force: cost {:.9g})", budget, got->bytes, got->cost, brute->cost);
    }
    if (!d.empty()) first = fmt::format("instance {} ({} items): {}", k, n, d);
  }
  c.expect(first.empty(), fmt::format("150 random instances (1-6 items, 1-4 options, ties), {} budgets", cases),
           "frontier equal to mqexp::allocation_frontier; the best allocation within each budget as cheap as brute force's",
           first.empty() ? "all equal" : first);
  {  // Greedy by cost per byte saved picks items 2 and 3 (9.8); the optimum is item 1 alone (9).
    const std::vector<mqexp::AllocItem> items = {{"item1", {{"fp16", 20, 0.0}, {"int4", 10, 9.0}}},
                                                 {"item2", {{"fp16", 20, 0.0}, {"int4", 14, 4.8}}},
                                                 {"item3", {{"fp16", 20, 0.0}, {"int4", 14, 5.0}}}};
    const auto got = lab::best_within(lab::allocation_frontier(items), 50);
    c.expect(got && std::fabs(got->cost - 9.0) < 1e-12, "3 Linears at 60 bytes in fp16, a budget of 50",
             "cost 9 (item 1 alone); a greedy choice by cost per byte saved pays 9.8",
             got ? fmt::format("cost {:g}, {} bytes", got->cost, got->bytes) : "none");
  }
  {  // 16 Linears x 5 options, MiniGPT's shapes: 5^16 combinations, a frontier of a few thousand points. Its own
     // seed: the instance is the same whatever the checks before it consumed.
    mq::Rng rng(42);
    const int d = 256, f = 1024;
    const std::pair<int, int> shape[4] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
    const char* recipes[5] = {"fp16", "int8-per-channel", "int4-g64", "int3-g64", "int2-g64"};
    std::vector<mqexp::AllocItem> items;
    for (int l = 0; l < 4; ++l)
      for (int k = 0; k < 4; ++k) {
        mqexp::AllocItem it{fmt::format("L{}-{}", l, k), {}};
        const double s = std::exp(rng.normal());
        for (int r = 0; r < 5; ++r)
          it.options.push_back({recipes[r], mq::storage_of(mq::Scheme::parse(recipes[r]), shape[k].first, shape[k].second).total(),
                                r == 0 ? 0.0 : s * 1e-5 * std::pow(4.0, r) * (1 + 0.1 * rng.uniform())});
        items.push_back(std::move(it));
      }
    const std::vector<mqexp::Allocation> fl = mqexp::allocation_frontier(items);
    std::vector<mqexp::Allocation> fm;
    within_seconds(20, "lab 05 block C: your allocation_frontier on 16 Linears x 5 options (5^16 combinations: an exhaustive search?)",
                   [&] { fm = lab::allocation_frontier(items); });
    std::string dd = compare_frontiers(fm, fl);
    for (const auto& a : fm)
      if (dd.empty()) dd = check_allocation(items, a);
    c.bar(dd.empty(), fmt::format("16 Linears x 5 recipes in MiniGPT's shapes: the exact frontier ({} points)", fl.size()),
          "equal to mqexp::allocation_frontier, within 20 s", dd.empty() ? "equal" : dd);
  }
  std::string none = "accepted";
  try {
    (void)lab::allocation_frontier({{"x", {}}});
  } catch (const mq::UsageError&) {
    none = "mq::UsageError";
  } catch (const std::exception& e) {
    none = std::string("another exception: ") + e.what();
  }
  c.expect(none == "mq::UsageError", "an item without options", "mq::UsageError", none);
}

// ---- block D: EPI and its frontier -----------------------------------------------------------------------

void block_d(Checks& c) {
  double e = NAN, inf = NAN;
  std::string threw;
  try {
    e = lab::epi(0.005, 0.8);
    inf = lab::epi(0.005, 0.0);
  } catch (const std::exception& x) {
    threw = std::string("threw: ") + x.what();
  }
  std::string neg = "accepted", nan = "accepted";
  try {
    (void)lab::epi(-1e-3, 0.9);
  } catch (const mq::Error&) {
    neg = "mq::Error";
  }
  try {
    (void)lab::epi(std::nan(""), 0.9);
  } catch (const mq::Error&) {
    nan = "mq::Error";
  }
  c.expect(std::fabs(e - 0.00625) < 1e-15 && std::isinf(inf) && neg == "mq::Error" && nan == "mq::Error",
           "epi(0.005 J/token, accuracy 0.8), accuracy 0, negative J, NaN", "0.00625 J per unit of accuracy, +inf, mq::Error, mq::Error",
           threw.empty() ? fmt::format("{:g}, {:g}, {}, {}", e, inf, neg, nan) : threw);
  mq::Rng rng(42);
  std::string first;
  // Exact ties first: two identical configurations (their paired ratio is exactly 1, its interval [1, 1], so
  // neither is cheaper beyond it, and the first of equal EPIs is the optimum), and an exact 2x in every round.
  const std::vector<double> j0 = {1e-3, 1.2e-3, 0.9e-3}, j2 = {2e-3, 2.4e-3, 1.8e-3};
  // Then per-item answers, which decide accuracy by their paired interval: b is a (45 of 60 right) with 2 more
  // right, inside the interval (a tie, although 47 > 45); c is a with 10 right answers skipped ('-': left out,
  // not wrong). At the same J/token all three stay on the frontier. And d, more accurate at exactly a's J/token.
  std::string ans_a(45, '1'), ans_b, ans_c;
  ans_a += std::string(15, '0');
  ans_b = ans_a, ans_c = ans_a;
  ans_b[45] = ans_b[46] = '1';
  for (int i = 0; i < 10; ++i) ans_c[static_cast<size_t>(i)] = '-';
  const std::vector<std::vector<mqexp::EpiPoint>> ties = {
      {{"a", 0.9, j0}, {"b", 0.9, j0}},
      {{"a", 0.9, j0}, {"b", 0.92, j2}, {"c", 0.9, j0}},
      {{"a", 0.92, j2}, {"b", 0.9, j0}, {"c", 0.9, j0}, {"d", 0.92, j2}},
      {{"a", 0.9, j0}, {"d", 0.92, j0}},
      {{"a", 45.0 / 60, j0, ans_a}, {"b", 47.0 / 60, j0, ans_b}, {"c", 35.0 / 50, j0, ans_c}},
  };
  for (int k = 0; k < 300 + static_cast<int>(ties.size()) && first.empty(); ++k) {
    std::vector<mqexp::EpiPoint> pts;
    int n = 0, rounds = 0;
    if (k < static_cast<int>(ties.size())) {
      pts = ties[static_cast<size_t>(k)];
      n = static_cast<int>(pts.size()), rounds = 3;
    } else {
      n = 1 + static_cast<int>(rng.below(8)), rounds = 2 + static_cast<int>(rng.below(9));
      std::vector<double> drift;
      for (int r = 0; r < rounds; ++r) drift.push_back(1.0 + 0.4 * rng.uniform());
      for (int i = 0; i < n; ++i) {
        mqexp::EpiPoint p{fmt::format("cfg{}", i), 0.9 + 0.02 * static_cast<double>(rng.below(4)), {}};
        const double base = 1e-3 * (1.0 + 0.1 * static_cast<double>(rng.below(5)));
        for (int r = 0; r < rounds; ++r) p.joules_per_token.push_back(base * drift[static_cast<size_t>(r)] * (1 + 0.03 * rng.normal()));
        pts.push_back(std::move(p));
      }
    }
    const auto want = mqexp::epi_frontier(pts), got = lab::epi_frontier(pts);
    const std::string wo = mqexp::epi_optimal(pts), go = lab::epi_optimal(pts);
    if (want != got) {
      const auto ids = [](const std::vector<std::string>& v) {
        std::string t;
        for (const auto& x : v) t += (t.empty() ? "" : " ") + x;
        return t.empty() ? std::string("(none)") : t;
      };
      first = fmt::format("set {} ({} configurations, {} rounds{}): frontier {} (library {})", k, n, rounds,
                          pts.front().answers.empty() ? "" : ", accuracy by per-item answers", ids(got), ids(want));
    } else if (wo != go) {
      first = fmt::format("set {}: EPI-optimal {} (library {})", k, go, wo);
    }
  }
  c.expect(first.empty(), "5 sets of exact ties and per-item answers, 300 sets of 1-8 configurations in 2-10 paired rounds (accuracy ties, a drifting machine)",
           "frontier and EPI-optimal equal to mqexp::epi_frontier / epi_optimal", first.empty() ? "all equal" : first);
}

// ---- block E: the learner's study and answers ----------------------------------------------------------

void block_e(Checks& c, const std::string& dir, const std::string& answers, const LabOptions& o) {
  const std::string& root = o.root;
  const std::map<int, std::string> a = answer_sections(mq::read_file(answers), 4);
  for (int q = 1; q <= 4; ++q)
    if (a.at(q).find("TODO") != std::string::npos)
      throw std::runtime_error(fmt::format("lab 05 block E: not implemented yet: answer {} in {} still says TODO", q, answers));
  if (!std::filesystem::exists(dir + "/results.json"))
    throw std::runtime_error(fmt::format("lab 05 block E: not implemented yet: no study at {} (run `miniquant mixed ... --out {}`, the "
                                         "handout's reduced setting)", dir, dir));
  const json res = mqexp::read_json(dir + "/results.json");
  std::string bad;
  try {
    const json man = mqexp::read_json(dir + "/manifest.json");
    if (man.value("command", std::string()).rfind("miniquant mixed", 0) != 0) bad = "manifest.json: its command is not `miniquant mixed`";
    else if (!is_shipped_checkpoint(man.at("checkpoint").value("sha256", std::string()), root))
      bad = "manifest.json: its checkpoint is not data/minigpt.safetensors";
  } catch (const std::exception& e) {
    bad = std::string("manifest.json: ") + e.what();
  }
  c.expect(bad.empty(), "manifest.json", "written by `miniquant mixed` beside results.json, on the shipped checkpoint", bad.empty() ? "consistent" : bad);
  if (o.learner) check_own_work(c, o, "05", dir, {"results.json"}, a);
  int hand = 0, autos = 0, with_epi = 0;
  for (const auto& x : res.at("configs")) {
    const std::string kind = x.value("kind", std::string());
    hand += kind == "uniform" || kind == "mixed";
    autos += kind == "auto";
    with_epi += x.contains("epi") && x["epi"].is_number();
  }
  const json& sens = res.at("sensitivity");
  const bool sens_ok = sens.contains("linears") && !sens["linears"].empty();
  c.expect(hand >= 3 && autos >= 1 && with_epi == static_cast<int>(res.at("configs").size()) && sens_ok, "the study",
           "fp32, the two given maps and yours, at least one allocated map, each with its EPI; the sensitivity table",
           fmt::format("{} hand-written maps, {} allocated, {} of {} with an EPI, sensitivity {}", hand, autos, with_epi, res.at("configs").size(),
                       sens_ok ? "measured" : "missing"));
  if (with_epi == 0 || !sens_ok) return;

  const json& cs = res.at("configs");
  const json* best = nullptr;
  for (const auto& x : cs)
    if (x["epi"].is_number() && (!best || x["epi"].get<double>() < (*best)["epi"].get<double>())) best = &x;
  std::vector<const json*> on_front;
  for (const auto& x : cs)
    if (x.value("on_epi_frontier", false) && x["epi"].is_number()) on_front.push_back(&x);
  // The fields each question asks about, of the configurations it asks about: the lowest-EPI one's EPI, J/token and
  // accuracy (1), the sensitivity table (2), the frontier's (3), the allocation against the hand-written maps (4);
  // and the ratios among those configurations.
  const std::vector<std::string> cfg = {"epi", "joules_per_token", "accuracy", "accuracy_detail", "energy.joules_per_token", "energy.vs_fp32"};
  const auto ratios = [](const std::vector<const json*>& of) {
    std::vector<Fact> d;
    for (const json* x : of)
      for (const json* y : of)
        if (x != y) {
          d.push_back({"EPI ratio", (*x)["epi"].get<double>() / (*y)["epi"].get<double>()});
          d.push_back({"J/token ratio", x->value("joules_per_token", 0.0) / std::max(1e-300, y->value("joules_per_token", 1.0))});
        }
    return d;
  };
  std::vector<const json*> best_and_front = on_front;
  best_and_front.push_back(best);
  std::vector<double> l3 = json_numbers_under(on_front, cfg);
  const std::vector<double> rq2 = json_numbers_under(res, {"answers.rq2"});
  l3.insert(l3.end(), rq2.begin(), rq2.end());
  const std::vector<double> l1 = json_numbers_under(*best, cfg), l2 = json_numbers_under(res, {"sensitivity"}),
                            l4 = json_numbers_under(res, {"allocation_vs_hand", "allocation.maps", "sensitivity.base_fp16"});
  const std::vector<Fact> derived1 = ratios(best_and_front), derived3 = ratios(on_front);
  const std::string lb = "lab 05 block E";
  check_answer(c, lb, 1, a.at(1),
               {&l1, derived1,
                {{"its EPI, J/token or accuracy", {{"EPI", (*best)["epi"].get<double>()}, {"J/token", best->value("joules_per_token", NAN)},
                                                   {"accuracy", best->value("accuracy", NAN)}}}},
                {}, {(*best)["config_id"].get<std::string>()}, "configuration with the lowest EPI"});
  int low_bits = 99;
  for (const auto& l : sens["linears"]) low_bits = std::min(low_bits, minigpt::LinearRecipe::parse(l["recipe"].get<std::string>()).scheme.bits);
  const json* top = nullptr;
  for (const auto& l : sens["linears"])
    if (minigpt::LinearRecipe::parse(l["recipe"].get<std::string>()).scheme.bits == low_bits && (!top || l["dkl"].get<double>() > (*top)["dkl"].get<double>()))
      top = &l;
  // Named by its kind ("mlp_down") or its module ("h.3.mlp.c_proj").
  const std::string kind = (*top)["kind"].get<std::string>();
  const std::map<std::string, std::string> module = {{"qkv", "attn.c_attn"}, {"attn_out", "attn.c_proj"}, {"mlp_up", "mlp.c_fc"}, {"mlp_down", "mlp.c_proj"}};
  check_answer(c, lb, 2, a.at(2),
               {&l2, {}, {{"its KL increase (or KL)", {{"dKL", (*top)["dkl"].get<double>()}, {"KL", (*top)["kl_mean"].get<double>()}}}},
                {}, {kind, fmt::format("h.{}.{}", (*top)["layer"].get<int>(), module.count(kind) ? module.at(kind) : kind)},
                "most sensitive Linear (its tensor kind or module)"});
  std::vector<std::string> front, off_front;
  std::vector<Fact> ff;
  for (const auto& x : cs)
    if (!x.value("on_epi_frontier", false) && x.contains("config_id")) off_front.push_back(x["config_id"]);
  for (const auto& x : cs)
    if (x.value("on_epi_frontier", false)) {
      front.push_back(x["config_id"]);
      ff.push_back({"J/token", x.value("joules_per_token", NAN)});
      ff.push_back({"accuracy", x.value("accuracy", NAN)});
      ff.push_back({"EPI", x["epi"].get<double>()});
    }
  AnswerRules r3{&l3, derived3, {{"the J/token, accuracy or EPI of a frontier configuration", ff}}, front, {},
                 "configurations your results flag on the frontier"};
  r3.names_only_negated = off_front;
  for (const json* x : on_front) r3.owners.push_back({(*x)["config_id"].get<std::string>(), json_numbers_under(*x, cfg)});
  r3.negated_what = "configuration off the frontier named as on it";
  check_answer(c, lb, 3, a.at(3), r3);
  const std::set<std::string> given = {"uniform-int4", "protect-ends"};
  std::vector<std::string> chosen;
  std::vector<Fact> kl;
  // Your map: the only one, or the one the answer names first (the reference study has many hand-written maps).
  const json* mine = nullptr;
  size_t first_at = std::string::npos;
  static const json none = json::array();
  const json& pairs = res.contains("allocation_vs_hand") ? res["allocation_vs_hand"] : none;  // a reference: `mine` points into it
  for (const auto& m : pairs)
    if (!given.count(m["hand"].get<std::string>())) {
      chosen.push_back(m["auto"]);
      for (const char* k : {"hand_kl", "auto_kl", "auto_predicted_kl"})
        if (m.contains(k) && m[k].is_number()) kl.push_back({k, m[k].get<double>()});
      const size_t at = first_named_at(a.at(4), m["hand"].get<std::string>());
      if (at < first_at) first_at = at, mine = &m;
    }
  if (!mine && chosen.size() == 1)
    for (const auto& m : pairs)
      if (!given.count(m["hand"].get<std::string>())) mine = &m;
  c.expect(!chosen.empty(), "an allocated map at the bytes of your own map", "in results.json's allocation_vs_hand",
           chosen.empty() ? "none: add your map to the configs folder and run the study again" : fmt::format("{} found", chosen.size()));
  AnswerRules r4{&l4, {}, {{"the two maps' KL divergence", kl}}, {}, chosen, "map the allocator chose"};
  if (mine && mine->contains("auto_kl") && mine->contains("hand_kl") && (*mine)["auto_kl"].is_number() && (*mine)["hand_kl"].is_number()) {
    const double auto_kl = (*mine)["auto_kl"].get<double>(), hand_kl = (*mine)["hand_kl"].get<double>();
    // The allocated map's KL next to its name (or "the allocator"), the hand-written one's next to its own.
    const std::vector<std::string> an = {(*mine)["auto"].get<std::string>(), "allocator", "allocated"},
                                    hn = {(*mine)["hand"].get<std::string>(), "hand-written", "my map", "your map", "mine"};
    r4.attributions = {{{{"auto_kl", auto_kl}}, an, hn}, {{{"hand_kl", hand_kl}}, hn, an}};
    if (auto_kl != hand_kl) {
      // Lower or higher than yours: the first comparative the answer uses.
      const std::vector<std::string> lower = {"lower", "smaller", "less"}, higher = {"higher", "larger", "greater"};
      r4.claim_right = auto_kl < hand_kl ? lower : higher;
      r4.claim_wrong = auto_kl < hand_kl ? higher : lower;
      r4.claim_what = fmt::format("that the allocator's KL is {} than your map's", auto_kl < hand_kl ? "lower" : "higher");
    }
  }
  check_answer(c, lb, 4, a.at(4), r4);
}

Lab make(const LabOptions& o) {
  const std::string run = o.run_dir.empty() ? o.root + "/labs/05-mixed-precision/run" : o.run_dir;
  const std::string answers = o.answers.empty() ? o.root + "/labs/05-mixed-precision/answers.md" : o.answers;
  Lab lab{"05", "per-layer mixed precision", "labs/05-mixed-precision/mixed.cpp (+ your run, answers.md)", {}};
  lab.blocks = {
      {"A", "the quant-map parser: rules, order, one clear error", block_a, {},
       {"minigpt::QuantPlan::from_json", "minigpt::QuantPlan::recipe_for", "minigpt::PlanRule::matches", "minigpt::read_quant_map"}},
      {"B", "KL divergence and each Linear's sensitivity", [o](Checks& c) { block_b(c, o); }, {"the most sensitive Linear in int2-g64"},
       {"mqexp::kl_of_logits", "mqexp::mean_kl", "mqexp::linear_sensitivity", "mqexp::kl_divergence", "mqexp::log_softmax",
        "mqexp::divergence_pass"}},
      {"C", "bit allocation: the multiple-choice knapsack", block_c, {"16 Linears x 5 recipes: the exact frontier"},
       {"mqexp::allocation_frontier", "mqexp::best_within", "mqexp::best_within_brute_force"}},
      {"D", "EPI and the accuracy-vs-J/token frontier", block_d, {}, {"mqexp::epi", "mqexp::epi_frontier", "mqexp::epi_optimal"}},
      {"E", "your run of `miniquant mixed` and the four questions: " + run, [run, answers, o](Checks& c) { block_e(c, run, answers, o); }, {}, {}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv, MQ_LEARNER_OBJECT); }
