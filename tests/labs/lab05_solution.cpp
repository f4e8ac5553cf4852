// A learner-style solution of lab 05 (per-layer mixed precision), blocks A-D, written on 2026-11-29 from the handout alone
// (labs/05-mixed-precision/README.md, lab05.h, the starter and the headers the handout names; not the grader,
// the reference twin, solutions/ or the library's implementations of these functions). It passed on its first
// grader run; the test suite grades it (`bin/labs/lab05_solution --block ABCD`), and the planted bugs of issue 57
// were edits of it. Not the course's reference: that is src/labs/reference/lab05_ref.cpp.
#include "lab05.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "experiments/intervals.h"        // mqexp::paired_difference
#include "miniquant/energy/trial_stats.h"  // mq::energy::robust_paired_ratio
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"  // mq::json_int: an integer in a range, or an error naming it
#include "miniquant/util/path_name.h"     // mq::path_name_problem
#include "minigpt/quantize_model.h"       // minigpt::quantize_model(model, plan)

namespace lab {

namespace {

// One line: a message from a helper may span several.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// A recipe name at `what` (e.g. "map.json default"), its errors prefixed with `what`.
minigpt::LinearRecipe parse_recipe(const nlohmann::json& v, const std::string& what) {
  if (!v.is_string()) throw mq::UsageError(one_line(what + ": must be a recipe name (a string), got " + mq::json_summary(v)));
  try {
    return minigpt::LinearRecipe::parse(v.get<std::string>());
  } catch (const mq::Error& e) {
    throw mq::UsageError(one_line(what + ": " + e.what()));
  }
}

// A non-empty array of distinct layer indices 0..1023 at `what`.
std::vector<int> parse_layers(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw mq::UsageError(one_line(what + ": must be an array of layer indices, got " + mq::json_summary(v)));
  if (v.empty()) throw mq::UsageError(what + ": must not be empty");
  std::vector<int> layers;
  std::set<int> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string w = what + "[" + std::to_string(i) + "]";
    int layer = 0;
    try {
      layer = static_cast<int>(mq::json_int(v[i], w, 0, 1023));
    } catch (const mq::Error& e) {
      throw mq::UsageError(one_line(e.what()));
    }
    if (!seen.insert(layer).second) throw mq::UsageError(w + ": layer " + std::to_string(layer) + " is listed twice");
    layers.push_back(layer);
  }
  return layers;
}

}  // namespace

