// K types in recipes and plans: the -search / -imatrix grammar, llama.cpp's mixes (q3_k_s, q4_k_m, q5_k_m)
// as per-tensor rules, and the 24 K maps of experiments/27-mixed-epi/configs_k (and the uniform ones' +a8 twins)
// against those rules.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "minigpt/kquant_mixes.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantizer_table.h"

using namespace minigpt;

TEST_CASE("recipe names: -search and -imatrix, the K families' default search, and what is refused") {
  struct Case {
    const char* name;
    mq::Search search;
    bool gptq;
    const char* printed;
  };
  for (const Case& c : {Case{"q4_k", mq::Search::plain, false, "q4_k"}, Case{"q4_k-imatrix", mq::Search::importance, false, "q4_k-imatrix"},
                        Case{"q2_k-gptq", mq::Search::plain, true, "q2_k-gptq"},
                        Case{"q6_k-imatrix-gptq", mq::Search::importance, true, "q6_k-imatrix-gptq"},
                        Case{"int2-g64-search-gptq", mq::Search::plain, true, "int2-g64-search-gptq"},
                        Case{"int3-g64-imatrix", mq::Search::importance, false, "int3-g64-imatrix"},
                        Case{"int4-g64-search+a8", mq::Search::plain, false, "int4-g64-search+a8"},
                        Case{"q5_k+bf16", mq::Search::plain, false, "q5_k+bf16"},
                        Case{"q4_k+a8", mq::Search::plain, false, "q4_k+a8"}, Case{"int4-g64", mq::Search::none, false, "int4-g64"},
                        Case{"q3_k-fisher", mq::Search::fisher, false, "q3_k-fisher"},
                        Case{"q4_k-fisher+a8", mq::Search::fisher, false, "q4_k-fisher+a8"}}) {
    CAPTURE(c.name);
    const LinearRecipe r = LinearRecipe::parse(c.name);
    CHECK(r.search == c.search);
    CHECK(r.gptq == c.gptq);
    CHECK(r.name() == c.printed);
    CHECK(r.needs_calibration() == (c.gptq || c.search == mq::Search::importance || c.search == mq::Search::fisher));
    CHECK(LinearRecipe::parse(r.name()) == r);
  }
  // -fisher weights the K search per weight: not an integer grid's, not GPTQ's, and a K name only once.
  for (const char* bad : {"q4_k-search", "fp16-search", "fp32-imatrix", "q4_k-gptq-search", "q7_k", "Q4_K", "bf16+a8", "int4-g64-fisher",
                          "fp16-fisher", "q4_k-fisher-gptq", "q4_k-fisher-imatrix", "q4_k-imatrix-fisher", "-fisher"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(LinearRecipe::parse(bad), mq::UsageError);
  }
  // A phase's own copy takes no calibration-weighted search.
  CHECK_THROWS_AS(PhaseRecipe::parse("q4_k-fisher"), mq::UsageError);
}

TEST_CASE("the quantizer table: every row is a recipe suffix, its flags decide what the parser takes, and its codes are the library's") {
  // Every mq::Search value has its row, and the rows are distinct.
  std::set<std::string_view> suffixes;
  for (const mq::Search s : {mq::Search::none, mq::Search::plain, mq::Search::importance, mq::Search::fisher, mq::Search::hqq})
    CHECK(quantizer_for(s).search == s);
  for (const QuantizerMethod& q : quantizer_table()) {
    CAPTURE(std::string(q.suffix));
    CHECK(suffixes.insert(q.suffix).second);
    CHECK(!q.title.empty());
    // On a scheme the row takes: the suffix parses to the row, prints back, and asks for calibration as its flags say.
    const std::string scheme = q.refuses(mq::Scheme::parse("int4-g64")).empty() ? "int4-g64" : "q4_k";
    REQUIRE(q.refuses(mq::Scheme::parse(scheme)).empty());
    const std::string name = q.suffix.empty() ? scheme : std::string(scheme).append("-").append(q.suffix);
    const LinearRecipe r = LinearRecipe::parse(name);
    CHECK(&r.quantizer() == &q);
    CHECK(r.needs_calibration() == (q.needs_hessian || q.needs_fisher));
    if (!(scheme == "q4_k" && q.search == mq::Search::plain)) CHECK(r.name() == name);
    // -gptq and a phase's own copy: taken exactly where the row allows them.
    if (q.with_gptq) CHECK(LinearRecipe::parse(name + "-gptq").gptq);
    else CHECK_THROWS_AS(LinearRecipe::parse(name + "-gptq"), mq::UsageError);
    if (q.phase_copy) CHECK(PhaseRecipe::parse(name).recipe);
    else CHECK_THROWS_AS(PhaseRecipe::parse(name), mq::UsageError);
  }
  // A row's codes are the library quantizer it configures, bit for bit (imatrix: diag(H) as column weights).
  const int64_t out = 8, in = 64;
  std::vector<float> w(static_cast<size_t>(out * in));  // (out, in)
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * (1 + i % 7));
  Eigen::MatrixXd h = Eigen::MatrixXd::Identity(in, in);  // (in, in)
  std::vector<float> diag(static_cast<size_t>(in));       // (in)
  for (int64_t j = 0; j < in; ++j) diag[static_cast<size_t>(j)] = static_cast<float>(h(j, j) = 1.0 + static_cast<double>(j % 5));
  const mq::Scheme s = mq::Scheme::parse("int3-g32");
  const std::string name = "w";
  const auto codes = [&](mq::Search search) { return quantizer_for(search).quantize({.weight = w.data(), .out = out, .in = in, .scheme = s, .hessian = &h, .fisher = nullptr, .name = name}); };
  CHECK(codes(mq::Search::none).codes == mq::quantize(w.data(), out, in, s, {.search = false}, name).codes);
  CHECK(codes(mq::Search::plain).codes == mq::quantize(w.data(), out, in, s, {.search = true}, name).codes);
  CHECK(codes(mq::Search::importance).codes == mq::quantize(w.data(), out, in, s, {.search = true, .importance = diag.data()}, name).codes);
  CHECK(codes(mq::Search::importance).scales == mq::quantize(w.data(), out, in, s, {.search = true, .importance = diag.data()}, name).scales);
  // The searches differ from round-to-nearest on this weight (else the checks above could not tell rows apart).
  CHECK(codes(mq::Search::plain).scales != codes(mq::Search::none).scales);
  CHECK(codes(mq::Search::importance).scales != codes(mq::Search::plain).scales);
}

