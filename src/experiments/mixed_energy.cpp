#include "experiments/mixed_energy.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/core.h>

#include "experiments/energy_phases.h"
#include "experiments/energy_summary.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed_detail.h"
#include "experiments/workspace.h"
#include "miniquant/energy/select.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_shape.h"
#include "miniquant/util/path_name.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/wait_policy.h"
#include "minigpt/safetensors.h"
#include "minigpt/calibrate.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"

namespace mqexp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The set's name becomes a folder: checked where the path is built, whoever named it.
std::string set_dir(const std::string& runs, const std::string& set) {
  mq::check_path_name(set, "energy set");
  return runs + "/energy/" + set;
}
std::string round_file(const std::string& runs, const std::string& set, int k) { return fmt::format("{}/round-{:03d}.json", set_dir(runs, set), k); }

// A round's file when it is there, readable and made for this set's key.
std::optional<json> finished_round(const MixedOptions& o, const std::string& set, int k, const std::string& key) {
  for (const auto& dir : mixed_detail::all_runs_dirs(o)) {
    const std::string path = round_file(dir, set, k);
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    json j;
    try {
      j = read_json(path);
    } catch (const mq::Error&) {
      continue;  // Writes are atomic: an unreadable file is not ours; the round is measured again.
    }
    if (!j.is_object() || j.value("key", json()) != key) continue;  // another set's or option's round
    // Ours by its key: every field read_mixed_energy reads must be there, with its type (one line naming the file).
    static const json spec = {{"order", json::array({"string"})},
                              {"configs", {{"*", "object"}}},
                              {"machine", "object"},
                              {"threads?", "int"},
                              {"omp_wait_policy?", "string"},
                              {"measured?", "bool"},
                              {"energy_source?", "string"}};
    mq::check_json_shape(j, spec, path);
    return j;
  }
  return std::nullopt;
}

std::vector<std::string> set_configs(const std::vector<MixedUnit>& units) {
  std::vector<std::string> c = {units.front().id, kMixedControl};
  for (size_t i = 1; i < units.size(); ++i) c.push_back(units[i].id);
  return c;
}

}  // namespace

std::string cached_model_path(const MixedOptions& o, const MixedUnit& u, const std::string& key) {
  mq::check_path_name(u.id, "unit id");
  return fmt::format("{}/cache/{}-{}.safetensors", o.out, u.id, key);
}

std::string energy_set_key(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& checkpoint_sha256) {
  json k = {{"members", json::array()}, {"checkpoint", checkpoint_sha256}, {"gens", o.gens}, {"prompt_tokens", o.prompt_tokens},
            {"gen_tokens", o.gen_tokens}, {"meter", o.meter}, {"rounds", o.rounds}, {"seed", o.seed}};
  for (const MixedUnit& u : units) k["members"].push_back({u.id, unit_key(o, u, checkpoint_sha256)});
  const std::string text = k.dump();
  return mq::sha256_hex(text.data(), text.size()).substr(0, 16);
}

mq::energy::Ratio mixed_control_ratio(const RoundsResult& rounds) { return paired(rounds, "generation", kMixedControl, kMixedBase, "total"); }

int mixed_rounds_to_add(const mq::energy::Ratio& control, int have, int bound, int step) {
  if (control_passes(control) || have >= bound) return 0;
  return std::min(step, bound - have);
}

