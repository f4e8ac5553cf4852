// The sweep's pure pieces: the Pareto frontier on hand-made points, the roofline bound lookup,
// README block replacement, and the committed experiment README against its results.json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "experiments/ceilings.h"
#include "experiments/experiment_io.h"
#include "miniquant/util/io.h"
#include "experiments/pareto.h"
#include "experiments/sweep.h"
#include "experiments/sweep_report.h"
#include "temp_dir.h"

using namespace mqexp;

TEST_CASE("Pareto frontier: lower-left points, ties, failures") {
  // (bytes, ppl):        a: big, best   b: dominated by a   c: small, worse   d: smallest, worst
  //                      e: duplicate of c (both stay on)   f: failed (NaN)   g: same bytes as a, worse ppl
  const std::vector<std::pair<double, double>> pts = {{100, 10.0}, {120, 10.5}, {30, 11.0}, {10, 20.0},
                                                      {30, 11.0},  {5, NAN},    {100, 10.2}};
  const std::vector<bool> on = mqexp::pareto_frontier(pts);
  CHECK(on == std::vector<bool>{true, false, true, true, true, false, false});
  CHECK(mqexp::pareto_frontier({}).empty());
  CHECK(mqexp::pareto_frontier({{1, 1}}) == std::vector<bool>{true});
  // A single point that beats everything on both axes leaves only itself.
  CHECK(mqexp::pareto_frontier({{3, 3}, {1, 1}, {2, 5}, {5, 2}}) == std::vector<bool>{false, true, false, false});

  std::vector<mqexp::SchemeRow> rows(3);
  const auto ok_row = [](const char* name, long long bytes, double ppl) {
    mqexp::SchemeRow r;
    r.scheme = name;
    r.ok = true;
    r.quality = mqexp::Quality{};
    r.quality->ppl = ppl;
    r.footprint.bytes = bytes;
    return r;
  };
  rows[0] = ok_row("a", 10, 2.0);
  rows[1].scheme = "b";
  rows[1].error = "x";
  rows[2] = ok_row("c", 20, 2.5);
  mqexp::mark_pareto(rows);
  CHECK(rows[0].on_pareto_frontier);
  CHECK_FALSE(rows[1].on_pareto_frontier);
  CHECK_FALSE(rows[2].on_pareto_frontier);
}

TEST_CASE("roofline bound: the level the working set fits in, and the lower of bandwidth and peak") {
  const nlohmann::json c = {
      {"threads", {1, 2}},
      {"levels", {{{"name", "L1"}, {"bytes", 49152}, {"shared", false}},
                  {{"name", "L2"}, {"bytes", 1 << 20}, {"shared", false}},
                  {{"name", "L3"}, {"bytes", 32 << 20}, {"shared", true}}}},
      {"ceilings",
       {{{"kind", "compute"}, {"datatype", "fp32"}, {"threads", 1}, {"median", 100.0}},
        {{"kind", "compute"}, {"datatype", "fp32"}, {"threads", 2}, {"median", 200.0}},
        {{"kind", "bandwidth"}, {"level", "L2"}, {"threads", 1}, {"median", 50.0}},
        {{"kind", "bandwidth"}, {"level", "L3"}, {"threads", 2}, {"median", 40.0}},
        {{"kind", "bandwidth"}, {"level", "DRAM"}, {"threads", 2}, {"median", 10.0}},
        {{"kind", "bandwidth"}, {"level", "L1"}, {"threads", 2}, {"median", 400.0}}}}};
  CHECK(mqexp::level_for(c, 40000, 1) == "L1");
  CHECK(mqexp::level_for(c, 60000, 1) == "L2");
  CHECK(mqexp::level_for(c, 1.5 * (1 << 20), 2) == "L2");  // private L2: 2 threads hold 2 MiB
  CHECK(mqexp::level_for(c, 1.5 * (1 << 20), 1) == "L3");
  CHECK(mqexp::level_for(c, 64.0 * (1 << 20), 2) == "DRAM");
  mqexp::Bound b = mqexp::roofline_bound(c, 0.5, 100e6, 2);  // DRAM: 0.5 FLOP/B x 10 GB/s = 5 GFLOP/s < 200
  CHECK(b.level == "DRAM");
  CHECK(b.attainable == doctest::Approx(5e9));
  CHECK(b.ceiling == "DRAM read bandwidth (2 threads)");
  b = mqexp::roofline_bound(c, 100.0, 16e6, 2);  // L3: 100 x 40 = 4000 > 200: compute-bound
  CHECK(b.attainable == doctest::Approx(200e9));
  CHECK(b.ceiling == "fp32 peak (2 threads)");
  b = mqexp::roofline_bound(c, 1.0, 80e3, 3);  // 3 threads: the closest measured count is 2, L1 at 2 threads
  CHECK(b.level == "L1");
  CHECK_THROWS(mqexp::roofline_bound(c, 1.0, 30e3, 1));  // no L1 figure for 1 thread

  // An int8-activation dot is bounded by the int8 peak, not the fp32 one.
  nlohmann::json ci = c;
  ci["ceilings"].push_back({{"kind", "compute"}, {"datatype", "int8"}, {"threads", 2}, {"median", 800.0}});
  b = mqexp::roofline_bound(ci, 100.0, 16e6, 2, "int8");  // L3: 4000 > 800
  CHECK(b.attainable == doctest::Approx(800e9));
  CHECK(b.ceiling.find("int8") != std::string::npos);
  CHECK(mqexp::roofline_bound(ci, 100.0, 16e6, 2).attainable == doctest::Approx(200e9));
}

