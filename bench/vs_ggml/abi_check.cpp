#include "abi_check.h"

#include <algorithm>
#include <cstring>

#include "miniquant/error.h"
#include "pairs.h"

namespace vsggml {
namespace {

AbiCheck same(std::string what, const std::string& headers, const std::string& library) {
  return {std::move(what), headers, library, headers == library};
}

}  // namespace

std::vector<AbiCheck> abi_checks(const Api& a, const std::string& header_version, const std::string& header_commit) {
  std::vector<AbiCheck> c;
  c.push_back(same("ggml_version()", header_version, a.ggml_version()));
  // The commits differ by construction (the package's build stamps its own checkout; the bundle is one squashed
  // commit), so they are recorded, not compared: the version and the layouts below are what the calls rely on.
  c.push_back({"ggml_commit() (recorded, not compared)", header_commit, a.ggml_commit(), true});
  // ggml_tensor_overhead() = sizeof(struct ggml_object) (32 bytes: two sizes, a pointer, an enum, 4 bytes of
  // padding; private to ggml.c) + sizeof(struct ggml_tensor): the layout whose fields (ne, buffer) we read.
  c.push_back(same("ggml_tensor_overhead() = 32 + sizeof(ggml_tensor)", std::to_string(32 + sizeof(ggml_tensor)),
                   std::to_string(a.ggml_tensor_overhead())));
  // ggml_threadpool_params is filled by the library: a larger struct there would write past ours. A guard after
  // it must stay untouched, and the fields must read back as ggml_threadpool_params_init documents them.
  struct Guarded {
    ggml_threadpool_params p;
    unsigned char guard[512];
  } g;
  std::memset(&g, 0xA5, sizeof g);
  a.ggml_threadpool_params_init(&g.p, 3);
  bool guard_ok = true;
  for (unsigned char b : g.guard) guard_ok &= b == 0xA5;
  c.push_back(same("ggml_threadpool_params_init: size and fields (n_threads 3, poll 50, guard intact)", "3 50 1",
                   std::to_string(g.p.n_threads) + " " + std::to_string(g.p.poll) + " " + std::to_string(guard_ok)));
  std::vector<ggml_type> seen;  // each ggml type once, though several pairs use it
  for (const Pair& p : pair_table()) {
    if (std::find(seen.begin(), seen.end(), p.type) != seen.end()) continue;
    seen.push_back(p.type);
    const std::string t = std::string(p.ggml_name);
    c.push_back(same("ggml_type_name(" + std::to_string(p.type) + ")", t, a.ggml_type_name(p.type)));
    c.push_back(same(t + ": ggml_blck_size, ggml_type_size", std::to_string(p.block_elems) + " " + std::to_string(p.block_bytes),
                     std::to_string(a.ggml_blck_size(p.type)) + " " + std::to_string(a.ggml_type_size(p.type))));
    // The traits struct the reference dequantizer (to_float) comes from: its fields must agree with the above.
    const ggml_type_traits* tr = a.ggml_get_type_traits(p.type);
    c.push_back(same(t + ": ggml_type_traits {type_name, blck_size, type_size, to_float set}",
                     t + " " + std::to_string(p.block_elems) + " " + std::to_string(p.block_bytes) + " 1",
                     std::string(tr->type_name) + " " + std::to_string(tr->blck_size) + " " + std::to_string(tr->type_size) +
                         " " + std::to_string(tr->to_float != nullptr)));
    c.push_back(same(t + ": quantizes without an importance matrix", "1", std::to_string(!a.ggml_quantize_requires_imatrix(p.type))));
  }
  // The activation types the references quantize with (verify.h): their blocks and reference quantizer.
  std::vector<ggml_type> acts;
  for (const Pair& p : pair_table()) {
    if (std::find(acts.begin(), acts.end(), p.act.type) != acts.end()) continue;
    acts.push_back(p.act.type);
    const ggml_type_traits* tr = a.ggml_get_type_traits(p.act.type);
    const Api::ActRows rows = a.act_rows(p.act.type);
    c.push_back(same(std::string(p.act.name) +
                         " (activations): name, block, reference quantizer and to_float (the traits', else the exported row functions)",
                     std::string(p.act.name) + " " + std::to_string(p.act.block) + " 1 1",
                     std::string(tr->type_name) + " " + std::to_string(tr->blck_size) + " " +
                         std::to_string(rows.from_float_ref != nullptr) + " " + std::to_string(rows.to_float != nullptr)));
  }
  return c;
}

void require_abi(const std::vector<AbiCheck>& checks) {
  for (const AbiCheck& k : checks)
    if (!k.ok) throw mq::Error("vs_ggml: ABI check failed: " + k.what + ": headers " + k.headers + ", library " + k.library);
}

nlohmann::json abi_json(const std::vector<AbiCheck>& checks) {
  nlohmann::json j = nlohmann::json::array();
  for (const AbiCheck& k : checks) j.push_back({{"check", k.what}, {"headers", k.headers}, {"library", k.library}, {"ok", k.ok}});
  return j;
}

}  // namespace vsggml
