// llama_speed: times a GGUF file in llama.cpp through its C API, for `miniquant vs-llama`
// (src/experiments/vs_llama.cpp). The libraries are the npm package's (node-llama-cpp, tools/llama), opened with
// dlopen as bench/vs_ggml opens them; the program speaks the request / answer of tools/llama/speed.mjs, the
// node-llama-cpp driver it stands beside:
//
//   llama_speed request.json > answer.json
//
// Why a second driver: driven through node-llama-cpp, llama.cpp's llama_decode took about 14 ms per call on
// every model of the committed runs, 60-80 tokens/s whatever the file's size. From C, the same library decodes the
// same MiniGPT file in a quarter to half a millisecond. The cost is the driver's, not llama.cpp's: the addon leaves
// ggml to make a thread pool for every graph and runs llama_decode on a libuv worker beside node's other threads;
// ggml's threads spin at every barrier, so on 2 vCPUs any other runnable thread takes a spinning thread's core for
// a scheduler slice (bench/vs_llama/README.md has the measurements). llama.cpp's own programs (llama-cli,
// llama-bench, llama-server, through common_init) attach a persistent thread pool, n_threads wide, to the context:
// this driver does the same, so what it times is llama.cpp as its own tools run it.
//
// What is timed, as in speed.mjs: llama.cpp's own counters of llama_decode (llama_perf_context: t_p_eval for
// batches of more than one token, t_eval for single tokens), each call followed by llama_synchronize as the addon
// does; wall_*: a steady clock around the same calls (decode, synchronize, reading the logits pointer; no sampling).
// The prompt asks for the last position's logits only (llama_batch_get_one), every decode step for its token's.
//
// Exit codes (one line on stderr): 0 done; 1 a request file that cannot be read or is not JSON of the request's
// shape, or a load, ABI or llama.cpp failure; 2 a well-formed request with values it refuses (token ids, counts,
// the model path).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llama.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"
#include "vs_ggml/abi_check.h"
#include "vs_ggml/ggml_api.h"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The llama.cpp functions this driver calls; each type is the header's declaration (the same release as the
// library: cmake/llama_bundle.cmake), so a call through the table is type-checked as a direct call would be.
#define LLAMA_SPEED_FUNCTIONS(X)                                                                                    \
  X(llama_backend_init) X(llama_backend_free) X(llama_log_set) X(llama_model_default_params)                       \
  X(llama_context_default_params) X(llama_model_load_from_file) X(llama_model_free) X(llama_init_from_model)       \
  X(llama_free) X(llama_attach_threadpool) X(llama_model_n_ctx_train) X(llama_model_get_vocab) X(llama_vocab_n_tokens) \
  X(llama_n_ctx) X(llama_n_batch) X(llama_n_ubatch) X(llama_n_threads) X(llama_n_threads_batch) X(llama_get_memory) \
  X(llama_memory_clear) X(llama_batch_get_one) X(llama_decode) X(llama_synchronize) X(llama_get_logits_ith)          \
  X(llama_perf_context) X(llama_perf_context_reset)

struct Llama {
#define LLAMA_SPEED_MEMBER(f) decltype(&::f) f = nullptr;
  LLAMA_SPEED_FUNCTIONS(LLAMA_SPEED_MEMBER)
#undef LLAMA_SPEED_MEMBER
  std::string path;
};