TEST_CASE("llama.cpp's mixes on MiniGPT: q6_k for qkv and mlp_down where use_more_bits, the rest the base type") {
  CHECK(use_more_bits(2, 4));
  CHECK(use_more_bits(3, 4));
  CHECK_FALSE(use_more_bits(0, 4));
  CHECK_FALSE(use_more_bits(1, 4));
  // A 32-layer model: the first and last four, and every third from the fifth's neighbour on.
  std::set<int> more;
  for (int l = 0; l < 32; ++l)
    if (use_more_bits(l, 32)) more.insert(l);
  CHECK(more == std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31});

  const QuantPlan m = QuantPlan::uniform("q4_k_m");
  CHECK(m.id == "q4_k_m");
  CHECK(m.embedding == mq::Scheme::fp16());
  for (int l = 0; l < 4; ++l)
    for (const LinearKind k : {LinearKind::qkv, LinearKind::attn_out, LinearKind::mlp_up, LinearKind::mlp_down}) {
      CAPTURE(l);
      CAPTURE(linear_kind_name(k));
      const bool bumped = l >= 2 && (k == LinearKind::qkv || k == LinearKind::mlp_down);
      CHECK(m.recipe_for(l, k).name() == (bumped ? "q6_k" : "q4_k"));
      CHECK(QuantPlan::uniform("q5_k_m").recipe_for(l, k).name() == (bumped ? "q6_k" : "q5_k"));
      CHECK(QuantPlan::uniform("q3_k_s").recipe_for(l, k).name() == "q3_k");
      CHECK(QuantPlan::uniform("q4_k_m-imatrix-gptq").recipe_for(l, k).name() == (bumped ? "q6_k-imatrix-gptq" : "q4_k-imatrix-gptq"));
    }
  const QuantPlan ao = QuantPlan::uniform("q5_k_m-imatrix-gptq-act-order");
  CHECK(ao.gptq.options.act_order);
  CHECK(ao.needs_calibration());
  CHECK(QuantPlan::from_json(m.to_json()).to_json() == m.to_json());
  // A 12-layer model gets its own layers: 0 (i < 12/8), 10-11 (i >= 84/8), and 3, 6, 9 ((i - 1) % 3 == 2).
  const QuantPlan big = QuantPlan::uniform("q4_k_m", 12);
  for (int l = 0; l < 12; ++l) {
    CAPTURE(l);
    const bool more = l == 0 || l == 3 || l == 6 || l == 9 || l >= 10;
    CHECK(big.recipe_for(l, LinearKind::mlp_down).name() == (more ? "q6_k" : "q4_k"));
  }
  // A mix takes an activation mode for all its recipes: the K families have +a8.
  const QuantPlan a8 = QuantPlan::uniform("q4_k_m+a8");
  CHECK(a8.recipe_for(3, LinearKind::qkv).name() == "q6_k+a8");
  CHECK(a8.recipe_for(0, LinearKind::mlp_up).name() == "q4_k+a8");
  for (const char* bad : {"q4_k_mx", "q4_k_m-search", "q4_k_m+bf8"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(QuantPlan::uniform(bad), mq::UsageError);
  }
}

