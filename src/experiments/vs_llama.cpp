#include "experiments/vs_llama.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "experiments/experiment_io.h"
#include "experiments/sweep.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"
#include "miniquant/gguf/io.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/gguf_export.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/throughput.h"

namespace mqexp {
namespace fs = std::filesystem;

namespace {

// MiniGPT's context (data/minigpt.json); the GPT-2-shaped body's comes from gpt2_shape().
constexpr int kMiniGptContext = 128;

int context_of(const std::string& model) {
  return model == "gpt2" ? gpt2_shape(1).n_ctx : kMiniGptContext;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Removes the temporary folder of GGUF files however the run ends.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// One miniquant configuration timed against a file: weight-only or +a8.
struct OurSide {
  std::string path;    // "weight-only" or "+a8"
  std::string scheme;  // the plan's name
  std::unique_ptr<minigpt::Model> model;
  std::vector<double> decode, prefill;  // tokens/s per round
};

// llama.cpp timed on one file by one driver: llama_speed (its C API, the comparison) or node-llama-cpp
// (speed.mjs, kept beside it to show that driver's own cost).
struct LlamaSide {
  std::vector<double> decode, prefill, wall_decode, wall_prefill;  // tokens/s per round
  nlohmann::json info;  // the answer's llama_cpp, node_llama_cpp, settings (and driver, cpu_variant, abi: llama_speed)
};

// One exported file and everything timed on it.
struct Case {
  std::string model_name;
  VsLlamaFormat format;
  std::string gguf;
  int64_t file_bytes = 0;
  std::vector<int32_t> prompt, decode;  // the ids every program is fed
  LlamaSide c_api, node;
  std::vector<OurSide> ours;
};

std::unique_ptr<minigpt::Model> make_model(const std::string& name, const VsLlamaOptions& o, int vocab) {
  if (name == "gpt2") return std::make_unique<minigpt::Model>(gpt2_shape(vocab), o.seed);
  return std::make_unique<minigpt::Model>(load_checkpoint(o.checkpoint).model);
}

// The configured model of `plan_name` (a uniform plan, RTN: the same stored weights for a scheme and
// its "+a8" twin).
std::unique_ptr<minigpt::Model> configured(const std::string& name, const std::string& plan_name, const VsLlamaOptions& o,
                                           int vocab) {
  auto m = make_model(name, o, vocab);
  minigpt::quantize_model(*m, minigpt::QuantPlan::uniform(plan_name));
  return m;
}

double positive_rate(double tokens, double seconds, const std::string& what) {
  const double r = tokens / seconds;
  if (!(seconds > 0) || !std::isfinite(r) || !(r > 0))
    throw mq::Error(fmt::format("{}: {} tokens in {} s is not a rate", what, tokens, seconds));
  return r;
}

// One llama.cpp measurement (a warm-up and one timed round) in its own process: `program` is llama_speed or
// `node speed.mjs`; both take the same request and give the same answer.
void run_llama(const VsLlamaOptions& o, Case& c, LlamaSide& side, const std::string& program, const std::string& dir) {
  const nlohmann::json req = {{"model", c.gguf},   {"threads", o.threads}, {"kv_f32", o.kv_f32}, {"prompt", c.prompt},
                              {"decode", c.decode}, {"rounds", 1},          {"warmup", true}};
  const std::string req_path = dir + "/speed_request.json", out_path = dir + "/speed_answer.json", err_path = dir + "/speed_stderr.txt";
  mq::write_file_atomic(req_path, req.dump());
  const mq::CommandOutput r =
      mq::run_command(fmt::format("{} {} > {} 2> {}", program, shell_quote(req_path), shell_quote(out_path), shell_quote(err_path)));
  if (r.code != 0) {
    std::string err = mq::read_file(err_path);
    if (err.size() > 2000) err = err.substr(0, 2000) + "...";
    throw mq::Error(fmt::format("llama.cpp ({}) failed on {} (exit {}): {}", program, c.gguf, r.code, err));
  }
  // The answer of another program: the checked reader, then its shape (json_shape.h), so a wrong answer
  // is one line naming the file and the key.
  const nlohmann::json a = mq::read_json_file(out_path, size_t{1} << 20);
  static const nlohmann::json spec = nlohmann::json::parse(R"({
    "settings": {"threads": "int"}, "llama_cpp": "any", "node_llama_cpp": "any",
    "rounds": [{"prefill_tokens": "number", "prefill_s": "number", "decode_tokens": "number", "decode_s": "number",
                "wall_prefill_s": "number", "wall_decode_s": "number"}]
  })");
  mq::check_json_shape(a, spec, out_path);
  if (a.at("rounds").empty()) throw mq::Error(fmt::format("{}: /rounds is empty; llama.cpp measured nothing", out_path));
  const nlohmann::json& s = a.at("settings");
  if (s.at("threads").get<int>() != o.threads)
    throw mq::Error(fmt::format("llama.cpp ran {} threads, not the {} asked for", s.at("threads").get<int>(), o.threads));
  side.info = a;
  side.info.erase("rounds");
  const nlohmann::json& rd = a.at("rounds").at(0);
  const std::string what = "llama.cpp on " + c.gguf;
  side.prefill.push_back(positive_rate(rd.at("prefill_tokens").get<double>(), rd.at("prefill_s").get<double>(), what));
  side.decode.push_back(positive_rate(rd.at("decode_tokens").get<double>(), rd.at("decode_s").get<double>(), what));
  side.wall_prefill.push_back(positive_rate(static_cast<double>(c.prompt.size()), rd.at("wall_prefill_s").get<double>(), what));
  side.wall_decode.push_back(positive_rate(static_cast<double>(c.decode.size()), rd.at("wall_decode_s").get<double>(), what));
}

nlohmann::json llama_json(const LlamaSide& l) {
  return {{"decode_tokens_per_s", rate_summary(l.decode)},
          {"prefill_tokens_per_s", rate_summary(l.prefill)},
          {"wall_decode_tokens_per_s", rate_summary(l.wall_decode)},
          {"wall_prefill_tokens_per_s", rate_summary(l.wall_prefill)}};
}

// One miniquant measurement: a warm-up and one timed repetition of the same work.
void run_ours(const VsLlamaOptions& o, OurSide& s) {
  minigpt::SpeedOptions so;
  so.prompt = o.prompt;
  so.decode = o.decode;
  so.reps = 1;
  so.warmup = true;  // llama.cpp ran in between: both sides start each round with their own warm-up
  so.seed = o.seed;
  so.prefill_last_only = true;
  const minigpt::Speed sp = minigpt::measure_speed(*s.model, so);
  const std::string what = "miniquant " + s.scheme;
  s.decode.push_back(positive_rate(1.0, sp.decode.median, what));
  s.prefill.push_back(positive_rate(sp.prompt, sp.prefill.median, what));
}

nlohmann::json shape_json(const minigpt::ModelConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"n_ctx", c.n_ctx}, {"d_model", c.d_model},
          {"n_layer", c.n_layer},       {"n_head", c.n_head}, {"d_ff", c.d_ff}};
}