minigpt::QuantPlan quant_map_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw mq::UsageError(one_line(where + ": a quant map must be a JSON object, got " + mq::json_summary(j)));
  static const std::set<std::string> known = {"config_id", "default", "layer_groups", "tensors", "embedding", "gptq"};
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (key == "phases") throw mq::UsageError(where + ": \"phases\" is not supported by this parser");
    if (!known.count(key)) throw mq::UsageError(one_line(where + ": unknown key \"" + mq::clip_text(key) + "\""));
  }
  minigpt::QuantPlan plan;

  // config_id
  if (!j.contains("config_id")) throw mq::UsageError(where + ": missing \"config_id\"");
  const auto& id = j.at("config_id");
  if (!id.is_string()) throw mq::UsageError(one_line(where + " config_id: must be a string, got " + mq::json_summary(id)));
  plan.id = id.get<std::string>();
  if (const std::string p = mq::path_name_problem(plan.id); !p.empty())
    throw mq::UsageError(one_line(where + " config_id \"" + mq::clip_text(plan.id) + "\" cannot name a file: " + p));

  // default
  if (!j.contains("default")) throw mq::UsageError(where + ": missing \"default\"");
  plan.base = parse_recipe(j.at("default"), where + " default");

  // layer groups
  if (j.contains("layer_groups")) {
    const auto& groups = j.at("layer_groups");
    if (!groups.is_array()) throw mq::UsageError(one_line(where + " layer_groups: must be an array, got " + mq::json_summary(groups)));
    std::set<int> taken;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string w = where + " layer_groups[" + std::to_string(g) + "]";
      const auto& group = groups[g];
      if (!group.is_object()) throw mq::UsageError(one_line(w + ": must be an object, got " + mq::json_summary(group)));
      for (const auto& [key, value] : group.items()) {
        (void)value;
        if (key != "layers" && key != "quant") throw mq::UsageError(one_line(w + ": unknown key \"" + mq::clip_text(key) + "\""));
      }
      if (!group.contains("layers")) throw mq::UsageError(w + ": missing \"layers\"");
      if (!group.contains("quant")) throw mq::UsageError(w + ": missing \"quant\"");
      minigpt::PlanRule rule;
      rule.layers = parse_layers(group.at("layers"), w + " layers");
      for (int layer : rule.layers)
        if (!taken.insert(layer).second) throw mq::UsageError(w + ": layer " + std::to_string(layer) + " is already in an earlier group");
      rule.recipe = parse_recipe(group.at("quant"), w + " quant");
      plan.rules.push_back(std::move(rule));
    }
  }

  // tensor-kind rules, after the groups
  if (j.contains("tensors")) {
    const auto& tensors = j.at("tensors");
    if (!tensors.is_array()) throw mq::UsageError(one_line(where + " tensors: must be an array, got " + mq::json_summary(tensors)));
    for (size_t t = 0; t < tensors.size(); ++t) {
      const std::string w = where + " tensors[" + std::to_string(t) + "]";
      const auto& entry = tensors[t];
      if (!entry.is_object()) throw mq::UsageError(one_line(w + ": must be an object, got " + mq::json_summary(entry)));
      for (const auto& [key, value] : entry.items()) {
        (void)value;
        if (key != "match" && key != "quant" && key != "layers")
          throw mq::UsageError(one_line(w + ": unknown key \"" + mq::clip_text(key) + "\""));
      }
      if (!entry.contains("match")) throw mq::UsageError(w + ": missing \"match\"");
      if (!entry.contains("quant")) throw mq::UsageError(w + ": missing \"quant\"");
      const auto& match = entry.at("match");
      if (!match.is_string()) throw mq::UsageError(one_line(w + " match: must be a tensor kind name, got " + mq::json_summary(match)));
      const auto kind = minigpt::parse_linear_kind(match.get<std::string>());
      if (!kind)
        throw mq::UsageError(one_line(w + " match: unknown tensor kind \"" + mq::clip_text(match.get<std::string>()) +
                                      "\" (qkv, attn_out, mlp_up, mlp_down)"));
      minigpt::PlanRule rule;
      rule.kind = *kind;
      if (entry.contains("layers")) rule.layers = parse_layers(entry.at("layers"), w + " layers");
      rule.recipe = parse_recipe(entry.at("quant"), w + " quant");
      plan.rules.push_back(std::move(rule));
    }
  }

  // embedding
  if (j.contains("embedding")) {
    const auto& e = j.at("embedding");
    if (e == "fp32")
      plan.embedding = mq::Scheme::fp32();
    else if (e == "fp16")
      plan.embedding = mq::Scheme::fp16();
    else
      throw mq::UsageError(one_line(where + " embedding: must be \"fp32\" or \"fp16\", got " + mq::json_summary(e)));
  } else {
    bool all_fp32 = plan.base.keeps_fp32();
    for (const auto& r : plan.rules) all_fp32 = all_fp32 && r.recipe.keeps_fp32();
    plan.embedding = all_fp32 ? mq::Scheme::fp32() : mq::Scheme::fp16();
  }

  // gptq settings
  if (j.contains("gptq")) {
    const auto& g = j.at("gptq");
    const std::string w = where + " gptq";
    if (!g.is_object()) throw mq::UsageError(one_line(w + ": must be an object, got " + mq::json_summary(g)));
    try {
      for (const auto& [key, value] : g.items()) {
        const std::string wk = w + "." + key;
        if (key == "calibration_windows") {
          plan.gptq.calibration_windows = static_cast<int>(mq::json_int(value, wk, 1, INT_MAX));
        } else if (key == "percdamp") {
          const double d = mq::json_finite(value, wk);
          if (!(d > 0)) throw mq::UsageError(wk + ": must be a finite number > 0, got " + mq::json_summary(value));
          plan.gptq.options.percdamp = d;
        } else if (key == "block") {
          plan.gptq.options.block = mq::json_int(value, wk, 1, INT_MAX);
        } else if (key == "act_order" || key == "sequential") {
          if (!value.is_boolean()) throw mq::UsageError(one_line(wk + ": must be a boolean, got " + mq::json_summary(value)));
          (key == "act_order" ? plan.gptq.options.act_order : plan.gptq.sequential) = value.get<bool>();
        } else {
          throw mq::UsageError(one_line(w + ": unknown key \"" + mq::clip_text(key) + "\""));
        }
      }
    } catch (const mq::UsageError&) {
      throw;
    } catch (const mq::Error& e) {
      throw mq::UsageError(one_line(e.what()));
    }
  }
  return plan;
}