Llama load_llama(const std::string& bins) {
  Llama l;
  l.path = vsggml::find_library(bins, "libllama.v");
  // libggml.v*.so and libggml-base.so are loaded already (vsggml::load_api, RTLD_GLOBAL): the loader reuses them by
  // their sonames, so llama.cpp and the thread pool below share one ggml.
  void* h = dlopen(l.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw mq::Error("llama_speed: cannot load " + l.path + ": " + dlerror());
#define LLAMA_SPEED_RESOLVE(f)                                                                           \
  l.f = reinterpret_cast<decltype(&::f)>(dlsym(h, #f));                                                  \
  if (!l.f) throw mq::Error("llama_speed: " + l.path + " has no symbol " #f " (another llama.cpp version?)");
  LLAMA_SPEED_FUNCTIONS(LLAMA_SPEED_RESOLVE)
#undef LLAMA_SPEED_RESOLVE
  return l;
}

// Warnings and errors only, as vs_ggml keeps ggml's log.
void quiet_log(ggml_log_level level, const char* text, void*) {
  static ggml_log_level last = GGML_LOG_LEVEL_NONE;
  if (level != GGML_LOG_LEVEL_CONT) last = level;
  if (last >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

struct Request {
  std::string model;
  int threads = 2;
  bool kv_f32 = true;
  std::vector<llama_token> prompt, decode;
  int rounds = 1;
  bool warmup = true;
};

Request read_request(const std::string& path) {
  const json j = mq::read_json_file(path, size_t{1} << 20);
  static const json spec = json::parse(R"({"model": "string", "threads": "int", "prompt": ["int"], "decode": ["int"],
                                                 "kv_f32?": "bool", "rounds?": "int", "warmup?": "bool"})");
  mq::check_json_shape(j, spec, path);
  Request r;
  r.model = j.at("model").get<std::string>();
  r.threads = j.at("threads").get<int>();
  r.kv_f32 = j.value("kv_f32", false);
  r.prompt = j.at("prompt").get<std::vector<llama_token>>();
  r.decode = j.at("decode").get<std::vector<llama_token>>();
  r.rounds = j.value("rounds", 1);
  r.warmup = j.value("warmup", true);
  if (r.threads < 1 || r.threads > 512) throw mq::UsageError(path + ": /threads must be in 1..512");
  if (r.prompt.size() < 2) throw mq::UsageError(path + ": /prompt needs at least 2 tokens (llama.cpp counts a 1-token batch as decode)");
  if (r.decode.empty()) throw mq::UsageError(path + ": /decode needs at least one token");
  if (r.rounds < 1 || r.rounds > 1000) throw mq::UsageError(path + ": /rounds must be in 1..1000");
  return r;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Session {
  const Llama& l;
  llama_context* ctx;
  const Request& req;

  // One llama_decode of `tokens` ids, then llama_synchronize and the last position's logits pointer.
  double decode_ms(llama_token* tokens, int32_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t rc = l.llama_decode(ctx, l.llama_batch_get_one(tokens, n));
    if (rc != 0) throw mq::Error("llama_speed: llama_decode returned " + std::to_string(rc) + " on " + req.model);
    l.llama_synchronize(ctx);
    if (!l.llama_get_logits_ith(ctx, -1)) throw mq::Error("llama_speed: no logits after llama_decode on " + req.model);
    return ms_since(t0);
  }

  // A prompt and the decode steps after it, on a cleared cache: llama.cpp's counters and the wall clock.
  json once() {
    l.llama_memory_clear(l.llama_get_memory(ctx), true);
    l.llama_perf_context_reset(ctx);
    std::vector<llama_token> prompt = req.prompt, decode = req.decode;
    const double wall_prefill = decode_ms(prompt.data(), static_cast<int32_t>(prompt.size()));
    const llama_perf_context_data p = l.llama_perf_context(ctx);
    l.llama_perf_context_reset(ctx);
    double wall_decode = 0;
    std::vector<double> steps;
    for (llama_token& t : decode) steps.push_back(decode_ms(&t, 1));
    for (double s : steps) wall_decode += s;
    const llama_perf_context_data d = l.llama_perf_context(ctx);
    // llama.cpp reports max(1, n) for an empty counter: the counts it saw must be exactly ours.
    if (p.n_p_eval != static_cast<int32_t>(prompt.size()) || p.t_eval_ms != 0)
      throw mq::Error("llama_speed: llama.cpp counted the prompt as " + std::to_string(p.n_p_eval) + " prompt tokens and " +
                      std::to_string(p.t_eval_ms) + " ms of decode");
    if (d.n_eval != static_cast<int32_t>(decode.size()) || d.t_p_eval_ms != 0)
      throw mq::Error("llama_speed: llama.cpp counted " + std::to_string(d.n_eval) + " decode runs (expected " +
                      std::to_string(decode.size()) + ") and " + std::to_string(d.t_p_eval_ms) + " ms of prompt");
    std::sort(steps.begin(), steps.end());
    return {{"prefill_s", p.t_p_eval_ms / 1e3}, {"prefill_tokens", p.n_p_eval},
            {"decode_s", d.t_eval_ms / 1e3},    {"decode_tokens", d.n_eval},
            {"wall_prefill_s", wall_prefill / 1e3}, {"wall_decode_s", wall_decode / 1e3},
            {"wall_decode_step_ms", {{"median", steps[steps.size() / 2]}, {"max", steps.back()}}}};
  }
};

std::string package_version(const std::string& modules) {
  try {
    return mq::read_json_file(modules + "/node-llama-cpp/package.json", size_t{1} << 20).at("version").get<std::string>();
  } catch (const std::exception&) {
    return "?";
  }
}

std::string release_tag(const std::string& bins) {
  try {
    return mq::read_json_file(bins + "/_nlcBuildMetadata.json", size_t{1} << 20)
        .at("buildOptions").at("llamaCpp").at("release").get<std::string>();
  } catch (const std::exception&) {
    return "?";
  }
}

int run(int argc, char** argv) {
  if (argc != 2) throw mq::UsageError("usage: llama_speed request.json > answer.json");
  const Request req = read_request(argv[1]);
  if (!fs::is_regular_file(req.model)) throw mq::UsageError(std::string(argv[1]) + ": /model " + req.model + " is not a file");
  const std::string bins = MQ_GGML_BINS_DIR;
  if (!vsggml::package_present(bins)) throw mq::Error("llama_speed: no node-llama-cpp libraries in " + bins);
  const vsggml::Api g = vsggml::load_api(bins);
  const std::vector<vsggml::AbiCheck> abi = vsggml::abi_checks(g, MQ_GGML_HEADER_VERSION, MQ_GGML_HEADER_COMMIT);
  vsggml::require_abi(abi);
  const Llama l = load_llama(bins);
  l.llama_log_set(quiet_log, nullptr);
  l.llama_backend_init();

  llama_model_params mp = l.llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.load_mode = LLAMA_LOAD_MODE_MMAP;  // as speed.mjs loads it (useMmap)
  llama_model* model = l.llama_model_load_from_file(req.model.c_str(), mp);
  if (!model) throw mq::Error("llama_speed: llama.cpp cannot load " + req.model);
  const int32_t n_ctx = l.llama_model_n_ctx_train(model), n_vocab = l.llama_vocab_n_tokens(l.llama_model_get_vocab(model));
  // The same limit as speed.mjs (node-llama-cpp keeps one cell free), so both drivers take the same requests.
  if (static_cast<int64_t>(req.prompt.size() + req.decode.size()) > n_ctx - 1)
    throw mq::UsageError("llama_speed: prompt " + std::to_string(req.prompt.size()) + " + decode " + std::to_string(req.decode.size()) +
                         " exceed the model's context " + std::to_string(n_ctx) + " less one cell");
  for (const auto* ids : {&req.prompt, &req.decode})
    for (llama_token t : *ids)
      if (t < 0 || t >= n_vocab) throw mq::UsageError("llama_speed: token id " + std::to_string(t) + " outside the vocabulary of " + std::to_string(n_vocab));

  llama_context_params cp = l.llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n_ctx);  // the whole prompt is one batch and one ubatch
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = req.threads;
  cp.type_k = cp.type_v = req.kv_f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = false;
  llama_context* ctx = l.llama_init_from_model(model, cp);
  if (!ctx) throw mq::Error("llama_speed: llama.cpp cannot make a context for " + req.model);
  // The settings read back through the library: a context params struct laid out otherwise than the header says
  // would come back changed (the llama.cpp half of the ABI check). llama.cpp rounds the context up to a multiple of
  // 256 cells, so n_ctx may come back larger.
  const std::string want = std::to_string(n_ctx) + " " + std::to_string(n_ctx) + " " + std::to_string(req.threads) + " " +
                           std::to_string(req.threads);
  const std::string got = std::to_string(l.llama_n_batch(ctx)) + " " + std::to_string(l.llama_n_ubatch(ctx)) + " " +
                          std::to_string(l.llama_n_threads(ctx)) + " " + std::to_string(l.llama_n_threads_batch(ctx));
  if (want != got || l.llama_n_ctx(ctx) < static_cast<uint32_t>(n_ctx))
    throw mq::Error("llama_speed: ABI check failed: context n_batch, n_ubatch, n_threads, n_threads_batch set " + want + ", read " +
                    got + "; n_ctx set " + std::to_string(n_ctx) + ", read " + std::to_string(l.llama_n_ctx(ctx)));
  // One pool for prompt and decode (n_threads == n_threads_batch), as common_init attaches it.
  ggml_threadpool_params tp;
  g.ggml_threadpool_params_init(&tp, req.threads);
  ggml_threadpool* pool = g.ggml_threadpool_new(&tp);
  if (!pool) throw mq::Error("llama_speed: ggml_threadpool_new failed for " + std::to_string(req.threads) + " threads");
  l.llama_attach_threadpool(ctx, pool, nullptr);

  Session s{l, ctx, req};
  if (req.warmup) s.once();
  json rounds = json::array();
  for (int r = 0; r < req.rounds; ++r) rounds.push_back(s.once());

  const std::string modules = fs::path(bins).parent_path().parent_path().parent_path().parent_path().string();
  const json answer = {
      {"llama_cpp", release_tag(bins)},
      {"node_llama_cpp", package_version(modules)},
      {"driver", "llama_speed (llama.cpp's C API, a persistent thread pool as llama.cpp's own tools attach)"},
      {"cpu_variant", g.chosen.name},
      {"settings", {{"threads", l.llama_n_threads(ctx)}, {"context_size", l.llama_n_ctx(ctx)}, {"batch_size", l.llama_n_batch(ctx)},
                    {"kv_cache", req.kv_f32 ? "F32" : "F16"}, {"flash_attention", false}, {"threadpool", "persistent"}}},
      {"abi", vsggml::abi_json(abi)},
      {"rounds", rounds},
  };
  std::fputs(answer.dump().c_str(), stdout);
  std::fputc('\n', stdout);
  l.llama_free(ctx);
  g.ggml_threadpool_free(pool);
  l.llama_model_free(model);
  l.llama_backend_free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const mq::UsageError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
