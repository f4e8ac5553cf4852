#include "experiments/energy_rounds.h"

#include "miniquant/random.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/timer.h"

namespace mqexp {

const PhaseStats& Measurement::phase(const std::string& name) const {
  const auto it = phases.find(name);
  if (it == phases.end()) throw mq::Error(fmt::format("measurement has no phase '{}'", name));
  return it->second;
}

Measurement from_run(const RunResult& r) {
  Measurement m;
  m.phases = {{"prefill", r.prefill}, {"decode", r.decode}, {"post", r.post}, {"total", r.total}};
  m.generated = r.generated;
  return m;
}

Measurement from_batch(const BatchRun& r) {
  Measurement m;
  m.phases = {{"decode", r.decode}, {"post", r.post}, {"total", r.total}};
  return m;
}

double phase_metric(const PhaseStats& p, const std::string& metric) {
  if (metric == "joules_per_token") return p.joules_per_token();
  if (metric == "joules") return p.joules;
  if (metric == "seconds") return p.seconds;
  if (metric == "tokens_per_s") return p.tokens_per_s();
  if (metric == "watts") return p.watts();
  throw mq::Error(fmt::format("unknown metric '{}'", metric));
}

const std::vector<Measurement>& RoundsResult::of(const std::string& task, const std::string& config) const {
  const auto t = results.find(task);
  if (t == results.end()) throw mq::Error(fmt::format("no task '{}' was measured", task));
  const auto c = t->second.find(config);
  if (c == t->second.end()) throw mq::Error(fmt::format("task '{}' did not run configuration '{}'", task, config));
  return c->second;
}

std::vector<double> RoundsResult::series(const std::string& task, const std::string& config, const std::string& phase,
                                         const std::string& metric) const {
  std::vector<double> v;
  for (const Measurement& m : of(task, config)) v.push_back(phase_metric(m.phase(phase), metric));
  return v;
}

std::vector<int> round_order(int n, int round) {
  std::vector<int> o(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) o[static_cast<size_t>(i)] = i;
  // Fisher-Yates from the seed 42 and the round (warm-up rounds are negative): our own generator, so every
  // standard library gives the same orders.
  mq::Rng rng(42u ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(static_cast<int64_t>(round) + (int64_t{1} << 32))));
  for (int i = n - 1; i > 0; --i) std::swap(o[static_cast<size_t>(i)], o[static_cast<size_t>(rng.below(static_cast<uint64_t>(i) + 1))]);
  return o;
}

RoundsResult run_rounds(const std::vector<RoundTask>& tasks, const RoundsOptions& o, const RoundsProgress& progress) {
  if (o.rounds < 1) throw mq::UsageError(fmt::format("--rounds {}: need at least one round", o.rounds));
  if (o.warmup < 0) throw mq::UsageError(fmt::format("--warmup {}: must be >= 0", o.warmup));
  const bool adaptive = o.enough && o.max_rounds > o.rounds;
  if (adaptive && o.step < 1) throw mq::UsageError(fmt::format("adaptive rounds: step {} must be >= 1", o.step));
  std::set<std::string> keys;
  for (const RoundTask& t : tasks) {
    if (t.configs.empty()) throw mq::UsageError(fmt::format("task {} runs on no configuration", t.key));
    if (!keys.insert(t.key).second) throw mq::UsageError(fmt::format("task {} is listed twice", t.key));
  }
  RoundsResult r;
  r.planned = o.rounds;
  r.warmup = o.warmup;
  const mq::Stopwatch clock;
  // Round `round` (< o.first: a warm-up round, discarded) of a run that ends at `last`.
  const auto one_round = [&](int round, int last) {
    const bool warm = round < o.first;
    if (o.before_round) o.before_round(round);
    double load = -1;
    if (!warm && getloadavg(&load, 1) != 1) load = -1;
    std::map<std::string, std::vector<std::string>> ran;
    for (const RoundTask& t : tasks) {
      for (const int i : round_order(static_cast<int>(t.configs.size()), round)) {
        const std::string& c = t.configs[static_cast<size_t>(i)];
        Measurement m = t.run(c, round);
        ran[t.key].push_back(c);
        if (!warm) r.results[t.key][c].push_back(std::move(m));
      }
    }
    if (!warm) {
      r.order.push_back(std::move(ran));
      r.load.push_back(load);
      r.rounds = static_cast<int>(r.order.size());
    }
    progress(fmt::format("{} {} of {} done ({:.0f} s)", warm ? "warm-up round" : "round", warm ? round - o.first + o.warmup + 1 : round - o.first + 1,
                         warm ? o.warmup : last - o.first, clock.seconds()));
  };
  for (int round = o.first - o.warmup; round < o.first + o.rounds; ++round) one_round(round, o.first + o.rounds);
  if (adaptive) {
    r.answered = o.enough(r);
    while (!r.answered && r.rounds < o.max_rounds) {
      const int add = std::min(o.step, o.max_rounds - r.rounds), from = o.first + r.rounds;
      progress(fmt::format("not answered after {} rounds: {} more (at most {} in all)", r.rounds, add, o.max_rounds));
      for (int round = from; round < from + add; ++round) one_round(round, from + add);
      r.answered = o.enough(r);
    }
  }
  r.seconds = clock.seconds();
  return r;
}

