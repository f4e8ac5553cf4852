// Quantization plans: recipe names, rules, validation and the JSON form checkpoints and quant maps use.
#include "minigpt/quant_plan.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "minigpt/kquant_mixes.h"
#include "minigpt/quantizer_table.h"
#include "minigpt/transform_table.h"
#include "miniquant/util/path_name.h"

namespace minigpt {

namespace {
// The activation modes a recipe names, by their suffix: the one list the recipe parsers and printers read.
struct ActName {
  mq::ActMode act;
  std::string_view suffix;
};
constexpr ActName kActNames[] = {{mq::ActMode::dynamic_int8, "+a8"}, {mq::ActMode::dynamic_int16, "+a16"}, {mq::ActMode::bf16, "+bf16"}};
}  // namespace

std::string_view act_suffix(mq::ActMode act) {
  for (const ActName& a : kActNames)
    if (a.act == act) return a.suffix;
  return "";  // weight_only
}

LinearRecipe LinearRecipe::parse(const std::string& name) {
  LinearRecipe r;
  std::string storage = name;
  // Takes `tail` off the end of what is left, when something is left before it; the suffixes go from the last back.
  const auto strip = [&storage](std::string_view tail) {
    if (storage.size() <= tail.size() || !storage.ends_with(tail)) return false;
    storage.resize(storage.size() - tail.size());
    return true;
  };
  for (const ActName& a : kActNames)
    if (strip(a.suffix)) {
      r.act = a.act;
      break;
    }
  r.gptq = strip("-gptq");
  // The quantizer's suffix (quantizer_table.h), right before "-gptq": "int4-g64-imatrix-gptq".
  const QuantizerMethod* quantizer = &quantizer_for(mq::Search::none);
  for (const QuantizerMethod& q : quantizer_table())
    if (!q.suffix.empty() && strip("-" + std::string(q.suffix))) {
      quantizer = &q;
      break;
    }
  r.search = quantizer->search;
  // An equivalence transform of the table (transform_table.h) sits right after the scheme: "int4-g128-awq-gptq".
  for (const TransformMethod& t : transform_table())
    if (strip("-" + std::string(t.suffix))) {
      r.transform = t.suffix;
      break;
    }
  r.scheme = mq::Scheme::parse(storage);
  if (const std::string why = quantizer->refuses(r.scheme); !why.empty()) throw mq::UsageError(fmt::format("scheme {}: {}", name, why));
  if (r.gptq && !quantizer->with_gptq)
    throw mq::UsageError(fmt::format("scheme {}: -{}-gptq is not a recipe (GPTQ runs the -search or -imatrix grid inside, not -{})",
                                     name, quantizer->suffix, quantizer->suffix));
  if (r.scheme.is_kquant()) {
    if (r.search == mq::Search::plain)  // named: the plain name already is the plain search
      throw mq::UsageError(fmt::format("scheme {}: the K families always search their scales; drop -search (-imatrix "
                                       "weights the search by importance)", name));
    if (r.search == mq::Search::none) r.search = mq::Search::plain;
  }
  if (r.act == mq::ActMode::bf16 && r.scheme.kind == mq::Kind::fp32)
    throw mq::UsageError(fmt::format("scheme {}: +bf16 rounds the activations of a stored (quantized) scheme; fp32 Linears stay fp32", name));
  if (r.gptq && !r.scheme.is_integer() && !r.scheme.is_kquant())
    throw mq::UsageError(fmt::format("scheme {}: GPTQ needs an integer or K scheme", name));
  if (!r.transform.empty())
    if (const std::string why = find_transform(r.transform)->refuses(r.scheme, r.act); !why.empty())
      throw mq::UsageError(fmt::format("scheme {}: {}", name, why));
  const bool dynamic = mq::is_dynamic(r.act);
  if (dynamic && !mq::supports_dynamic(r.scheme))
    throw mq::UsageError(fmt::format("scheme {}: dynamic {} activations ({}) need integer or K weights", name,
                                     r.act == mq::ActMode::dynamic_int8 ? "int8" : "16-bit",
                                     r.act == mq::ActMode::dynamic_int8 ? "+a8" : "+a16"));
  return r;
}

std::string LinearRecipe::name() const {
  // A K family's plain name already is the plain search.
  const std::string_view suffix = search == mq::Search::plain && scheme.is_kquant() ? "" : quantizer().suffix;
  std::string out = scheme.name();
  for (const std::string_view part : {std::string_view(transform), suffix, std::string_view(gptq ? "gptq" : "")})
    if (!part.empty()) out.append("-").append(part);
  return out.append(act_suffix(act));
}

PhaseRecipe PhaseRecipe::parse(const std::string& name) {
  PhaseRecipe r;
  const auto mode = std::find_if(std::begin(kActNames), std::end(kActNames), [&](const ActName& a) { return a.suffix == name; });
  if (name == "weight-only") r.act = mq::ActMode::weight_only;
  else if (mode != std::end(kActNames)) r.act = mode->act;
  else {
    r.recipe = LinearRecipe::parse(name);
    // GPTQ calibrates each Linear on the inputs the quantized model feeds it, which a second copy per phase
    // would make ambiguous.
    if (r.recipe->gptq)
      throw mq::UsageError(fmt::format("phase recipe {}: a phase's own stored copy is round-to-nearest (no -gptq)", mq::clip_text(name)));
    if (!r.recipe->transform.empty())
      throw mq::UsageError(fmt::format("phase recipe {}: a phase's own stored copy is round-to-nearest (no -{})", mq::clip_text(name),
                                       r.recipe->transform));
    // -imatrix needs the Linear's calibration Hessian, which (like GPTQ's) belongs to the Linear's own recipe.
    if (!r.recipe->quantizer().phase_copy)
      throw mq::UsageError(fmt::format("phase recipe {}: a phase's own stored copy takes no calibration statistics (no -{})",
                                       mq::clip_text(name), r.recipe->quantizer().suffix));
  }
  return r;
}

std::string PhaseRecipe::name() const {
  if (recipe) return recipe->name();
  if (!act) return "";
  return *act == mq::ActMode::weight_only ? "weight-only" : std::string(act_suffix(*act));
}

bool PlanRule::matches(int layer, LinearKind k) const {
  if (kind && *kind != k) return false;
  return layers.empty() || std::find(layers.begin(), layers.end(), layer) != layers.end();
}

namespace {

// "[prefill=X,decode=Y]" (either part may be left out, not both), parsed into a PhasePlan.
PhasePlan parse_phases(const std::string& spec, const std::string& name) {
  const auto bad = [&](const std::string& why) {
    return mq::UsageError(fmt::format("scheme {}: {} (phase splits look like int4-g64[prefill=+a8,decode=+bf16])", mq::clip_text(name), why));
  };
  PhasePlan pp;
  bool any = false;
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string part = spec.substr(at, comma - at);
    const size_t eq = part.find('=');
    if (eq == std::string::npos) throw bad(fmt::format("\"{}\" is not phase=recipe", mq::clip_text(part)));
    const std::string phase = part.substr(0, eq), what = part.substr(eq + 1);
    PhaseRecipe* slot = phase == "prefill" ? &pp.prefill : phase == "decode" ? &pp.decode : nullptr;
    if (!slot) throw bad(fmt::format("unknown phase \"{}\" (prefill or decode)", mq::clip_text(phase)));
    if (slot->overrides()) throw bad(fmt::format("{} is given twice", phase));
    *slot = PhaseRecipe::parse(what);
    any = true;
    at = comma + 1;
  }
  if (!any) throw bad("empty phase list");
  return pp;
}

}  // namespace