// Every name in `names` one of `known`, none twice; else a UsageError naming the option and the name.
void check_known_distinct(const char* option, const char* noun, const std::vector<std::string>& names,
                          const std::vector<std::string>& known) {
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (std::find(known.begin(), known.end(), n) == known.end())
      throw mq::UsageError(fmt::format("{}: unknown {} '{}' (known: {})", option, noun, n, fmt::join(known, ", ")));
    if (!seen.insert(n).second) throw mq::UsageError(fmt::format("{}: '{}' given twice", option, n));
  }
}

}  // namespace

const std::vector<std::string>& vs_llama_model_names() {
  static const std::vector<std::string> k = {"minigpt", "gpt2"};
  return k;
}

const std::vector<VsLlamaFormat>& vs_llama_formats() {
  // The K types are ours quantized by our plain scale search (the sweep's `qN_k`), stored in ggml's layouts
  // exactly, so both sides run the same blocks.
  static const std::vector<VsLlamaFormat> k = {{"fp32", "F32"}, {"int8-per-channel", "Q8_0"}, {"int4-g64", "Q4_0"},
                                               {"q2_k", "Q2_K"}, {"q3_k", "Q3_K"}, {"q4_k", "Q4_K"},
                                               {"q5_k", "Q5_K"}, {"q6_k", "Q6_K"}};
  return k;
}