minigpt::LinearRecipe recipe_for(const minigpt::QuantPlan& plan, int layer, minigpt::LinearKind kind) {
  for (auto it = plan.rules.rbegin(); it != plan.rules.rend(); ++it) {
    const bool layer_ok = it->layers.empty() || std::find(it->layers.begin(), it->layers.end(), layer) != it->layers.end();
    const bool kind_ok = !it->kind || *it->kind == kind;
    if (layer_ok && kind_ok) return it->recipe;
  }
  return plan.base;
}

namespace {

void log_softmax_row(const float* row, int V, std::vector<double>& out) {
  out.resize(static_cast<size_t>(V));
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < V; ++i) m = std::max(m, static_cast<double>(row[i]));
  double s = 0;
  for (int i = 0; i < V; ++i) s += std::exp(static_cast<double>(row[i]) - m);
  const double ls = std::log(s);
  for (int i = 0; i < V; ++i) out[i] = static_cast<double>(row[i]) - m - ls;
}

}  // namespace

double kl_divergence(const float* p_logits, const float* q_logits, int vocab) {
  std::vector<double> lp, lq;
  log_softmax_row(p_logits, vocab, lp);
  log_softmax_row(q_logits, vocab, lq);
  double kl = 0;
  for (int i = 0; i < vocab; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe) {
  const minigpt::Model reference = fresh();
  const int V = reference.config().vocab_size;
  std::vector<std::vector<float>> ref_logits;
  long long positions = 0;
  for (const auto& w : windows) {
    ref_logits.push_back(reference.logits(w));
    positions += static_cast<long long>(w.size());
  }
  auto mean_kl = [&](const minigpt::Model& m) {
    double sum = 0;
    for (size_t k = 0; k < windows.size(); ++k) {
      const std::vector<float> q = m.logits(windows[k]);
      const size_t n = windows[k].size();
      for (size_t t = 0; t < n; ++t) sum += lab::kl_divergence(ref_logits[k].data() + t * V, q.data() + t * V, V);
    }
    return positions > 0 ? sum / static_cast<double>(positions) : 0.0;
  };

  const minigpt::QuantPlan fp16 = minigpt::QuantPlan::uniform("fp16");
  double base = 0;
  {
    minigpt::Model m = fresh();
    minigpt::quantize_model(m, fp16);
    base = mean_kl(m);
  }
  const minigpt::LinearRecipe r = minigpt::LinearRecipe::parse(recipe);
  std::vector<double> out;
  for (const auto& info : reference.linears()) {
    minigpt::QuantPlan plan = fp16;
    minigpt::PlanRule rule;
    rule.layers = {info.layer};
    rule.kind = info.kind;
    rule.recipe = r;
    plan.rules.push_back(rule);
    minigpt::Model m = fresh();
    minigpt::quantize_model(m, plan);
    out.push_back(mean_kl(m) - base);
  }
  return out;
}

std::vector<mqexp::Allocation> allocation_frontier(const std::vector<mqexp::AllocItem>& items) {
  for (const auto& item : items)
    if (item.options.empty()) throw mq::UsageError("allocation_frontier: item \"" + item.name + "\" has no options");
  std::vector<mqexp::Allocation> front(1);  // the empty allocation
  for (const auto& item : items) {
    std::vector<mqexp::Allocation> next;
    next.reserve(front.size() * item.options.size());
    for (const auto& a : front)
      for (size_t o = 0; o < item.options.size(); ++o) {
        mqexp::Allocation b;
        b.bytes = a.bytes + item.options[o].bytes;
        b.cost = a.cost + item.options[o].cost;
        b.choice = a.choice;
        b.choice.push_back(static_cast<int>(o));
        next.push_back(std::move(b));
      }
    std::sort(next.begin(), next.end(), [](const mqexp::Allocation& x, const mqexp::Allocation& y) {
      return x.bytes != y.bytes ? x.bytes < y.bytes : x.cost < y.cost;
    });
    front.clear();
    for (auto& a : next)
      if (front.empty() || a.cost < front.back().cost) front.push_back(std::move(a));
  }
  return front;
}

std::optional<mqexp::Allocation> best_within(const std::vector<mqexp::Allocation>& frontier, long long budget) {
  std::optional<mqexp::Allocation> best;
  for (const auto& a : frontier) {
    if (a.bytes > budget) break;
    best = a;
  }
  return best;
}

double epi(double joules_per_token, double accuracy) {
  if (!std::isfinite(joules_per_token) || !std::isfinite(accuracy) || joules_per_token < 0 || accuracy < 0)
    throw mq::Error("epi: J/token and accuracy must be finite and >= 0, got " + std::to_string(joules_per_token) + " and " +
                    std::to_string(accuracy));
  if (accuracy == 0) return std::numeric_limits<double>::infinity();
  return joules_per_token / accuracy;
}

namespace {

// -1: a below b beyond the interval, +1: above beyond it, 0: a tie. `ge`: a at least as accurate as b.
struct AccCompare {
  bool at_least, more;
};

AccCompare compare_accuracy(const mqexp::EpiPoint& a, const mqexp::EpiPoint& b) {
  if (!a.answers.empty() && a.answers.size() == b.answers.size()) {
    long long both = 0, only_a = 0, only_b = 0, neither = 0;
    for (size_t i = 0; i < a.answers.size(); ++i) {
      const char x = a.answers[i], y = b.answers[i];
      if (x == '-' || y == '-') continue;
      const bool ra = x == '1', rb = y == '1';
      if (ra && rb)
        ++both;
      else if (ra)
        ++only_a;
      else if (rb)
        ++only_b;
      else
        ++neither;
    }
    const mqexp::PairedDifference d = mqexp::paired_difference(both, only_a, only_b, neither);
    return {!(d.high < 0), d.low > 0};
  }
  return {a.accuracy >= b.accuracy, a.accuracy > b.accuracy};
}

}  // namespace

std::vector<std::string> epi_frontier(const std::vector<mqexp::EpiPoint>& points) {
  std::vector<std::string> out;
  for (size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      if (j == i) continue;
      const AccCompare acc = compare_accuracy(points[j], points[i]);
      if (!acc.at_least) continue;
      const mq::energy::Ratio r = mq::energy::robust_paired_ratio(points[j].joules_per_token, points[i].joules_per_token);
      if (r.high < 1 || (acc.more && r.ratio <= 1)) dominated = true;
    }
    if (!dominated) out.push_back(points[i].id);
  }
  return out;
}

std::string epi_optimal(const std::vector<mqexp::EpiPoint>& points) {
  std::string best;
  double best_epi = 0;
  bool have = false;
  for (const auto& p : points) {
    double mean = 0;
    for (double x : p.joules_per_token) mean += x;
    if (!p.joules_per_token.empty()) mean /= static_cast<double>(p.joules_per_token.size());
    const double e = lab::epi(mean, p.accuracy);
    if (!have || e < best_epi) {
      best = p.id;
      best_epi = e;
      have = true;
    }
  }
  return best;
}

}  // namespace lab