QuantPlan QuantPlan::uniform(const std::string& name, int n_layer) {
  QuantPlan p;
  p.id = name;
  std::string recipe = name;
  if (const size_t open = recipe.find('['); open != std::string::npos) {
    if (!recipe.ends_with("]")) throw mq::UsageError(fmt::format("scheme {}: a phase split ends with ']'", mq::clip_text(name)));
    const std::string spec = recipe.substr(open + 1, recipe.size() - open - 2);
    recipe.resize(open);
    QuantPlan split = uniform(recipe, n_layer);
    split.id = name;
    split.phases = parse_phases(spec, name);
    if (split.base.keeps_fp32())
      throw mq::UsageError(fmt::format("scheme {}: a phase split needs a stored (quantized or 16-bit) scheme before the brackets", mq::clip_text(name)));
    // Every phase's recipe must run: "+a8" over int3 codes fails here, not in the middle of a run.
    for (const Phase ph : {Phase::prefill, Phase::decode}) (void)split.recipe_for(0, LinearKind::qkv, ph);
    if (!split.phases->shares_codes() && split.any_gptq())
      throw mq::UsageError(fmt::format("scheme {}: a phase with its own stored copy needs a round-to-nearest base recipe", mq::clip_text(name)));
    return split;
  }
  constexpr std::string_view kActOrder = "-act-order";
  if (const size_t at = recipe.find(kActOrder); at != std::string::npos) {
    // Act-order reorders GPTQ's columns; it means nothing to round-to-nearest, so it only follows "-gptq".
    const std::string before = recipe.substr(0, at), after = recipe.substr(at + kActOrder.size());
    const bool mode_after =
        after.empty() || std::any_of(std::begin(kActNames), std::end(kActNames), [&](const ActName& a) { return a.suffix == after; });
    if (!before.ends_with("-gptq") || !mode_after)
      throw mq::UsageError(fmt::format("scheme {}: -act-order is a GPTQ setting and follows -gptq (e.g. int3-g64-gptq-act-order)",
                                       mq::clip_text(name)));
    recipe = before + after;
    p.gptq.options.act_order = true;
  }
  if (std::optional<KMixPlan> mix = kquant_mix(recipe, n_layer)) {
    p.base = LinearRecipe::parse(mix->base);
    for (MixRule& m : mix->rules) p.rules.push_back({std::move(m.layers), m.kind, LinearRecipe::parse(m.recipe)});
    p.embedding = mq::Scheme::fp16();
    return p;
  }
  p.base = LinearRecipe::parse(recipe);
  p.embedding = p.base.keeps_fp32() ? mq::Scheme::fp32() : mq::Scheme::fp16();
  return p;
}

