// Loading ggml from the npm package's bins folder: the two core libraries by path, every CPU variant scored the
// way ggml_backend_load_best scores them (dlopen, ggml_backend_score, keep the highest), the winner loaded through
// ggml's own registry (ggml_backend_load, which also checks the backend API version), then the CPU procs.
#include "ggml_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "miniquant/error.h"

namespace vsggml {
namespace fs = std::filesystem;
namespace {

void* open_library(const std::string& path) {
  // RTLD_GLOBAL: the CPU variants name libggml-base.so as NEEDED; the loader then reuses this copy by its soname.
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) throw mq::Error("vs_ggml: cannot load " + path + ": " + dlerror());
  return h;
}

template <class F>
void resolve(void* lib, const char* lib_name, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out) throw mq::Error(std::string("vs_ggml: ") + lib_name + " has no symbol " + name + " (another ggml version?)");
}

// Every libggml-cpu-<variant>.so with its score; the library is closed again, as ggml does while choosing.
std::vector<Variant> score_variants(const std::string& dir) {
  std::vector<Variant> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (!n.starts_with("libggml-cpu-") || !n.ends_with(".so")) continue;
    Variant v{n.substr(12, n.size() - 12 - 3), e.path().string(), 0};
    if (void* h = dlopen(v.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      using ScoreFn = int (*)();
      if (auto score = reinterpret_cast<ScoreFn>(dlsym(h, "ggml_backend_score"))) v.score = score();
      dlclose(h);
    }
    out.push_back(v);
  }
  std::sort(out.begin(), out.end(), [](const Variant& a, const Variant& b) { return a.name < b.name; });
  return out;
}

// ggml's log, warnings and errors only: its debug and info lines (a line per tensor the AMX buffer repacks, the
// backend it loaded) would bury the benchmark's own output. A continuation line follows its first line's level.
void quiet_log(ggml_log_level level, const char* text, void*) {
  static ggml_log_level last = GGML_LOG_LEVEL_NONE;
  if (level != GGML_LOG_LEVEL_CONT) last = level;
  if (last >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

}  // namespace

std::string find_library(const std::string& dir, const std::string& prefix) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with(prefix) && n.ends_with(".so")) return e.path().string();
  }
  throw mq::Error("no " + prefix + "*.so in " + dir);
}

Api::ActRows Api::act_rows(ggml_type t) const {
  const ggml_type_traits* tr = ggml_get_type_traits(t);
  if (tr->from_float_ref && tr->to_float) return {tr->from_float_ref, tr->to_float};
  if (t == GGML_TYPE_Q8_K) return {quantize_row_q8_K_ref, dequantize_row_q8_K};
  return {};
}

bool package_present(const std::string& bins_dir) { return fs::exists(fs::path(bins_dir) / "libggml-base.so"); }

Api load_api(const std::string& bins_dir) {
  Api a;
  a.bins_dir = bins_dir;
  void* base = open_library((fs::path(bins_dir) / "libggml-base.so").string());
  void* registry = open_library(find_library(bins_dir, "libggml.v"));
#define VSGGML_RESOLVE(f) resolve(base, "libggml-base.so", #f, a.f);
  VSGGML_BASE_FUNCTIONS(VSGGML_RESOLVE)
#undef VSGGML_RESOLVE
  resolve(base, "libggml-base.so", "quantize_row_q8_K_ref", a.quantize_row_q8_K_ref);
  resolve(base, "libggml-base.so", "dequantize_row_q8_K", a.dequantize_row_q8_K);
  a.ggml_log_set(quiet_log, nullptr);
#define VSGGML_RESOLVE(f) resolve(registry, "libggml.v*.so", #f, a.f);
  VSGGML_REGISTRY_FUNCTIONS(VSGGML_RESOLVE)
#undef VSGGML_RESOLVE

  a.variants = score_variants(bins_dir);
  for (const Variant& v : a.variants)
    if (v.score > a.chosen.score) a.chosen = v;
  if (a.chosen.score <= 0) throw mq::Error("vs_ggml: no libggml-cpu-*.so in " + bins_dir + " runs on this CPU (every score is 0)");
  a.reg = a.ggml_backend_load(a.chosen.path.c_str());
  if (!a.reg) throw mq::Error("vs_ggml: ggml_backend_load refused " + a.chosen.path + " (backend API version?)");
#define VSGGML_PROC(f, T)                                                                              \
  a.f = reinterpret_cast<T>(a.ggml_backend_reg_get_proc_address(a.reg, #f));                          \
  if (!a.f) throw mq::Error("vs_ggml: the CPU backend answers no proc " #f " (another ggml version?)");
  VSGGML_CPU_PROCS(VSGGML_PROC)
#undef VSGGML_PROC
  // ggml_backend_load opened the variant already; RTLD_NOLOAD returns that handle without loading a second copy.
  void* cpu = dlopen(a.chosen.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!cpu) throw mq::Error("vs_ggml: " + a.chosen.path + " is not loaded after ggml_backend_load");
#define VSGGML_RESOLVE(f) resolve(cpu, "the CPU variant", #f, a.f);
  VSGGML_CPU_EXPORTS(VSGGML_RESOLVE)
#undef VSGGML_RESOLVE
  for (const ggml_backend_feature* f = a.ggml_backend_get_features(a.reg); f && f->name; ++f)
    a.features.push_back(std::string(f->name) + " = " + f->value);
  return a;
}

}  // namespace vsggml
