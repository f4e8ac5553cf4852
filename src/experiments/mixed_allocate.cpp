// The mixed-precision study's allocation: the sensitivities and the hand-written maps' energy rounds
// become maps chosen by the knapsack, within byte budgets and within fitted energy budgets.
#include "experiments/mixed.h"
#include "experiments/mixed_detail.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <Eigen/Dense>
#include <fmt/core.h>

#include "experiments/allocate.h"
#include "experiments/energy_phases.h"
#include "experiments/evaluate.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed_answers.h"
#include "experiments/mixed_energy.h"
#include "experiments/sweep.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/safetensors.h"
#include "minigpt/calibrate.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/throughput.h"

namespace mqexp {

using namespace mixed_detail;
namespace fs = std::filesystem;

namespace {


// Stored bytes of every Linear of a model of shape `c` under `plan` (fp32 Linears: 4 bytes a weight).
long long plan_linear_bytes(const minigpt::QuantPlan& plan, const minigpt::ModelConfig& c) {
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  long long total = 0;
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) {
      const minigpt::LinearRecipe r = plan.recipe_for(l, static_cast<minigpt::LinearKind>(k));
      total += mq::storage_of(r.scheme, shape[k].first, shape[k].second).total();
    }
  return total;
}

struct AllocationSetup {
  std::vector<AllocItem> items;
  std::vector<std::pair<int, minigpt::LinearKind>> where;  // per item
  double base_kl = 0;
};

AllocationSetup allocation_setup(const MixedOptions& o, const minigpt::ModelConfig& c, const Sens& s) {
  AllocationSetup a;
  a.base_kl = s.base.at("kl_mean").get<double>();
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) {
      const auto kind = static_cast<minigpt::LinearKind>(k);
      AllocItem it{fmt::format("L{}-{}", l, minigpt::linear_kind_name(kind)), {}};
      it.options.push_back({"fp16", mq::storage_of(mq::Scheme::fp16(), shape[k].first, shape[k].second).total(), 0.0});
      for (const auto& r : o.sensitivity_recipes) {
        const json& j = s.by_id.at(fmt::format("L{}-{}-{}", l, minigpt::linear_kind_name(kind), r));
        // The KLD this Linear adds alone over the all-fp16 model; taken as additive across Linears.
        it.options.push_back({r, mq::storage_of(minigpt::LinearRecipe::parse(r).scheme, shape[k].first, shape[k].second).total(),
                              j.at("kl_mean").get<double>() - a.base_kl});
      }
      a.items.push_back(std::move(it));
      a.where.emplace_back(l, kind);
    }
  return a;
}

minigpt::QuantPlan plan_of(const AllocationSetup& a, const Allocation& al, const std::string& id, const MixedOptions& o) {
  minigpt::QuantPlan p = all_fp16(id);
  for (size_t i = 0; i < a.items.size(); ++i) {
    const std::string& r = a.items[i].options[static_cast<size_t>(al.choice[i])].recipe;
    if (r == "fp16") continue;
    p.rules.push_back({{a.where[i].first}, a.where[i].second, minigpt::LinearRecipe::parse(r)});
  }
  return study_plan(p, o);
}

// Weights of each recipe in a plan (recipe name -> Linear weights stored that way).
std::map<std::string, double> weights_by_recipe(const minigpt::QuantPlan& plan, const minigpt::ModelConfig& c) {
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  std::map<std::string, double> w;
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k)
      w[plan.recipe_for(l, static_cast<minigpt::LinearKind>(k)).name()] += static_cast<double>(shape[k].first) * shape[k].second;
  return w;
}

// Prices per recipe from the configurations' energy rounds (set "configs"): mean J/token of each over its rounds.
std::optional<EnergyFit> fit_energy(const MixedOptions& o, const minigpt::ModelConfig& c) {
  const std::vector<MixedUnit> units = energy_units(o, false);
  const std::optional<EnergySetData> e = read_mixed_energy(o, units, "configs");
  if (!e) return std::nullopt;
  std::vector<std::map<std::string, double>> xs;
  std::vector<double> ys;
  for (const MixedUnit& u : units) {
    const std::vector<double> v = e->rounds.series("generation", u.id, "total", "joules_per_token");
    xs.push_back(weights_by_recipe(u.plan, c));
    double sum = 0;
    for (double x : v) sum += x;
    ys.push_back(sum / static_cast<double>(v.size()));
  }
  return fit_energy_per_weight(xs, ys);
}

}  // namespace