TEST_CASE("ceilings compared with a reference run: same CPU within tolerance, or a warning naming what moved") {
  auto run = [](int model, double fma, double dram) {
    return nlohmann::json{{"date", "2026-11-20"},
                          {"machine", {{"cpu_model", "AMD EPYC"}, {"cpu_family", 25}, {"cpu_model_number", model}}},
                          {"ceilings", {{{"name", "fp32 FMA"}, {"threads", 1}, {"median", fma}},
                                        {{"name", "DRAM read"}, {"threads", 1}, {"median", dram}}}}};
  };
  nlohmann::json cmp = mqexp::compare_ceilings(run(17, 125, 20), run(17, 120, 21));
  CHECK(cmp["same_cpu"] == true);
  CHECK(cmp["differs"] == false);
  CHECK(cmp["ratios"].size() == 2);
  CHECK(mqexp::ceilings_warning(cmp).empty());

  cmp = mqexp::compare_ceilings(run(17, 250, 20), run(17, 120, 21));  // 2.08x on one ceiling
  CHECK(cmp["differs"] == true);
  CHECK(cmp["summary"].get<std::string>().find("fp32 FMA") != std::string::npos);
  CHECK(cmp["summary"].get<std::string>().find("DRAM") == std::string::npos);
  CHECK_FALSE(mqexp::ceilings_warning(cmp).empty());

  cmp = mqexp::compare_ceilings(run(68, 125, 20), run(17, 125, 20));  // same numbers, another CPU model
  CHECK(cmp["same_cpu"] == false);
  CHECK(cmp["differs"] == true);
  CHECK(mqexp::ceilings_warning(cmp).find("model 68") != std::string::npos);

  cmp = mqexp::compare_ceilings(run(17, 125, 20), nlohmann::json::object());  // nothing to compare with
  CHECK(cmp["differs"] == true);
}

TEST_CASE("README generated block: replaced between markers, appended when missing") {
  const std::string dir = mqtest::temp_path("mq_test", "mq_test_readme");
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/README.md";
  std::filesystem::remove(p);
  mqexp::update_generated_block(p, "first\n", "Title");
  std::string t = mq::read_file(p);
  CHECK(t.rfind("# Title\n", 0) == 0);
  CHECK(mqexp::generated_block(t) == "first\n");
  mq::write_file_atomic(p, "# Mine\n\nprose before\n\n" + t.substr(t.find("<!--")) + "\nprose after\n");
  mqexp::update_generated_block(p, "second\nline\n", "Title");
  t = mq::read_file(p);
  CHECK(mqexp::generated_block(t) == "second\nline\n");
  CHECK(t.find("prose before") != std::string::npos);
  CHECK(t.find("prose after") != std::string::npos);
  CHECK(t.find("first") == std::string::npos);
  CHECK(mqexp::generated_block("no markers") == "");
}

TEST_CASE("the committed sweep README is the rendering of the committed results.json") {
  const std::string dir = MQ_SOURCE_DIR "/experiments/26-quant-curve";
  REQUIRE(std::filesystem::exists(dir + "/results.json"));
  const nlohmann::json results = mqexp::read_json(dir + "/results.json");
  const nlohmann::json manifest = mqexp::read_json(dir + "/manifest.json");
  const mqexp::SweepResults typed = mqexp::sweep_results_from_json(results);
  CHECK(mqexp::generated_block(mq::read_file(dir + "/README.md")) == mqexp::sweep_readme_block(typed, manifest));
  // The typed form is lossless: results.json is exactly what to_json writes back.
  CHECK(mqexp::to_json(typed) == results);
  // The schemes the run asked for (its manifest: the default list, or a --schemes set), in order, each with its
  // measured fields: a consistency check within what one run wrote, so `run.sh --schemes lab02` passes too.
  const std::vector<std::string> asked = manifest.at("schemes").get<std::vector<std::string>>();
  REQUIRE(results["schemes"].size() >= asked.size());
  for (size_t i = 0; i < asked.size(); ++i) {
    const auto& r = results["schemes"][i];
    CHECK(r["scheme"] == asked[i]);
    CHECK(r["status"] == "ok");
    for (const char* k : {"ppl", "verb_tense_accuracy", "bytes", "bytes_linear", "bits_per_weight", "decode_gflops"})
      CHECK(r[k].get<double>() > 0);
  }
}