LinearRecipe QuantPlan::recipe_for(int layer, LinearKind kind) const {
  const LinearRecipe* r = &base;
  for (const PlanRule& rule : rules)
    if (rule.matches(layer, kind)) r = &rule.recipe;
  return *r;
}

LinearRecipe QuantPlan::recipe_for(int layer, LinearKind kind, Phase phase) const {
  LinearRecipe r = recipe_for(layer, kind);
  if (!phases) return r;
  const PhaseRecipe& pr = phase == Phase::prefill ? phases->prefill : phases->decode;
  if (pr.recipe) return *pr.recipe;
  if (!pr.act) return r;
  if (r.keeps_fp32()) return r;  // an fp32 Linear of a mixed map has no other mode
  r.act = *pr.act;
  try {
    return LinearRecipe::parse(r.name());  // checks that the mode can run the scheme
  } catch (const mq::UsageError& e) {
    throw mq::UsageError(fmt::format("plan {}: {} in the {} phase: {}", mq::clip_text(id), linear_kind_name(kind), phase_name(phase), e.what()));
  }
}

std::vector<LinearRecipe> QuantPlan::recipes() const {
  std::vector<LinearRecipe> r = {base};
  for (const PlanRule& rule : rules) r.push_back(rule.recipe);
  return r;
}

bool QuantPlan::any_gptq() const {
  return base.gptq || std::any_of(rules.begin(), rules.end(), [](const PlanRule& r) { return r.recipe.gptq; });
}

bool QuantPlan::needs_calibration() const {
  return base.needs_calibration() ||
         std::any_of(rules.begin(), rules.end(), [](const PlanRule& r) { return r.recipe.needs_calibration(); });
}

bool QuantPlan::is_identity() const {
  return base.keeps_fp32() && embedding.kind == mq::Kind::fp32 &&
         std::all_of(rules.begin(), rules.end(), [](const PlanRule& r) { return r.recipe.keeps_fp32(); });
}

void QuantPlan::validate(const ModelConfig& c) const {
  const std::string id = mq::clip_text(this->id);  // a config_id from a file can be 40 KB long
  if (embedding.kind != mq::Kind::fp32 && embedding.kind != mq::Kind::fp16)
    throw mq::UsageError(fmt::format("plan {}: the embedding is stored in fp32 or fp16, not {}", id, embedding.name()));
  for (const PlanRule& r : rules)
    for (int l : r.layers)
      if (l < 0 || l >= c.n_layer)
        throw mq::UsageError(fmt::format("plan {}: layer {} is out of range (the model has layers 0-{})", id, l, c.n_layer - 1));
  // Every Linear's shape in the recipe it gets: (out, in) per kind.
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < kLinearKinds; ++k) {
      std::vector<LinearRecipe> rs = {recipe_for(l, static_cast<LinearKind>(k))};
      if (phases)  // each phase's recipe too (throws when a phase's mode cannot run this Linear's scheme)
        for (const Phase ph : {Phase::prefill, Phase::decode}) rs.push_back(recipe_for(l, static_cast<LinearKind>(k), ph));
      for (const LinearRecipe& r : rs) try {
          r.scheme.check_shape(shape[k].first, shape[k].second);
        } catch (const mq::UsageError& e) {
          throw mq::UsageError(fmt::format("plan {}: layer {} {} in {}: {}", id, l, linear_kind_name(static_cast<LinearKind>(k)),
                                           r.name(), e.what()));
        }
    }
}