nlohmann::json measurement_json(const Measurement& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [ph, p] : m.phases) {
    const mq::energy::Work& w = p.work;
    j[ph] = {{"tokens", p.tokens}, {"seconds", p.seconds}, {"joules", p.joules},
             {"work", {{"flops_fp32", w.flops_fp32}, {"ops_int8", w.ops_int8}, {"bytes", {w.bytes[0], w.bytes[1], w.bytes[2], w.bytes[3]}}}}};
  }
  return j;
}

Measurement measurement_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.empty()) throw mq::Error(fmt::format("{}: expected an object of phases", where));
  Measurement m;
  for (const auto& [ph, v] : j.items()) {
    const std::string w = where + "." + ph;
    if (!v.is_object() || !v.contains("work") || !v["work"].is_object()) throw mq::Error(fmt::format("{}: a phase needs tokens, seconds, joules and work", w));
    PhaseStats p;
    p.tokens = mq::json_finite(v.value("tokens", nlohmann::json()), w + ".tokens");
    p.seconds = mq::json_finite(v.value("seconds", nlohmann::json()), w + ".seconds");
    p.joules = mq::json_finite(v.value("joules", nlohmann::json()), w + ".joules");
    const nlohmann::json& wk = v["work"];
    p.work.flops_fp32 = mq::json_finite(wk.value("flops_fp32", nlohmann::json()), w + ".work.flops_fp32");
    p.work.ops_int8 = mq::json_finite(wk.value("ops_int8", nlohmann::json()), w + ".work.ops_int8");
    const nlohmann::json b = wk.value("bytes", nlohmann::json());
    if (!b.is_array() || b.size() != static_cast<size_t>(mq::energy::kLevels)) throw mq::Error(fmt::format("{}.work.bytes: expected 4 levels", w));
    for (int l = 0; l < mq::energy::kLevels; ++l) p.work.bytes[l] = mq::json_finite(b[static_cast<size_t>(l)], w + ".work.bytes");
    if (p.tokens < 0 || p.seconds < 0 || p.joules < 0) throw mq::Error(fmt::format("{}: a negative count", w));
    m.phases[ph] = p;
  }
  return m;
}

void accumulate(Measurement& into, const Measurement& m) {
  for (const auto& [ph, p] : m.phases) {
    PhaseStats& q = into.phases[ph];
    q.joules += p.joules;
    q.seconds += p.seconds;
    q.tokens += p.tokens;
    q.work += p.work;
    for (const auto& [z, j] : p.zones) q.zones[z] += j;
  }
  into.generated.insert(into.generated.end(), m.generated.begin(), m.generated.end());
}

std::string csv_field(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string q = "\"";
  for (char ch : cell) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string rounds_csv(const std::string& model, const RoundsResult& r, bool header) {
  std::string s =
      header ? "model,task,config,round,position,phase,tokens,seconds,joules,flops_fp32,ops_int8,bytes_L1,bytes_L2,bytes_L3,bytes_DRAM\n" : "";
  for (int round = 0; round < static_cast<int>(r.order.size()); ++round)
    for (const auto& [task, configs] : r.order[static_cast<size_t>(round)])
      for (size_t pos = 0; pos < configs.size(); ++pos) {
        const Measurement& m = r.of(task, configs[pos])[static_cast<size_t>(round)];
        for (const auto& [ph, p] : m.phases)
          s += fmt::format("{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}\n", csv_field(model), csv_field(task),
                           csv_field(configs[pos]), round, pos, ph, p.tokens, p.seconds, p.joules, p.work.flops_fp32, p.work.ops_int8, p.work.bytes[0],
                           p.work.bytes[1], p.work.bytes[2], p.work.bytes[3]);
      }
  return s;
}

}  // namespace mqexp