TEST_CASE("results JSON: margins and the divergence against fp32 round-trip, accuracies carry Wilson intervals") {
  SchemeRow r;
  r.scheme = "int3-g64";
  r.storage_scheme = "int3-g64";
  r.method = "rtn";
  r.ok = true;
  Quality q;
  q.ppl = 15.4;
  q.ppl_floor = 14.9;
  q.test_tokens = 1000;
  q.verb_tense = {97, 100};
  q.by_construction["adverb_cue"] = {50, 50};
  q.margin = {100, 5.5, 2.4, 1.9};
  q.margin_by_construction["adverb_cue"] = {50, 6.0, 3.0, 2.9};
  Divergence d;
  d.reference = "fp32";
  d.tokens = 1000;
  d.windows = 16;
  d.kl_mean = 0.0043;
  d.kl_low = 0.004;
  d.kl_high = 0.0046;
  d.kl_median = 0.002;
  d.kl_p99 = 0.03;
  d.kl_max = 0.2;
  d.top1 = 0.97;
  d.ppl_reference = 15.28;
  d.dnll_mean = 0.0078;
  d.dnll_low = 0.006;
  d.dnll_high = 0.0096;
  d.dppl = 0.12;
  d.dppl_low = 0.09;
  d.dppl_high = 0.15;
  d.margin_slots = 100;
  d.dmargin_mean = -0.1;
  d.dmargin_low = -0.2;
  d.dmargin_high = 0.0;
  d.flipped_to_wrong = 3;
  q.divergence = d;
  r.quality = q;
  const nlohmann::json j = to_json(r);
  CHECK(j["divergence"]["kl"]["ci95"][1] == 0.0046);
  CHECK(j["verb_tense"]["overall"]["ci95"][0].get<double>() == doctest::Approx(0.9155).epsilon(1e-3));  // Wilson 97/100
  CHECK(j["verb_tense"]["margin"]["overall"]["p1"] == 2.4);
  const SchemeRow back = scheme_row_from_json(j);
  REQUIRE(back.quality);
  REQUIRE(back.quality->divergence);
  CHECK(back.quality->divergence->kl_mean == 0.0043);
  CHECK(back.quality->divergence->flipped_to_wrong == 3);
  CHECK(back.quality->margin_by_construction.at("adverb_cue").median == 6.0);
  CHECK(to_json(back) == j);
}

TEST_CASE("the sweep README says where a family's +a8 rows ran another path than the others' (int3 without VBMI), and only there") {
  const std::string dir = MQ_SOURCE_DIR "/experiments/26-quant-curve";
  REQUIRE(std::filesystem::exists(dir + "/results.json"));
  mqexp::SweepResults res = mqexp::sweep_results_from_json(mqexp::read_json(dir + "/results.json"));
  nlohmann::json manifest = mqexp::read_json(dir + "/manifest.json");
  const std::string warning = "The int3 `+a8` rows ran the portable twin";
  const auto it = std::find_if(res.schemes.begin(), res.schemes.end(), [](const auto& r) { return r.scheme == "int4-g64+a8"; });
  REQUIRE(it != res.schemes.end());
  mqexp::SchemeRow int3 = *it;
  int3.scheme = "int3-g64+a8";
  int3.storage_scheme = "int3-g64";  // the family is read from the stored weights, not the row's name
  manifest["build"]["int8_activation_kernel"] = "vnni";
  manifest["build"]["int8_activation_kernel_per_family"] = {{"int8", "vnni"}, {"int4", "vnni"}, {"int3", "portable"}, {"int2", "vnni"}};
  // No int3 +a8 row: nothing to say.
  CHECK(mqexp::sweep_readme_block(res, manifest).find(warning) == std::string::npos);
  res.schemes.push_back(int3);
  CHECK(mqexp::sweep_readme_block(res, manifest).find(warning) != std::string::npos);
  // A row named like int3 whose weights are stored in another family says nothing of int3's path.
  res.schemes.back().storage_scheme = "int4-g64";
  CHECK(mqexp::sweep_readme_block(res, manifest).find(warning) == std::string::npos);
  res.schemes.back().storage_scheme = "int3-g64";
  // int2 on another path (a hypothetical build): its rows are named the same way.
  manifest["build"]["int8_activation_kernel_per_family"]["int2"] = "avx2";
  mqexp::SchemeRow int2 = int3;
  int2.scheme = "int2-g64+a8";
  int2.storage_scheme = "int2-g64";
  res.schemes.push_back(int2);
  CHECK(mqexp::sweep_readme_block(res, manifest).find("The int2 `+a8` rows ran the AVX2 form") != std::string::npos);
  res.schemes.pop_back();
  manifest["build"]["int8_activation_kernel_per_family"]["int2"] = "vnni";
  // int3 on the same path as the others (a VBMI CPU), or a manifest from before the field: nothing either.
  manifest["build"]["int8_activation_kernel_per_family"]["int3"] = "vnni";
  CHECK(mqexp::sweep_readme_block(res, manifest).find(warning) == std::string::npos);
  manifest["build"].erase("int8_activation_kernel_per_family");
  CHECK(mqexp::sweep_readme_block(res, manifest).find(warning) == std::string::npos);
}