nlohmann::json QuantPlan::to_json() const {
  nlohmann::json groups = nlohmann::json::array(), tensors = nlohmann::json::array();
  for (const PlanRule& r : rules) {
    nlohmann::json e = {{"quant", r.recipe.name()}};
    if (!r.layers.empty()) e["layers"] = r.layers;
    if (r.kind) e["match"] = linear_kind_name(*r.kind);
    (r.kind ? tensors : groups).push_back(e);
  }
  nlohmann::json j = {{"config_id", id},
                      {"default", base.name()},
                      {"layer_groups", groups},
                      {"tensors", tensors},
                      {"embedding", embedding.name()},
                      {"gptq",
                       {{"calibration_windows", gptq.calibration_windows}, {"percdamp", gptq.options.percdamp},
                        {"block", gptq.options.block}, {"act_order", gptq.options.act_order}, {"sequential", gptq.sequential}}}};
  if (phases) {
    nlohmann::json ph = nlohmann::json::object();
    if (phases->prefill.overrides()) ph["prefill"] = phases->prefill.name();
    if (phases->decode.overrides()) ph["decode"] = phases->decode.name();
    j["phases"] = ph;
  }
  return j;
}

namespace {

// Reads a field of a JSON object with its type checked, or mq::UsageError naming where it is.
template <class T>
T field(const nlohmann::json& o, const char* key, const std::string& where) {
  try {
    return o.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw mq::UsageError(fmt::format("{}: \"{}\" is missing or has the wrong type", where, key));
  }
}

// An integer in [lo, hi], or mq::UsageError naming where it is. Not get<int>(): it truncates
// 4294967296 to layer 0 and 2.5 to 2 without a word, and a float beyond int is undefined behaviour.
int64_t int_field(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi) {
  try {
    return mq::json_int(v, what, lo, hi);
  } catch (const mq::UsageError&) {
    throw;
  } catch (const mq::Error& e) {
    throw mq::UsageError(e.what());
  }
}

// "layers": a non-empty array of layer numbers (the model's range is checked by validate()).
std::vector<int> layers_field(const nlohmann::json& o, const std::string& where) {
  const auto it = o.find("layers");
  if (it == o.end() || !it->is_array()) throw mq::UsageError(fmt::format("{}: \"layers\" is missing or is not an array", where));
  if (it->empty()) throw mq::UsageError(fmt::format("{}: \"layers\" is empty", where));
  std::vector<int> out;
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i)
    out.push_back(static_cast<int>(int_field((*it)[i], fmt::format("{}: layers[{}]", where, i), 0, kMaxLayers - 1)));
  return out;
}

void only_keys(const nlohmann::json& o, std::initializer_list<const char*> keys, const std::string& where) {
  if (!o.is_object()) throw mq::UsageError(fmt::format("{}: expected a JSON object", where));
  for (const auto& item : o.items()) {
    const std::string& k = item.key();  // a plain reference: clang 14 cannot capture a structured binding
    if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; }))
      throw mq::UsageError(fmt::format("{}: unknown key \"{}\" (known: {})", where, mq::clip_text(k), fmt::join(keys, ", ")));
  }
}

LinearRecipe recipe_named(const std::string& name, const std::string& where) {
  try {
    return LinearRecipe::parse(name);
  } catch (const mq::UsageError& e) {
    throw mq::UsageError(fmt::format("{}: {}", where, e.what()));
  }
}

}  // namespace