void validate(const VsLlamaOptions& o) {
  if (o.threads < 1) throw mq::UsageError(fmt::format("--threads {}: must be >= 1", o.threads));
  if (o.rounds < 1) throw mq::UsageError(fmt::format("--rounds {}: must be >= 1", o.rounds));
  if (o.prompt < 2)
    throw mq::UsageError(fmt::format("--prompt-tokens {}: must be >= 2 (llama.cpp counts a one-token batch as decode)", o.prompt));
  if (o.decode < 1) throw mq::UsageError(fmt::format("--gen-tokens {}: must be >= 1", o.decode));
  if (o.models.empty()) throw mq::UsageError("--models: give at least one of minigpt, gpt2");
  std::vector<std::string> format_names;
  for (const VsLlamaFormat& f : vs_llama_formats()) format_names.push_back(f.scheme);
  check_known_distinct("--schemes", "scheme", o.formats, format_names);
  check_known_distinct("--models", "model", o.models, vs_llama_model_names());
  for (const auto& m : o.models) {
    // node-llama-cpp keeps one cache cell free: at n_ctx tokens it would shift the context
    // (evaluating again, which speed.mjs would catch as prompt work inside the decode).
    const long need = static_cast<long>(o.prompt) + o.decode;
    if (need > context_of(m) - 1)
      throw mq::UsageError(fmt::format("--prompt-tokens {} + --gen-tokens {} = {} exceed {}'s context of {} positions less the one cell "
                                       "node-llama-cpp keeps free ({})",
                                       o.prompt, o.decode, need, m, context_of(m), context_of(m) - 1));
  }
}

void check_llama_installed(const VsLlamaOptions& o) {
  for (const char* p : {"/speed.mjs", "/node_modules/node-llama-cpp/package.json"})
    if (!fs::exists(o.llama_dir + p))
      throw mq::Error(fmt::format("llama.cpp is not installed: {}{} is missing (run scripts/setup_node.sh)", o.llama_dir, p));
  const mq::CommandOutput r = mq::run_command("node --version 2>&1");
  if (r.code != 0) throw mq::Error("llama.cpp needs node on PATH (run scripts/setup_node.sh)");
  if (::access(o.llama_speed.c_str(), X_OK) != 0)
    throw mq::Error(fmt::format("llama.cpp's C driver {} is not built: configure and build again now that the package is installed "
                                "(bash scripts/configure.sh release && cmake --build --preset release)",
                                o.llama_speed));
}

nlohmann::json rate_summary(const std::vector<double>& samples) {
  if (samples.empty()) throw mq::Error("rate_summary: no samples");
  std::vector<double> s = samples;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  const double median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  return {{"median", median}, {"min", s.front()}, {"max", s.back()}, {"samples", samples}};
}