EnergySetRun run_mixed_energy(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& set,
                              const MixedProgress& progress) {
  if (units.empty() || !units.front().plan.is_identity()) throw mq::Error("energy set " + set + ": the fp32 baseline must come first");
  const std::string sha = minigpt::content_sha256(o.model);
  const std::string key = energy_set_key(o, units, sha);
  EnergySetRun run;
  std::vector<int> todo;
  for (int k = 0; k < o.rounds; ++k) {
    if (k % o.shards != o.shard) {
      ++run.other_shards;
      continue;
    }
    if (finished_round(o, set, k, key)) ++run.reused;
    else todo.push_back(k);
  }
  // Adaptive rounds need every round of the set in one place: a single shard's run.
  const bool adaptive = o.shards == 1 && o.round_bound() > o.rounds;

  // Every configuration of the set in memory, loaded when the first round needs them: the baseline twice (the
  // control is a second copy of its own).
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  std::map<std::string, std::unique_ptr<minigpt::Model>> models;
  const auto load_models = [&](int rounds) {
    if (!models.empty()) return;
    progress(fmt::format("energy set '{}': loading {} configurations for {} rounds", set, units.size() + 1, rounds));
    std::vector<std::vector<int32_t>> calibration;
    for (size_t i = 0; i < units.size(); ++i) {
      const MixedUnit& u = units[i];
      // The quality stage's cache, here or beside any other shard's runs folder (a shared filesystem).
      std::string cache = cached_model_path(o, u, unit_key(o, u, sha));
      std::error_code ec;
      for (const auto& dir : mixed_detail::all_runs_dirs(o)) {
        const std::string other = (fs::path(dir).parent_path() / "cache" / fs::path(cache).filename()).string();
        if (!fs::exists(cache, ec) && fs::exists(other, ec)) cache = other;
      }
      if (u.plan.is_identity()) {
        models[u.id] = std::make_unique<minigpt::Model>(load_checkpoint(o.model, &c.tok).model);
        models[kMixedControl] = std::make_unique<minigpt::Model>(load_checkpoint(o.model, &c.tok).model);
      } else if (fs::exists(cache, ec)) {
        models[u.id] = std::make_unique<minigpt::Model>(load_checkpoint(cache, &c.tok).model);
      } else {
        auto m = std::make_unique<minigpt::Model>(load_checkpoint(o.model, &c.tok).model);
        if (u.plan.needs_calibration() && calibration.empty())
          calibration = minigpt::calibration_windows(minigpt::encode_split(c.tok, c.corpus.val), o.calibration, m->config().n_ctx);
        static const std::vector<std::vector<int32_t>> none;
        minigpt::quantize_model(*m, u.plan, u.plan.needs_calibration() ? calibration : none);
        models[u.id] = std::move(m);
      }
    }
  };
  const std::vector<std::string> configs = set_configs(units);
  mq::energy::Selection meter = mq::energy::select_meter(o.meter, o.roots);
  WorkContext wc;
  wc.caches = mq::cpu_info().caches;
  wc.threads = omp_get_max_threads();
  const std::vector<int32_t> test = minigpt::encode_split(c.tok, c.corpus.test);
  // Round k's g-th generation reads prompt k * gens + g of the test split: every configuration of a round the same prompts.
  const auto prompt = [&](int round, int g) {
    const size_t idx = static_cast<size_t>(std::max(round, 0) * o.gens + g) % (test.size() / static_cast<size_t>(o.prompt_tokens) - 1);
    const size_t at = idx * static_cast<size_t>(o.prompt_tokens);
    return std::vector<int32_t>(test.begin() + static_cast<long>(at), test.begin() + static_cast<long>(at) + o.prompt_tokens);
  };
  const RoundTask gen{"generation", configs, [&](const std::string& cfg, int round) {
                        Measurement total;
                        for (int g = 0; g < o.gens; ++g)
                          accumulate(total, from_run(run_generation(*models.at(cfg), *meter.meter, prompt(round, g), o.gen_tokens, &c.tok, wc)));
                        return total;
                      }};
  bool warmed = false;
  const auto measure = [&](int k, int of) {
    load_models(of);
    const mq::LoadAverage before = mq::load_average();
    const RoundsResult r = run_rounds({gen}, {1, warmed ? 0 : 1, k}, [](const std::string&) {});
    warmed = true;
    json j = {{"kind", "energy-round"}, {"set", set}, {"round", k}, {"key", key}, {"date", mq::utc_now_iso8601()},
              {"machine", machine_brief()}, {"threads", omp_get_max_threads()},
              {"omp_wait_policy", mq::wait_policy().policy}, {"energy_source", meter.meter->source()},
              {"measured", meter.meter->measured()}, {"order", r.order.front().at("generation")}, {"load_before", before.one},
              {"load_after", mq::load_average().one}, {"gens", o.gens}, {"configs", json::object()}};
    for (const std::string& cfg : configs) j["configs"][cfg] = measurement_json(r.of("generation", cfg).front());
    const std::string path = round_file(o.out + "/runs", set, k);
    fs::create_directories(fs::path(path).parent_path());
    write_json_atomic(path, j);
    ++run.measured;
    progress(fmt::format("energy set '{}': round {} of {} ({} configurations) written", set, k + 1, of, configs.size()));
  };
  for (const int k : todo) measure(k, o.rounds);
  if (!adaptive) return run;

  // Adaptive: while the control fails, more rounds (with files of their own, the same key), up to the bound. Rounds
  // an earlier run added are read back first, so a rerun continues where it stopped.
  for (;;) {
    const std::optional<EnergySetData> d = read_mixed_energy(o, units, set);
    if (!d || d->rounds.rounds < o.rounds) return run;  // a planned round is missing: nothing to adapt yet
    const int have = d->rounds.rounds;
    run.added = have - o.rounds;
    const mq::energy::Ratio ctl = mixed_control_ratio(d->rounds);
    const int add = mixed_rounds_to_add(ctl, have, o.round_bound(), o.add_rounds);
    if (add == 0) {
      run.answered = control_passes(ctl);
      if (!run.answered)
        progress(fmt::format("energy set '{}': the control is still {:.4f} [{:.4f}, {:.4f}] after {} rounds, the bound (--max-rounds)",
                             set, ctl.ratio, ctl.low, ctl.high, have));
      return run;
    }
    progress(fmt::format("energy set '{}': control {:.4f} [{:.4f}, {:.4f}] after {} rounds does not pass (it must hold 1.00 "
                         "and lie inside +-3%): {} more (at most {} in all)",
                         set, ctl.ratio, ctl.low, ctl.high, have, add, o.round_bound()));
    for (int k = have; k < have + add; ++k) measure(k, o.round_bound());
  }
}