TEST_CASE("27-mixed-epi/configs_k: the source's 24 maps, each layer group in llama.cpp's rules for its K type") {
  // The source's matrix (../shared/references/mixed-quant-matrix.md) on MiniGPT: early = layer 0, middle =
  // layers 1-2, late = layer 3; Q8_0 is int8-g32 (the same layout). Every recipe carries the maps' quantizer.
  const std::string dir = MQ_SOURCE_DIR "/experiments/27-mixed-epi/configs_k";
  const std::string suffix = "-imatrix-gptq";
  const std::map<std::string, std::vector<std::string>> expected = {
      {"uniform-q2_k", {"q2_k", "q2_k", "q2_k"}},         {"uniform-q3_k_s", {"q3_k_s", "q3_k_s", "q3_k_s"}},
      {"uniform-q4_k_m", {"q4_k_m", "q4_k_m", "q4_k_m"}}, {"uniform-q5_k_m", {"q5_k_m", "q5_k_m", "q5_k_m"}},
      {"uniform-q6_k", {"q6_k", "q6_k", "q6_k"}},         {"uniform-q8_0", {"q8_0", "q8_0", "q8_0"}},
      {"mix_high_early", {"q6_k", "q4_k_m", "q3_k_s"}},   {"mix_high_late", {"q3_k_s", "q4_k_m", "q6_k"}},
      {"mix_high_middle", {"q3_k_s", "q6_k", "q3_k_s"}},  {"mix_gradient_down", {"q6_k", "q5_k_m", "q4_k_m"}},
      {"mix_gradient_up", {"q4_k_m", "q5_k_m", "q6_k"}},  {"mix_extreme_early", {"q8_0", "q4_k_m", "q2_k"}},
      {"mix_extreme_late", {"q2_k", "q4_k_m", "q8_0"}},   {"mix_bookend_high", {"q6_k", "q3_k_s", "q6_k"}},
      {"mix_bookend_low", {"q3_k_s", "q6_k", "q3_k_s"}},  {"mix_q5_q4", {"q5_k_m", "q4_k_m", "q4_k_m"}},
      {"mix_q4_q5", {"q4_k_m", "q4_k_m", "q5_k_m"}},      {"mix_q6_q4_q4", {"q6_k", "q4_k_m", "q4_k_m"}},
      {"mix_q4_q4_q6", {"q4_k_m", "q4_k_m", "q6_k"}},     {"mix_q4_q6_q4", {"q4_k_m", "q6_k", "q4_k_m"}},
      {"mix_q5_q3_q5", {"q5_k_m", "q3_k_s", "q5_k_m"}},   {"mix_q3_q5_q3", {"q3_k_s", "q5_k_m", "q3_k_s"}},
      {"mix_q6_q3_q4", {"q6_k", "q3_k_s", "q4_k_m"}},     {"mix_q4_q3_q6", {"q4_k_m", "q3_k_s", "q6_k"}},
  };
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;  // the folder's README
    const QuantPlan p = read_quant_map(entry.path().string(), entry.path().filename().string());
    CAPTURE(p.id);
    CHECK(entry.path().filename().string() == p.id + ".json");
    // A uniform map's `+a8` twin (issue 56: K types on llama.cpp's own contract, int8 activations): the same
    // recipes with the activation mode.
    const bool a8 = p.id.ends_with("+a8");
    const std::string base = a8 ? p.id.substr(0, p.id.size() - 3) : p.id;
    REQUIRE(expected.count(base) == 1);
    if (a8) CHECK(base.starts_with("uniform-"));
    seen.insert(p.id);
    CHECK(p.gptq.options.act_order);
    const int group_of[4] = {0, 1, 1, 2};
    for (int l = 0; l < 4; ++l)
      for (const LinearKind k : {LinearKind::qkv, LinearKind::attn_out, LinearKind::mlp_up, LinearKind::mlp_down}) {
        const std::string type = expected.at(base)[static_cast<size_t>(group_of[l])];
        const std::string want =
            (type == "q8_0" ? "int8-g32" + suffix : QuantPlan::uniform(type + suffix).recipe_for(l, k).name()) + (a8 ? "+a8" : "");
        CAPTURE(l);
        CAPTURE(linear_kind_name(k));
        CHECK(p.recipe_for(l, k).name() == want);
      }
  }
  CHECK(seen.size() == 24 + 6);  // the 24 maps and the six uniform ones' +a8 twins
}