nlohmann::json run_vs_llama(const VsLlamaOptions& o, const VsLlamaProgress& progress) {
  validate(o);
  check_llama_installed(o);
  const mq::Stopwatch total;

  // OpenMP threads for miniquant, restored whatever happens.
  struct ThreadGuard {
    int old = omp_get_max_threads();
    ~ThreadGuard() { omp_set_num_threads(old); }
  } guard;
  omp_set_num_threads(o.threads);

  TempDir tmp;
  {
    const fs::path base = o.tmp_dir.empty() ? fs::temp_directory_path() : fs::path(o.tmp_dir);
    tmp.path = (base / fmt::format("mq_vs_llama_{}", ::getpid())).string();
    fs::remove_all(tmp.path);
    mq::check_writable_dir(tmp.path);
  }

  // Export: every model in every format, the configured models kept for timing.
  const mq::Stopwatch t_export;
  const LoadedModel shipped = load_checkpoint(o.checkpoint);
  const int vocab = static_cast<int>(shipped.tok.size());
  std::vector<Case> cases;
  nlohmann::json models = nlohmann::json::array();
  for (const std::string& name : o.models) {
    const minigpt::ModelConfig cfg = name == "gpt2" ? gpt2_shape(vocab) : shipped.model.config();
    models.push_back({{"name", name},
                      {"shape", shape_json(cfg)},
                      {"weights", name == "gpt2" ? fmt::format("random (GPT-2 initialisation, seed {}): speed only", o.seed)
                                                 : "the shipped checkpoint " + fs::path(o.checkpoint).filename().string()}});
    minigpt::SpeedOptions so;
    so.prompt = o.prompt;
    so.decode = o.decode;
    so.seed = o.seed;
    const std::vector<int32_t> ids = minigpt::speed_tokens(cfg, so);
    for (const VsLlamaFormat& fmt_ : vs_llama_formats()) {
      if (!o.formats.empty() && std::find(o.formats.begin(), o.formats.end(), fmt_.scheme) == o.formats.end()) continue;
      progress(fmt::format("{} {}: quantize and export to GGUF {}", name, fmt_.scheme, fmt_.gguf_type));
      Case c;
      c.model_name = name;
      c.format = fmt_;
      c.prompt.assign(ids.begin(), ids.begin() + o.prompt);
      c.decode.assign(ids.begin() + o.prompt, ids.end());
      OurSide wo{"weight-only", fmt_.scheme, configured(name, fmt_.scheme, o, vocab), {}, {}};
      const minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(fmt_.scheme);
      minigpt::GgufExportOptions eo;
      eo.name = name;
      eo.embedding = plan.embedding.kind == mq::Kind::fp16 ? mq::gguf::TensorType::F16 : mq::gguf::TensorType::F32;
      eo.scheme_label = fmt_.scheme;
      const mq::gguf::File f = minigpt::to_gguf(*wo.model, shipped.tok, eo);
      int64_t data_bytes = 0;
      for (const auto& t : f.tensors) {
        data_bytes += static_cast<int64_t>(t.data.size());
        if (t.name == "blk.0.attn_qkv.weight" && mq::gguf::tensor_type_name(t.type) != fmt_.gguf_type)
          throw mq::Error(fmt::format("{} exported as {}, expected {}", fmt_.scheme, mq::gguf::tensor_type_name(t.type), fmt_.gguf_type));
      }
      const fs::space_info sp = fs::space(tmp.path);
      const int64_t margin = 64LL << 20;
      if (static_cast<double>(sp.available) < static_cast<double>(data_bytes + margin))
        throw mq::Error(fmt::format("{}: {} MB free, the {} {} GGUF needs {} MB; set TMPDIR to a folder with more room", tmp.path,
                                    sp.available >> 20, name, fmt_.gguf_type, (data_bytes + margin) >> 20));
      c.gguf = fmt::format("{}/{}-{}.gguf", tmp.path, name, fmt_.scheme);
      mq::gguf::write(c.gguf, f);
      c.file_bytes = static_cast<int64_t>(fs::file_size(c.gguf));
      c.ours.push_back(std::move(wo));
      if (mq::supports_dynamic(plan.base.scheme))  // every quantized format but fp32 (and its +a8 is llama.cpp's kind)
        c.ours.push_back({"+a8", fmt_.scheme + "+a8", configured(name, fmt_.scheme + "+a8", o, vocab), {}, {}});
      cases.push_back(std::move(c));
    }
  }
  const double export_s = t_export.seconds();

  // Time: interleaved rounds, llama.cpp then miniquant on each file in turn, so a slow spell of a
  // shared machine lands on both sides instead of on whichever ran then.
  const mq::Stopwatch t_rounds;
  const mq::LoadAverage before = mq::load_average();
  for (int r = 0; r < o.rounds; ++r)
    for (Case& c : cases) {
      progress(fmt::format("round {}/{}: {} {} ({}): llama.cpp (C API, then node-llama-cpp), then miniquant", r + 1, o.rounds,
                           c.model_name, c.format.scheme, c.format.gguf_type));
      run_llama(o, c, c.c_api, shell_quote(o.llama_speed), tmp.path);
      run_llama(o, c, c.node, "node " + shell_quote(o.llama_dir + "/speed.mjs"), tmp.path);
      for (OurSide& s : c.ours) run_ours(o, s);
    }
  const mq::LoadAverage after = mq::load_average();
  const double rounds_s = t_rounds.seconds();
  // Our own threads count towards the load; more than the cores' worth on top of them is other work.
  const double limit = static_cast<double>(mq::cpu_info().logical_cpus) + 0.5;
  const bool busy = mq::machine_busy(before, limit) || mq::machine_busy(after, limit);

  nlohmann::json llama_info, node_info;
  for (auto& m : models) {
    m["formats"] = nlohmann::json::array();
    for (const Case& c : cases) {
      if (c.model_name != m["name"].get<std::string>()) continue;
      llama_info = c.c_api.info;
      node_info = c.node.info;
      const nlohmann::json l = llama_json(c.c_api);
      nlohmann::json n = llama_json(c.node);
      n["decode_ratio"] = n["decode_tokens_per_s"]["median"].get<double>() / l["decode_tokens_per_s"]["median"].get<double>();
      n["prefill_ratio"] = n["prefill_tokens_per_s"]["median"].get<double>() / l["prefill_tokens_per_s"]["median"].get<double>();
      nlohmann::json ours = nlohmann::json::array();
      for (const OurSide& s : c.ours) {
        nlohmann::json d = rate_summary(s.decode), p = rate_summary(s.prefill);
        ours.push_back({{"path", s.path},
                        {"scheme", s.scheme},
                        {"decode_tokens_per_s", d},
                        {"prefill_tokens_per_s", p},
                        {"decode_ratio", d["median"].get<double>() / l["decode_tokens_per_s"]["median"].get<double>()},
                        {"prefill_ratio", p["median"].get<double>() / l["prefill_tokens_per_s"]["median"].get<double>()}});
      }
      m["formats"].push_back({{"scheme", c.format.scheme},
                              {"gguf_type", c.format.gguf_type},
                              {"file_bytes", c.file_bytes},
                              {"llama_cpp", l},
                              {"llama_cpp_node", n},
                              {"miniquant", ours}});
    }
  }
  return {
      {"date", mq::utc_now_iso8601()},
      {"seed", o.seed},
      {"options", {{"threads", o.threads}, {"rounds", o.rounds}, {"prompt", o.prompt}, {"decode", o.decode}, {"models", o.models},
                   {"formats", o.formats.empty() ? nlohmann::json("all") : nlohmann::json(o.formats)},
                   {"kv_cache", o.kv_f32 ? "F32" : "F16"}}},
      {"llama_cpp", {{"release", llama_info.value("llama_cpp", nlohmann::json())},
                     {"node_llama_cpp", llama_info.value("node_llama_cpp", nlohmann::json())},
                     {"driver", llama_info.value("driver", nlohmann::json())},
                     {"cpu_variant", llama_info.value("cpu_variant", nlohmann::json())},
                     {"abi", llama_info.value("abi", nlohmann::json())},
                     {"settings", llama_info.value("settings", nlohmann::json())},
                     {"node_settings", node_info.value("settings", nlohmann::json())},
                     {"timing", "llama_cpp: llama.cpp's own counters of llama_decode (llama_perf_context: prompt eval, eval), read "
                                "by llama_speed through the C API, with a persistent thread pool attached as llama.cpp's own tools "
                                "do; wall_*: a steady clock around the same calls. llama_cpp_node: the same counters read by "
                                "tools/llama/speed.mjs through node-llama-cpp, which leaves ggml a thread pool per graph; its "
                                "wall_*: the evaluations timed from JavaScript around controlledEvaluate (its batching, worker "
                                "hop and one sampled token each)"}}},
      {"miniquant", {{"timing", "minigpt::measure_speed: Model::prefill (logits of the last position only) and Model::decode, "
                                "steady clock around the calls"},
                     {"openmp_threads", o.threads}}},
      {"load_average", {{"before", before.one}, {"after", after.one}, {"limit", limit}, {"busy", busy}}},
      {"models", models},
      {"durations_s", {{"export", export_s}, {"rounds", rounds_s}, {"total", total.seconds()}}},
  };
}