std::optional<EnergySetData> read_mixed_energy(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& set) {
  const std::string sha = minigpt::content_sha256(o.model);
  const std::string key = energy_set_key(o, units, sha);
  EnergySetData d;
  d.configs = set_configs(units);
  d.expected_rounds = o.rounds;
  std::map<std::string, json> machines;
  for (int k = 0; k < o.round_bound(); ++k) {
    const auto j = finished_round(o, set, k, key);
    if (!j && k >= o.rounds) break;  // added rounds follow the planned ones without a gap
    if (!j) continue;
    const std::string where = fmt::format("energy set {} round {}", set, k);
    std::map<std::string, std::vector<std::string>> order;
    order["generation"] = j->at("order").get<std::vector<std::string>>();
    for (const std::string& cfg : d.configs) {
      if (!j->at("configs").contains(cfg)) throw mq::Error(fmt::format("{}: configuration {} is missing", where, cfg));
      d.rounds.results["generation"][cfg].push_back(measurement_from_json(j->at("configs").at(cfg), where + " " + cfg));
    }
    d.rounds.order.push_back(order);
    d.measured = j->value("measured", false);
    d.energy_source = j->value("energy_source", std::string());
    d.round_indices.push_back(k);
    json& m = machines[j->at("machine").dump()];
    if (m.is_null())
      m = {{"machine", j->at("machine")}, {"threads", j->value("threads", 0)}, {"omp_wait_policy", j->value("omp_wait_policy", "default (spin, then sleep)")}, {"rounds", 0}};
    m["rounds"] = m["rounds"].get<int>() + 1;
  }
  if (d.round_indices.empty()) return std::nullopt;
  d.rounds.rounds = static_cast<int>(d.round_indices.size());
  d.machines = json::array();
  for (auto& [k, v] : machines) d.machines.push_back(v);
  return d;
}

}  // namespace mqexp
