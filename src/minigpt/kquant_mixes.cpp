// The K mixes' per-tensor rules (kquant_mixes.h).
#include "minigpt/kquant_mixes.h"

namespace minigpt {
namespace {

struct Mix {
  std::string_view name;
  std::string_view base;  // every Linear's type
  std::string_view bump;  // qkv and mlp_down where use_more_bits ("" : none)
};
const Mix kMixes[] = {{"q3_k_s", "q3_k", ""}, {"q4_k_m", "q4_k", "q6_k"}, {"q5_k_m", "q5_k", "q6_k"}};

}  // namespace

const std::vector<std::string_view>& kquant_mix_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (const Mix& m : kMixes) v.push_back(m.name);
    return v;
  }();
  return names;
}

bool use_more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

std::optional<KMixPlan> kquant_mix(const std::string& name, int n_layer) {
  for (const Mix& m : kMixes) {
    const std::string_view n = name;
    if (!n.starts_with(m.name) || (n.size() > m.name.size() && n[m.name.size()] != '-' && n[m.name.size()] != '+'))
      continue;
    const std::string suffix(n.substr(m.name.size()));
    KMixPlan p;
    p.base = std::string(m.base) + suffix;
    if (!m.bump.empty()) {
      std::vector<int> more;
      for (int l = 0; l < n_layer; ++l)
        if (use_more_bits(l, n_layer)) more.push_back(l);
      if (!more.empty())
        for (const LinearKind k : {LinearKind::qkv, LinearKind::mlp_down})
          p.rules.push_back({more, k, std::string(m.bump) + suffix});
    }
    return p;
  }
  return std::nullopt;
}

}  // namespace minigpt