namespace {

std::string model_label(const std::string& name) { return name == "gpt2" ? "GPT-2-small-shaped" : "MiniGPT"; }

std::string rate_cell(const nlohmann::json& s) {
  return fmt::format("{:.0f} [{:.0f}-{:.0f}]", s.at("median").get<double>(), s.at("min").get<double>(), s.at("max").get<double>());
}

}  // namespace

std::string vs_llama_readme_block(const nlohmann::json& r) {
  const nlohmann::json& op = r.at("options");
  const nlohmann::json& la = r.at("load_average");
  std::string s;
  if (la.at("busy").get<bool>())
    s += fmt::format("**Warning: the machine was busy while this was measured (1-minute load average {:.2f} before, {:.2f} after, "
                     "above {:.1f}). These speeds are not results; re-run on a quiet machine.**\n\n",
                     la.at("before").get<double>(), la.at("after").get<double>(), la.at("limit").get<double>());
  const nlohmann::json& ll = r.at("llama_cpp");
  s += fmt::format("Measured {} by `miniquant vs-llama`: {} threads on every side, a {}-token prompt then {} tokens decoded one "
                   "at a time, {} interleaved round{}; llama.cpp as built by node-llama-cpp {} (its binaries' release tag {}), driven "
                   "through its C API by `llama_speed` (a persistent thread pool, as llama.cpp's own tools attach) and through "
                   "node-llama-cpp (`speed.mjs`); K/V cache {}, no flash attention. "
                   "Load average {:.2f} before, {:.2f} after.\n\n",
                   r.at("date").get<std::string>(), op.at("threads").get<int>(), op.at("prompt").get<int>(),
                   op.at("decode").get<int>(), op.at("rounds").get<int>(), op.at("rounds").get<int>() == 1 ? "" : "s",
                   ll.at("node_llama_cpp").is_string() ? ll.at("node_llama_cpp").get<std::string>() : "?",
                   ll.at("release").is_string() ? ll.at("release").get<std::string>() : "?",
                   op.at("kv_cache").get<std::string>(), la.at("before").get<double>(), la.at("after").get<double>());
  s += "Tokens/s: median [slowest-fastest round]. Ratio: the row's median / llama.cpp's through its C API on the same file "
       "(above 1: faster than llama.cpp as its own tools run it).\n\n";
  s += "| model | file | side | decode tok/s | prefill tok/s | decode ratio | prefill ratio |\n";
  s += "|---|---|---|---|---|---|---|\n";
  for (const auto& m : r.at("models")) {
    const std::string label = model_label(m.at("name").get<std::string>());
    for (const auto& f : m.at("formats")) {
      const std::string file = fmt::format("{} ({}, {:.1f} MB)", f.at("gguf_type").get<std::string>(),
                                           f.at("scheme").get<std::string>(), f.at("file_bytes").get<double>() / 1e6);
      const auto& l = f.at("llama_cpp");
      s += fmt::format("| {} | {} | llama.cpp (C API) | {} | {} | | |\n", label, file, rate_cell(l.at("decode_tokens_per_s")),
                       rate_cell(l.at("prefill_tokens_per_s")));
      const auto& n = f.at("llama_cpp_node");
      s += fmt::format("| {} | {} | llama.cpp via node-llama-cpp | {} | {} | {:.2f}x | {:.2f}x |\n", label, file,
                       rate_cell(n.at("decode_tokens_per_s")), rate_cell(n.at("prefill_tokens_per_s")),
                       n.at("decode_ratio").get<double>(), n.at("prefill_ratio").get<double>());
      for (const auto& o : f.at("miniquant"))
        s += fmt::format("| {} | {} | miniquant {} | {} | {} | {:.2f}x | {:.2f}x |\n", label, file, o.at("path").get<std::string>(),
                         rate_cell(o.at("decode_tokens_per_s")), rate_cell(o.at("prefill_tokens_per_s")),
                         o.at("decode_ratio").get<double>(), o.at("prefill_ratio").get<double>());
    }
  }
  s += "\n";
  for (const auto& m : r.at("models"))
    s += fmt::format("{}: {}, d {}, {} layers, {} heads, d_ff {}, vocabulary {}, context {}.\n", model_label(m.at("name").get<std::string>()),
                     m.at("weights").get<std::string>(), m.at("shape").at("d_model").get<int>(), m.at("shape").at("n_layer").get<int>(),
                     m.at("shape").at("n_head").get<int>(), m.at("shape").at("d_ff").get<int>(),
                     m.at("shape").at("vocab_size").get<int>(), m.at("shape").at("n_ctx").get<int>());
  const auto& d = r.at("durations_s");
  s += fmt::format("\nThe run took {:.0f} s ({:.0f} s quantizing and exporting, {:.0f} s of rounds).\n", d.at("total").get<double>(),
                   d.at("export").get<double>(), d.at("rounds").get<double>());
  return s;
}

}  // namespace mqexp