std::optional<EnergyFit> fit_energy_per_weight(const std::vector<std::map<std::string, double>>& weights,
                                               const std::vector<double>& joules) {
  if (weights.size() != joules.size()) throw mq::Error("fit_energy_per_weight: one weight map per measurement");
  std::vector<std::string> recipes;
  for (const auto& x : weights)
    for (const auto& [r, w] : x)
      if (std::find(recipes.begin(), recipes.end(), r) == recipes.end()) recipes.push_back(r);
  const int n = static_cast<int>(joules.size()), p = static_cast<int>(recipes.size());
  if (p == 0 || n < p + 2) return std::nullopt;  // fewer measurements than prices + 2: no residual to judge the fit by
  Eigen::MatrixXd A(n, p);
  Eigen::VectorXd y(n);
  const double scale = 1e-6;  // weights in millions keeps the columns near the joules' scale
  for (int i = 0; i < n; ++i) {
    const auto& x = weights[static_cast<size_t>(i)];
    for (int k = 0; k < p; ++k) {
      const auto it = x.find(recipes[static_cast<size_t>(k)]);
      A(i, k) = it == x.end() ? 0.0 : it->second * scale;
    }
    y(i) = joules[static_cast<size_t>(i)];
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
  if (qr.rank() < p) return std::nullopt;  // two recipes always appear in the same proportion: no separate prices
  const Eigen::VectorXd b = qr.solve(y);
  EnergyFit f;
  f.configs = n;
  for (int k = 0; k < p; ++k) f.joules_per_weight[recipes[static_cast<size_t>(k)]] = b(k) * scale;
  const Eigen::VectorXd r = y - A * b;
  const double ss = (y.array() - y.mean()).square().sum();
  f.r2 = ss > 0 ? 1.0 - r.squaredNorm() / ss : 1.0;
  f.max_abs_residual = r.cwiseAbs().maxCoeff();
  return f;
}

nlohmann::json EnergyFit::to_json() const {
  return {{"joules_per_weight", joules_per_weight}, {"r2", r2}, {"max_abs_residual_joules", max_abs_residual}, {"configs", configs},
          {"model", "J/token = sum over recipes of joules_per_weight x Linear weights stored in it, least squares over the "
                    "measured configurations (every map stores all Linears, so the per-token overhead is spread over the "
                    "prices); an estimate that prices the allocation, not a measurement"}};
}

std::vector<MixedUnit> allocate_mixed(const MixedOptions& o) {
  const minigpt::ModelConfig c = mixed_model_config(o);
  const Sens s = read_sensitivities(o, c);
  const AllocationSetup a = allocation_setup(o, c, s);
  const std::vector<Allocation> frontier = allocation_frontier(a.items);
  const long long fp16_bytes = plan_linear_bytes(all_fp16("x"), c);

  // Budgets: every hand-written configuration's Linear bytes (the comparison at equal budgets), and eight
  // points spread evenly over the frontier's byte range (the EPI search). Equal allocations are measured once.
  std::vector<std::pair<std::string, long long>> budgets;  // (why, bytes)
  for (const MixedUnit& u : config_units(o))
    if (!u.plan.is_identity()) budgets.emplace_back("bytes of " + u.id, plan_linear_bytes(u.plan, c));
  const long long lo = frontier.front().bytes, hi = std::min(frontier.back().bytes, fp16_bytes);
  for (int k = 0; k < 8; ++k) budgets.emplace_back(fmt::format("EPI search point {} of 8", k + 1), lo + (hi - lo) * k / 7);

  std::vector<MixedUnit> units;
  std::map<std::vector<int>, size_t> seen;
  json maps = json::array();
  const std::string dir = o.out + "/configs_auto";
  fs::create_directories(dir);
  for (const auto& [why, budget] : budgets) {
    const auto best = best_within(frontier, budget);
    if (!best) {
      maps.push_back({{"budget", why}, {"budget_linear_bytes", budget}, {"config_id", nullptr}, {"note", "no allocation fits"}});
      continue;
    }
    std::string id;
    if (auto it = seen.find(best->choice); it != seen.end()) {
      id = units[it->second].id;
    } else {
      id = fmt::format("auto-{}k", (best->bytes + 512) / 1024);
      seen[best->choice] = units.size();
      minigpt::QuantPlan p = plan_of(a, *best, id, o);
      write_json_atomic(dir + "/" + id + ".json", p.to_json());
      units.push_back({"auto", id, std::move(p)});
    }
    maps.push_back({{"budget", why}, {"budget_linear_bytes", budget}, {"config_id", id}, {"linear_bytes", best->bytes},
                    {"predicted_dkl", best->cost}, {"predicted_kl", best->cost + a.base_kl}});
  }
  json fr = json::array();
  for (const Allocation& al : frontier) fr.push_back({{"linear_bytes", al.bytes}, {"predicted_kl", al.cost + a.base_kl}});
  json alloc = {{"base_kl_fp16", a.base_kl}, {"frontier", fr}, {"maps", maps}, {"options", o.sensitivity_recipes},
                {"method", "exact multiple-choice knapsack over additive per-Linear KLD"}};

  // Energy budgets: the same knapsack with each option's resource its fitted joules per token (in nJ, an
  // integer), budgets the measured J/token of every uniform configuration. Needs the configurations measured.
  const std::string sha = minigpt::content_sha256(o.model);
  if (const auto fit = fit_energy(o, c)) {
    alloc["energy_fit"] = fit->to_json();
    AllocationSetup e = a;
    bool priced = true;
    for (size_t i = 0; i < e.items.size(); ++i)
      for (AllocOption& opt : e.items[i].options) {
        const auto it = fit->joules_per_weight.find(opt.recipe);
        if (it == fit->joules_per_weight.end()) {
          priced = false;
          continue;
        }
        const auto [l, kind] = e.where[i];
        const int k = static_cast<int>(kind);
        const double w = static_cast<double>(k == 0 ? 3 * c.d_model * c.d_model : k == 1 ? c.d_model * c.d_model : c.d_ff * c.d_model);
        (void)l;
        // Negative fitted prices are noise around zero for a recipe's weights: clamp so the knapsack's
        // resource stays a cost. llround of nanojoules keeps the sums exact integers.
        opt.bytes = std::llround(std::max(0.0, it->second * w) * 1e9);
      }
    if (priced) {
      const std::vector<Allocation> ef = allocation_frontier(e.items);
      json emaps = json::array();
      for (const MixedUnit& u : config_units(o)) {
        if (u.plan.is_identity() || !u.plan.rules.empty()) continue;  // uniform maps only
        auto j = find_unit(o, u, unit_key(o, u, sha));
        if (!j) continue;
        // The budget is the fit's price of the uniform map, not its measured J/token: both sides of the
        // comparison are then priced by the same estimate (the measurement is in the table beside it).
        // One nJ per Linear absorbs the rounding of each option's price.
        double joules = 0;
        for (const auto& [r, w] : weights_by_recipe(u.plan, c)) {
          const auto it = fit->joules_per_weight.find(r);
          if (it != fit->joules_per_weight.end()) joules += it->second * w;
        }
        const long long budget = std::llround(joules * 1e9) + static_cast<long long>(e.items.size());
        const auto best = best_within(ef, budget);
        if (!best) {
          emaps.push_back({{"budget", "fitted J/token of " + u.id}, {"budget_config", u.id}, {"budget_joules", joules}, {"config_id", nullptr}, {"note", "no allocation fits"}});
          continue;
        }
        std::string id;
        if (auto it = seen.find(best->choice); it != seen.end()) {
          id = units[it->second].id;
        } else {
          id = fmt::format("auto-e{}uJ", std::llround(static_cast<double>(best->bytes) * 1e-9 * 1e6));
          seen[best->choice] = units.size();
          minigpt::QuantPlan p = plan_of(e, *best, id, o);
          write_json_atomic(dir + "/" + id + ".json", p.to_json());
          units.push_back({"auto", id, std::move(p)});
        }
        emaps.push_back({{"budget", "fitted J/token of " + u.id}, {"budget_config", u.id}, {"budget_joules", joules}, {"config_id", id},
                         {"predicted_joules", static_cast<double>(best->bytes) * 1e-9},
                         {"predicted_dkl", best->cost}, {"predicted_kl", best->cost + a.base_kl}});
      }
      alloc["energy_maps"] = emaps;
    } else {
      alloc["energy_note"] = "a recipe the allocation may choose appears in no measured configuration: no energy price for it";
    }
  } else {
    alloc["energy_note"] = "too few configurations with energy rounds to fit joules per token per recipe: run --stage energy first";
  }
  // configs_auto/ holds this allocation's maps and nothing else: a map an earlier allocation proposed (other
  // sensitivities, another energy fit) would otherwise join the energy set and the merge as a unit never measured.
  std::set<std::string> current;
  for (const MixedUnit& u : units) current.insert(u.id + ".json");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".json" && name.rfind("auto-", 0) == 0 && !current.count(name)) {
      fs::remove(e.path());
    }
  }
  write_json_atomic(o.out + "/allocation.json", alloc);
  return units;
}

}  // namespace mqexp