QuantPlan QuantPlan::from_json(const nlohmann::json& j, const std::string& where) {
  only_keys(j, {"config_id", "default", "layer_groups", "tensors", "embedding", "gptq", "phases"}, where);
  QuantPlan p;
  p.id = field<std::string>(j, "config_id", where);
  // The id names result rows, files and trial folders (sweep, energy, mixed): it must be a safe file name.
  mq::check_path_name(p.id, where + ": config_id");
  p.base = recipe_named(field<std::string>(j, "default", where), where + " default");
  std::set<int> grouped;
  if (j.contains("layer_groups")) {
    const auto& groups = j.at("layer_groups");
    if (!groups.is_array()) throw mq::UsageError(fmt::format("{}: \"layer_groups\" must be an array", where));
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string w = fmt::format("{} layer_groups[{}]", where, i);
      only_keys(groups[i], {"layers", "quant"}, w);
      PlanRule r;
      r.layers = layers_field(groups[i], w);
      for (int l : r.layers)
        if (!grouped.insert(l).second) throw mq::UsageError(fmt::format("{}: layer {} is already in an earlier group", w, l));
      r.recipe = recipe_named(field<std::string>(groups[i], "quant", w), w);
      p.rules.push_back(std::move(r));
    }
  }
  if (j.contains("tensors")) {
    const auto& tensors = j.at("tensors");
    if (!tensors.is_array()) throw mq::UsageError(fmt::format("{}: \"tensors\" must be an array", where));
    std::set<int> seen;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string w = fmt::format("{} tensors[{}]", where, i);
      only_keys(tensors[i], {"match", "layers", "quant"}, w);
      PlanRule r;
      const std::string kind = field<std::string>(tensors[i], "match", w);
      r.kind = parse_linear_kind(kind);
      if (!r.kind) throw mq::UsageError(fmt::format("{}: unknown tensor kind \"{}\" (known: qkv, attn_out, mlp_up, mlp_down)", w, mq::clip_text(kind)));
      if (tensors[i].contains("layers")) r.layers = layers_field(tensors[i], w);
      r.recipe = recipe_named(field<std::string>(tensors[i], "quant", w), w);
      p.rules.push_back(std::move(r));
    }
  }
  if (j.contains("embedding")) {
    const std::string e = field<std::string>(j, "embedding", where);
    if (e != "fp32" && e != "fp16") throw mq::UsageError(fmt::format("{}: \"embedding\" is fp32 or fp16, not \"{}\"", where, mq::clip_text(e)));
    p.embedding = mq::Scheme::parse(e);
  } else {
    p.embedding = p.is_identity() ? mq::Scheme::fp32() : mq::Scheme::fp16();
  }
  if (j.contains("gptq")) {
    const std::string w = where + " gptq";
    const auto& g = j.at("gptq");
    only_keys(g, {"calibration_windows", "percdamp", "block", "act_order", "sequential"}, w);
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    if (g.contains("calibration_windows"))
      p.gptq.calibration_windows = static_cast<int>(int_field(g["calibration_windows"], w + ": calibration_windows", 1, kIntMax));
    if (g.contains("percdamp")) {
      // 1e999 parses to inf: a damping that turns every Hessian into inf.
      const nlohmann::json& d = g["percdamp"];
      if (!d.is_number() || !std::isfinite(d.get<double>()) || !(d.get<double>() > 0))
        throw mq::UsageError(fmt::format("{}: percdamp must be a finite positive number, got {}", w, mq::json_summary(d)));
      p.gptq.options.percdamp = d.get<double>();
    }
    if (g.contains("block")) p.gptq.options.block = int_field(g["block"], w + ": block", 1, kIntMax);
    if (g.contains("act_order")) p.gptq.options.act_order = field<bool>(g, "act_order", w);
    if (g.contains("sequential")) p.gptq.sequential = field<bool>(g, "sequential", w);
  }
  if (j.contains("phases")) {
    const std::string w = where + " phases";
    const auto& ph = j.at("phases");
    only_keys(ph, {"prefill", "decode"}, w);
    if (ph.empty()) throw mq::UsageError(fmt::format("{}: give \"prefill\" and/or \"decode\"", w));
    PhasePlan pp;
    for (const char* k : {"prefill", "decode"})
      if (ph.contains(k)) {
        const std::string name = field<std::string>(ph, k, w);
        try {
          (std::string(k) == "prefill" ? pp.prefill : pp.decode) = PhaseRecipe::parse(name);
        } catch (const mq::UsageError& e) {
          throw mq::UsageError(fmt::format("{} {}: {}", w, k, e.what()));
        }
      }
    p.phases = pp;
    if (!pp.shares_codes() && p.any_gptq())
      throw mq::UsageError(fmt::format("{}: a phase with its own stored copy needs round-to-nearest recipes (no -gptq)", w));
  }
  return p;
}

QuantPlan read_quant_map(const std::string& path, const std::string& where) {
  // The one JSON file reader: size refused before reading, depth, duplicates, memory; errors name the path.
  return QuantPlan::from_json(mq::read_json_file(path, kMaxQuantMapBytes), where);
}

}  // namespace minigpt
