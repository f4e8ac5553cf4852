// End to end through the CLI on a tiny model: `miniquant sweep` writes every scheme with every field,
// records a failing scheme and completes the rest, writes the figures; `miniquant roofline` writes
// its ceilings. int4-g256 fails for real on this width of 128 (256 does not divide it). A quant map
// is a sweep row and an eval flag with the same numbers; act-order is a scheme name as well as a flag.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "miniquant/util/io.h"
#include "minigpt/corpus/story.h"
#include "temp_dir.h"

namespace {

const std::string kDir = mqtest::temp_path("mq_test", "mq_test_sweep_cli");

std::string write(const std::string& name, const std::string& text) { return write_test_file(kDir, name, text); }

const std::string& tiny_checkpoint() {
  static const std::string path = train_tiny(kDir, R"({"vocab_size": 1963, "n_ctx": 32, "d_model": 128, "n_layer": 1, "n_head": 2, "d_ff": 512})", 3);
  return path;
}

// Ceilings by hand, so the test does not spend seconds measuring them.
std::string ceilings() {
  return write("ceilings.json", R"({"threads": [1, 2],
    "levels": [{"name": "L1", "bytes": 49152, "shared": false}, {"name": "L2", "bytes": 1048576, "shared": false},
               {"name": "L3", "bytes": 33554432, "shared": true}],
    "ceilings": [
      {"name": "fp32 FMA", "kind": "compute", "datatype": "fp32", "threads": 1, "median": 270, "low": 260, "high": 275, "reps": 7, "unit": "GFLOP/s"},
      {"name": "fp32 FMA", "kind": "compute", "datatype": "fp32", "threads": 2, "median": 540, "low": 500, "high": 550, "reps": 7, "unit": "GFLOP/s"},
      {"name": "L1 read", "kind": "bandwidth", "level": "L1", "threads": 2, "median": 900, "low": 800, "high": 950, "reps": 7, "unit": "GB/s", "working_set_bytes": 49152},
      {"name": "L2 read", "kind": "bandwidth", "level": "L2", "threads": 2, "median": 450, "low": 400, "high": 460, "reps": 7, "unit": "GB/s", "working_set_bytes": 1048576},
      {"name": "L3 read", "kind": "bandwidth", "level": "L3", "threads": 2, "median": 180, "low": 170, "high": 190, "reps": 7, "unit": "GB/s", "working_set_bytes": 16777216},
      {"name": "DRAM read", "kind": "bandwidth", "level": "DRAM", "threads": 2, "median": 30, "low": 28, "high": 31, "reps": 7, "unit": "GB/s", "working_set_bytes": 268435456}]})");
}

nlohmann::json load(const std::string& p) { return nlohmann::json::parse(mq::read_file(p)); }

}  // namespace

TEST_CASE("sweep on a tiny model: every scheme and field, a failure recorded, figures written") {
  const std::string out = kDir + "/sweep";
  std::filesystem::remove_all(out);
  const CliResult r = run_cli("sweep --model " + tiny_checkpoint() + " --out " + out + " --ceilings " + ceilings() +
                              " --calibration 4 --max-slots 60 --max-items 280 --ppl-tokens 3000 --rounds 1 --no-gpt2 --add-scheme int4-g64-asym --add-scheme int4-g256");
  INFO(r.out);
  CHECK(r.code == 1);  // some scheme failed
  CHECK(r.out.find("1 of 33 schemes failed") != std::string::npos);

  const nlohmann::json res = load(out + "/results.json");
  const std::vector<std::string> want = {"fp32", "fp16", "int8-per-tensor", "int8-per-channel", "int4-g64", "int4-g128",
                                         "int4-g64-gptq", "int8-per-channel+a8", "int4-g64+a8", "int4-g64+bf16", "int4-per-channel",
                                         "int4-per-channel-gptq", "int3-g64", "int3-g64-gptq", "int3-g64-gptq-act-order",
                                         "int2-g64", "int2-g64-gptq", "int2-g64-imatrix-gptq", "int4-g128-awq", "int4-g128-gptq",
                                         "int4-g128-awq-gptq", "int3-g128", "int3-g128-awq", "int3-g128-gptq", "int3-g128-awq-gptq",
                                         "int3-g64-awq", "int3-g64-awq-gptq", "int2-g64-awq", "int2-g64-awq-gptq",
                                         "int8-per-channel-smooth+a8", "int4-g64-smooth+a8", "int4-g64-asym", "int4-g256"};
  REQUIRE(res["schemes"].size() == want.size());
  // Every transform row paired with the same recipe without it (method_compare.h): 10 pairs, ratios finite and positive.
  REQUIRE(res["method_comparisons"].size() == 10);
  for (const auto& c : res["method_comparisons"]) {
    CAPTURE(c.dump());
    CHECK(c["kl_ratio"]["ratio"].get<double>() > 0);
    CHECK(c["kl_ratio"]["low"].get<double>() <= c["kl_ratio"]["ratio"].get<double>());
    CHECK(c["kl_ratio"]["high"].get<double>() >= c["kl_ratio"]["ratio"].get<double>());
    std::string suffix = c["method"].get<std::string>();
    suffix.insert(suffix.begin(), '-');
    CHECK(c["scheme"].get<std::string>().find(suffix) != std::string::npos);
  }
  CHECK(res["activation_outliers"].size() == 4);  // the tiny model's one layer of 4 Linears
  // The rule baselines, on the same slots as the models (their totals match the fp32 row's plus skips).
  REQUIRE(res["baselines"].size() == 3);
  for (const auto& b : res["baselines"]) {
    CHECK(b["by_construction"].size() == minigpt::kNumConstructions);
    CHECK(b["overall"]["total"].get<long long>() >= res["schemes"][0]["verb_tense"]["overall"]["total"].get<long long>());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& s = res["schemes"][i];
    CAPTURE(want[i]);
    CHECK(s["scheme"] == want[i]);
    if (want[i] == "int4-g256") {
      CHECK(s["status"] == "failed");
      CHECK(s["error"].get<std::string>().find("group size 256 does not divide") != std::string::npos);
      CHECK(s["on_pareto_frontier"] == false);
      continue;
    }
    REQUIRE(s["status"] == "ok");
    for (const char* k : {"ppl", "ppl_over_baseline", "verb_tense_accuracy", "bytes", "bytes_linear", "bytes_embedding",
                          "bits_per_weight", "decode_gflops", "decode_speedup", "quantize_seconds"})
      CHECK(s.contains(k));
    CHECK(s["ppl"].get<double>() > 1.0);
    CHECK(s["verb_tense"]["by_construction"].size() == minigpt::kNumConstructions);
    CHECK(s["decode_tokens_per_s"]["median"].get<double>() > 0);
    CHECK(s["prefill_tokens_per_s"]["median"].get<double>() > 0);
    const auto& t = s["decode_traffic"];
    CHECK(t["intensity"].get<double>() == doctest::Approx(t["flops"].get<double>() / t["bytes"]["total"].get<double>()));
    CHECK(s["roofline"]["ceiling"].get<std::string>().find("(2 threads)") != std::string::npos);
    CHECK(s.contains("on_pareto_frontier"));
    // Against the fp32 row: KLD and its interval, top-1, paired ΔPPL, margins, Wilson intervals.
    const auto& d = s["divergence"];
    CHECK(d["reference"] == "fp32");
    CHECK(d["tokens"] == s["test_tokens"]);
    CHECK(d["kl"]["mean"].get<double>() >= 0);
    CHECK(d["kl"]["ci95"][0].get<double>() <= d["kl"]["mean"].get<double>());
    CHECK(d["kl"]["mean"].get<double>() <= d["kl"]["max"].get<double>());
    CHECK(d["top1_agreement"].get<double>() <= 1.0);
    CHECK(d["ppl_reference"] == res["schemes"][0]["ppl"]);
    CHECK(d["delta_ppl"]["value"].get<double>() ==
          doctest::Approx(s["ppl"].get<double>() - res["schemes"][0]["ppl"].get<double>()).epsilon(1e-9));
    CHECK(d["margin_change"]["slots"].get<long long>() > 0);
    CHECK(s["verb_tense"]["overall"]["ci95"].size() == 2);
    CHECK(s["verb_tense"]["margin"]["by_construction"].size() == minigpt::kNumConstructions);
    if (want[i] == "fp32") {
      CHECK(d["kl"]["max"] == 0.0);
      CHECK(d["top1_agreement"] == 1.0);
      CHECK(d["margin_change"]["mean"] == 0.0);
    } else if (want[i] != "fp16") {
      CHECK(d["kl"]["mean"].get<double>() > 0);
    }
  }
  const auto& s = res["schemes"];
  // A row by its scheme name (the rows come in `want`'s order).
  const auto at = [&](const std::string& name) -> const nlohmann::json& {
    const auto it = std::find(want.begin(), want.end(), name);
    REQUIRE(it != want.end());
    return s[static_cast<size_t>(it - want.begin())];
  };
  // Bytes follow the formats: 1 layer of 128 wide -> Linear weights 4*128*128 + 2*128*512 = 196,608.
  CHECK(at("fp32")["bytes_linear"] == 4 * 196608);
  CHECK(at("fp16")["bytes_linear"] == 2 * 196608);
  CHECK(at("int4-g64")["bytes_linear"] == 196608 / 2 + 2 * 196608 / 64);
  CHECK(at("int4-g64-gptq")["bytes_linear"] == at("int4-g64")["bytes_linear"]);  // GPTQ stores what RTN stores
  CHECK(at("int8-per-channel+a8")["bytes_linear"] == at("int8-per-channel")["bytes_linear"]);  // +a8 changes how the weights run, not what is stored
  CHECK(at("int4-g64+a8")["bytes_linear"] == at("int4-g64")["bytes_linear"]);
  // int8 activations move perplexity by rounding noise only.
  CHECK(at("int8-per-channel+a8")["ppl"].get<double>() == doctest::Approx(at("int8-per-channel")["ppl"].get<double>()).epsilon(0.02));
  CHECK(at("int4-g64+a8")["ppl"].get<double>() == doctest::Approx(at("int4-g64")["ppl"].get<double>()).epsilon(0.02));
  // bf16 activations: the same storage, perplexity within rounding noise of weight-only.
  CHECK(at("int4-g64+bf16")["bytes_linear"] == at("int4-g64")["bytes_linear"]);
  CHECK(at("int4-g64+bf16")["ppl"].get<double>() == doctest::Approx(at("int4-g64")["ppl"].get<double>()).epsilon(0.02));
  CHECK(at("fp32")["embedding_format"] == "fp32");
  CHECK(at("fp16")["embedding_format"] == "fp16");
  CHECK(at("fp16")["bytes_embedding"] == 2 * 1964 * 128);
  CHECK(at("fp16")["ppl"].get<double>() == doctest::Approx(at("fp32")["ppl"].get<double>()).epsilon(1e-3));
  // fp32 stores the most bytes, so it is on the frontier only when its perplexity is strictly below every other row's.
  bool fp32_best = true;
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i]["status"] == "ok" && s[i]["ppl"].get<double>() <= at("fp32")["ppl"].get<double>()) fp32_best = false;
  CHECK(at("fp32")["on_pareto_frontier"] == fp32_best);
  // Fewer bits, further from fp32: int2 RTN diverges more than int3 RTN, than int4 RTN.
  const auto kl = [&](const std::string& name) { return at(name)["divergence"]["kl"]["mean"].get<double>(); };
  CHECK(kl("int2-g64") > kl("int3-g64"));
  CHECK(kl("int3-g64") > kl("int4-g64"));
  // int4 per channel: codes plus one fp16 scale per output row (384 + 128 + 512 + 128 rows); GPTQ stores the same.
  CHECK(at("int4-per-channel")["bytes_linear"] == 196608 / 2 + 2 * 1152);
  CHECK(at("int4-per-channel-gptq")["bytes_linear"] == at("int4-per-channel")["bytes_linear"]);
  CHECK(at("int4-per-channel")["method"] == "rtn");
  CHECK(at("int4-per-channel-gptq")["method"] == "gptq");
  CHECK(at("int4-per-channel-gptq")["storage_scheme"] == "int4-per-channel");
  // Act-order is recorded with the row, stores what plain GPTQ stores, and picks other codes.
  CHECK(at("int3-g64-gptq-act-order")["gptq"]["act_order"] == true);
  CHECK(at("int3-g64-gptq")["gptq"]["act_order"] == false);
  CHECK(at("int3-g64-gptq-act-order")["storage_scheme"] == "int3-g64");
  // GPTQ on the importance-weighted search's grid stores what RTN stores.
  CHECK(at("int2-g64-imatrix-gptq")["storage_scheme"] == "int2-g64");
  CHECK(at("int2-g64-imatrix-gptq")["bytes_linear"] == at("int2-g64")["bytes_linear"]);
  CHECK(at("int2-g64-imatrix-gptq")["method"] == "gptq");
  CHECK(at("int3-g64-gptq-act-order")["bytes_linear"] == at("int3-g64-gptq")["bytes_linear"]);
  CHECK(kl("int3-g64-gptq-act-order") != kl("int3-g64-gptq"));

  const nlohmann::json man = load(out + "/manifest.json");
  for (const char* k : {"command", "date", "seed", "threads", "machine", "build", "checkpoint", "corpus", "durations_s"})
    CHECK(man.contains(k));
  CHECK(man["seed"] == 42);
  CHECK(man["checkpoint"]["sha256"].get<std::string>().size() == 64);
  CHECK(man["corpus"]["sha256"].get<std::string>().size() == 64);
  for (const char* png : {"pareto.png", "verb_tense_accuracy.png", "roofline_overlay.png"}) {
    CAPTURE(png);
    REQUIRE(std::filesystem::exists(out + "/" + png));
    CHECK(std::filesystem::file_size(out + "/" + png) > 5000);
  }
  CHECK(mq::read_file(out + "/README.md").find("- int4-g256: ") != std::string::npos);  // the failure is reported

  // Same command, same quality numbers.
  const CliResult again = run_cli("sweep --model " + tiny_checkpoint() + " --out " + out + "2 --ceilings " + ceilings() +
                                  " --calibration 4 --max-slots 60 --max-items 280 --ppl-tokens 3000 --rounds 1 --no-gpt2 --no-plot --schemes fp32 int4-g64-gptq");
  CHECK(again.code == 0);
  const nlohmann::json res2 = load(out + "2/results.json");
  CHECK(res2["schemes"][1]["ppl"] == at("int4-g64-gptq")["ppl"]);
  CHECK(res2["schemes"][1]["verb_tense_accuracy"] == at("int4-g64-gptq")["verb_tense_accuracy"]);
}

TEST_CASE("sweep refuses unknown schemes before running anything") {
  const std::string out = kDir + "/bad";
  std::filesystem::remove_all(out);
  const CliResult r = run_cli("sweep --model " + tiny_checkpoint() + " --out " + out + " --schemes fp32 int5-g33");
  CHECK(r.code == 2);
  CHECK(r.out.find("int5-g33") != std::string::npos);
  CHECK(!std::filesystem::exists(out + "/results.json"));
  CHECK(run_cli("sweep --model /nonexistent.safetensors").code == 2);
}

TEST_CASE("roofline writes its ceilings with the machine facts") {
  const std::string out = kDir + "/roof";
  std::filesystem::remove_all(out);
  const CliResult r = run_cli("roofline --threads 1 --out " + out);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const nlohmann::json c = load(out + "/ceilings.json");
  // .at() and value(), never operator[] on a const document: an absent key there is undefined behaviour (a
  // compute ceiling has no "level"; the test crashed with SIGSEGV on one run in three).
  CHECK(c.at("machine").at("cpu_model").get<std::string>().size() > 0);
  bool fma = false, dram = false;
  for (const auto& x : c.at("ceilings")) {
    CHECK(x.at("median").get<double>() > 0);
    CHECK(x.at("low").get<double>() <= x.at("median").get<double>());
    CHECK(x.at("median").get<double>() <= x.at("high").get<double>());
    fma = fma || x.value("name", std::string()) == "fp32 FMA";
    dram = dram || x.value("level", std::string()) == "DRAM";
  }
  CHECK(fma);
  CHECK(dram);
  CHECK(std::filesystem::file_size(out + "/roofline.png") > 5000);
  CHECK(mq::read_file(out + "/README.md").find("| fp32 FMA | 1 |") != std::string::npos);
}

// The one-recipe guarantee: `miniquant quantize` + `miniquant eval` of the file is the very model the
// sweep measures under the same name, to the last bit of its perplexity and accuracy.
TEST_CASE("quantize then eval reproduces the sweep's rows exactly") {
  const std::string out = kDir + "/same";
  std::filesystem::remove_all(out);
  const std::string limits = " --max-slots 60 --max-items 280 --ppl-tokens 3000";
  const CliResult s = run_cli("sweep --model " + tiny_checkpoint() + " --out " + out + " --ceilings " + ceilings() +
                              " --calibration 4 --rounds 1 --no-gpt2 --no-plot --schemes int4-g64-gptq int8-per-channel" + limits);
  INFO(s.out);
  REQUIRE(s.code == 0);
  const nlohmann::json rows = load(out + "/results.json")["schemes"];
  for (const auto& row : rows) {
    const std::string scheme = row["scheme"];
    CAPTURE(scheme);
    const std::string file = out + "/" + scheme + ".safetensors";
    const CliResult q = run_cli("quantize --model " + tiny_checkpoint() + " --scheme " + scheme + " --calibration 4 --out " + file);
    INFO(q.out);
    REQUIRE(q.code == 0);
    const CliResult e = run_cli("eval --model " + file + limits + " --json");
    INFO(e.out);
    REQUIRE(e.code == 0);
    const nlohmann::json got = nlohmann::json::parse(e.out);
    CHECK(got["plan"]["config_id"] == scheme);
    CHECK(got["plan"]["embedding"] == "fp16");
    CHECK(got["ppl"].get<double>() == row["ppl"].get<double>());
    CHECK(got["nats_per_token"].get<double>() == row["nats_per_token"].get<double>());
    CHECK(got["verb_tense"] == row["verb_tense"]);
    CHECK(got["test_tokens"] == row["test_tokens"]);
    // Against the fp32 checkpoint: the sweep's divergence numbers (its reference, the checkpoint
    // unquantized, since this list has no fp32 row), bit for bit.
    const CliResult er = run_cli("eval --model " + file + " --reference-model " + tiny_checkpoint() + limits + " --json");
    INFO(er.out);
    REQUIRE(er.code == 0);
    const nlohmann::json gr = nlohmann::json::parse(er.out);
    CHECK(gr["ppl"].get<double>() == row["ppl"].get<double>());
    CHECK(gr["divergence"]["kl"] == row["divergence"]["kl"]);
    CHECK(gr["divergence"]["top1_agreement"] == row["divergence"]["top1_agreement"]);
    CHECK(gr["divergence"]["delta_ppl"] == row["divergence"]["delta_ppl"]);
    CHECK(gr["divergence"]["margin_change"] == row["divergence"]["margin_change"]);
  }
}

// A quant map is a row of the sweep and a flag of eval: the sweep's row, `eval --quant-map` and
// `quantize --quant-map` + `eval` of the file are the same model to the last bit.
TEST_CASE("--quant-map: a sweep row named by its config_id, eval of the map reproduces it, misuse exits 2 with one line") {
  const std::string out = kDir + "/map";
  std::filesystem::remove_all(out);
  // Mixed three ways: GPTQ and RTN, int4 and int8, weight-only and +a8.
  const std::string map = write("map.json", R"({"config_id": "qkv-int8", "default": "int4-g64-gptq",
      "tensors": [{"match": "qkv", "quant": "int8-per-channel+a8"}], "gptq": {"calibration_windows": 3}})");
  const std::string limits = " --max-slots 60 --max-items 280 --ppl-tokens 3000";
  const CliResult s = run_cli("sweep --model " + tiny_checkpoint() + " --out " + out + " --ceilings " + ceilings() +
                              " --calibration 4 --rounds 1 --no-gpt2 --no-plot --schemes int4-g64 --quant-map " + map + limits);
  INFO(s.out);
  REQUIRE(s.code == 0);
  const nlohmann::json res = load(out + "/results.json");
  REQUIRE(res["schemes"].size() == 2);
  const nlohmann::json row = res["schemes"][1];
  CHECK(row["scheme"] == "qkv-int8");
  CHECK(row["status"] == "ok");
  CHECK(row["storage_scheme"] == "mixed");
  CHECK(row["method"] == "mixed");
  CHECK(row["gptq"]["calibration_windows"] == 3);  // the map's, not --calibration
  CHECK(row["embedding_format"] == "fp16");
  // qkv (384 x 128) in int8 per channel, the other Linears in int4-g64.
  CHECK(row["bytes_linear"] == 384 * 128 + 2 * 384 + (196608 - 384 * 128) / 2 + 2 * (196608 - 384 * 128) / 64);
  CHECK(row["divergence"]["kl"]["mean"].get<double>() > 0);
  CHECK(row["roofline"]["ceiling"].get<std::string>().find("(2 threads)") != std::string::npos);
  const nlohmann::json man = load(out + "/manifest.json");
  CHECK(man["quant_maps"][0]["path"] == map);
  CHECK(man["quant_maps"][0]["plan"]["config_id"] == "qkv-int8");

  // eval --quant-map quantizes the fp32 checkpoint as the sweep did.
  const CliResult e = run_cli("eval --model " + tiny_checkpoint() + " --quant-map " + map + " --reference-model " + tiny_checkpoint() +
                              limits + " --json");
  INFO(e.out);
  REQUIRE(e.code == 0);
  const nlohmann::json got = nlohmann::json::parse(e.out);
  CHECK(got["scheme"] == "qkv-int8");
  CHECK(got["plan"]["config_id"] == "qkv-int8");
  CHECK(got["plan"]["tensors"][0]["quant"] == "int8-per-channel+a8");
  CHECK(got["quant_map"] == map);
  CHECK(got["ppl"].get<double>() == row["ppl"].get<double>());
  CHECK(got["verb_tense"] == row["verb_tense"]);
  CHECK(got["divergence"]["kl"] == row["divergence"]["kl"]);
  CHECK(got["divergence"]["delta_ppl"] == row["divergence"]["delta_ppl"]);
  // The same map stored by quantize (weight-only: +a8 is not a storage format, so a map without it).
  const std::string stored_map = write("map_stored.json", R"({"config_id": "qkv-int8-w", "default": "int4-g64-gptq",
      "tensors": [{"match": "qkv", "quant": "int8-per-channel"}], "gptq": {"calibration_windows": 3}})");
  const std::string file = out + "/qkv-int8-w.safetensors";
  const CliResult q = run_cli("quantize --model " + tiny_checkpoint() + " --quant-map " + stored_map + " --out " + file);
  INFO(q.out);
  REQUIRE(q.code == 0);
  const CliResult ef = run_cli("eval --model " + file + limits + " --json");
  const CliResult em = run_cli("eval --model " + tiny_checkpoint() + " --quant-map " + stored_map + limits + " --json");
  REQUIRE(ef.code == 0);
  REQUIRE(em.code == 0);
  const nlohmann::json jf = nlohmann::json::parse(ef.out), jm = nlohmann::json::parse(em.out);
  CHECK(jf["plan"] == jm["plan"]);
  CHECK(jf["ppl"].get<double>() == jm["ppl"].get<double>());
  CHECK(jf["verb_tense"] == jm["verb_tense"]);
  const CliResult et = run_cli("eval --model " + tiny_checkpoint() + " --quant-map " + stored_map + limits);
  CHECK(et.code == 0);
  CHECK(et.out.find("plan qkv-int8-w, quantized now from --quant-map") != std::string::npos);

  // A map on a quantized checkpoint, two rows of one name, a map that is not a map: one line, exit 2.
  const auto fails = [](const std::string& args, const std::string& what) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    CHECK(r.out.find(what) != std::string::npos);
  };
  fails("eval --model " + file + " --quant-map " + map, "is already quantized (plan qkv-int8-w); give the fp32 checkpoint");
  const std::string named_int4 = write("int4.json", R"({"config_id": "int4-g64", "default": "int4-g128"})");
  const std::string bad = out + "/dup";
  fails("sweep --model " + tiny_checkpoint() + " --out " + bad + " --schemes int4-g64 --quant-map " + named_int4,
        "two rows are named 'int4-g64'");
  fails("sweep --model " + tiny_checkpoint() + " --out " + bad + " --schemes fp32 --quant-map " + map + " --quant-map " + map,
        "two rows are named 'qkv-int8'");
  fails("sweep --model " + tiny_checkpoint() + " --out " + bad + " --schemes fp32 int4-g64 fp32", "two rows are named 'fp32'");
  fails("sweep --model " + tiny_checkpoint() + " --out " + bad + " --schemes fp32 int3-g64-act-order",
        "-act-order is a GPTQ setting");
  const std::string bad_map = write("bad_map.json", R"({"config_id": "b", "default": "int4-g64", "tensors": [{"match": "mlp_sideways", "quant": "fp16"}]})");
  fails("sweep --model " + tiny_checkpoint() + " --out " + bad + " --schemes fp32 --quant-map " + bad_map, "mlp_sideways");
  fails("eval --model " + tiny_checkpoint() + " --quant-map " + bad_map, "mlp_sideways");
  CHECK_FALSE(std::filesystem::exists(bad + "/results.json"));
}

// `quantize --scheme S-gptq --act-order` and `--scheme S-gptq-act-order` are one plan with one id; on
// round-to-nearest the flag is refused.
TEST_CASE("quantize: --act-order is the scheme's -act-order") {
  const std::string out = kDir + "/act";
  std::filesystem::create_directories(out);
  const std::string limits = " --max-slots 30 --max-items 280 --ppl-tokens 1500";
  std::vector<nlohmann::json> evals;
  for (const std::string args : {"--scheme int3-g64-gptq-act-order", "--scheme int3-g64-gptq --act-order"}) {
    CAPTURE(args);
    const std::string file = out + "/" + std::to_string(evals.size()) + ".safetensors";
    const CliResult q = run_cli("quantize --model " + tiny_checkpoint() + " " + args + " --calibration 4 --out " + file);
    INFO(q.out);
    REQUIRE(q.code == 0);
    const CliResult e = run_cli("eval --model " + file + limits + " --json");
    REQUIRE(e.code == 0);
    evals.push_back(nlohmann::json::parse(e.out));
    CHECK(evals.back()["plan"]["config_id"] == "int3-g64-gptq-act-order");
    CHECK(evals.back()["plan"]["gptq"]["act_order"] == true);
  }
  CHECK(evals[0]["plan"] == evals[1]["plan"]);
  CHECK(evals[0]["ppl"].get<double>() == evals[1]["ppl"].get<double>());
  // Without act-order GPTQ picks other codes.
  const CliResult q = run_cli("quantize --model " + tiny_checkpoint() + " --scheme int3-g64-gptq --calibration 4 --out " + out + "/plain.safetensors");
  REQUIRE(q.code == 0);
  const CliResult e = run_cli("eval --model " + out + "/plain.safetensors" + limits + " --json");
  REQUIRE(e.code == 0);
  CHECK(nlohmann::json::parse(e.out)["ppl"].get<double>() != evals[0]["ppl"].get<double>());
  const CliResult r = run_cli("quantize --model " + tiny_checkpoint() + " --scheme int4-g64 --act-order");
  CHECK(r.code == 2);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(r.out.find("scheme int4-g64 is round-to-nearest; act-order is a GPTQ setting") != std::string::npos);
}

// calibration-draws: draw 0 is the sweep's calibration (the same rows to the last bit), later draws quantize on other
// windows (their KLD moves), a scheme without calibration has one row; misuse exits 2 with one line before any work.
TEST_CASE("calibration-draws: draw 0 is the sweep's row, later draws differ, misuse exits 2") {
  const std::string sweep = kDir + "/draws_sweep", out = kDir + "/draws";
  std::filesystem::remove_all(sweep);
  std::filesystem::remove_all(out);
  const std::string limits = " --calibration 4 --max-slots 60 --max-items 280 --ppl-tokens 3000";
  const CliResult s = run_cli("sweep --model " + tiny_checkpoint() + " --out " + sweep + " --ceilings " + ceilings() +
                              " --rounds 1 --no-gpt2 --no-plot --schemes fp32 int4-g64 int4-g64-gptq" + limits);
  INFO(s.out);
  REQUIRE(s.code == 0);
  const CliResult d = run_cli("calibration-draws --model " + tiny_checkpoint() + " --out " + out +
                              " --schemes int4-g64,int4-g64-gptq --draws 3" + limits);
  INFO(d.out);
  REQUIRE(d.code == 0);
  const nlohmann::json srows = load(sweep + "/results.json")["schemes"], res = load(out + "/results.json");
  const nlohmann::json& rows = res["rows"];
  REQUIRE(rows.size() == 5);  // fp32 put first, int4-g64 once, int4-g64-gptq per draw
  CHECK(rows[0]["scheme"] == "fp32");
  CHECK(rows[1]["calibrated"] == false);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const nlohmann::json& r = rows[2 + i];
    CHECK(r["scheme"] == "int4-g64-gptq");
    CHECK(r["calibrated"] == true);
    CHECK(r["draw"] == i);
    CHECK(r.contains("kl_ratio_to_draw0") == (i > 0));
  }
  for (int i = 0; i < 3; ++i) {  // the sweep's fp32, int4-g64 and int4-g64-gptq against rows 0, 1, 2
    CAPTURE(i);
    CHECK(rows[i]["divergence"]["kl"] == srows[i]["divergence"]["kl"]);
    CHECK(rows[i]["generalization"]["answers"] == srows[i]["generalization"]["answers"]);
    CHECK(rows[i]["verb_tense"] == srows[i]["verb_tense"]);
  }
  CHECK(rows[3]["divergence"]["kl"]["mean"] != rows[2]["divergence"]["kl"]["mean"]);
  CHECK(rows[4]["divergence"]["kl"]["mean"] != rows[3]["divergence"]["kl"]["mean"]);
  const std::string readme = mq::read_file(out + "/README.md");
  CHECK(readme.find("is met in") != std::string::npos);
  const CliResult again = run_cli("calibration-draws --out " + out + " --report-only");
  INFO(again.out);
  CHECK(again.code == 0);
  CHECK(mq::read_file(out + "/README.md") == readme);

  for (const std::string args : {"--draws 0", "--draws 2x", "--draws 1000", "--schemes int5-g64", "--calibration -1"}) {
    CAPTURE(args);
    const CliResult r = run_cli("calibration-draws --model " + tiny_checkpoint() + " --out " + kDir + "/draws_bad " + args);
    CHECK(r.code == 2);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(kDir + "/draws_bad/results.json"));
  }
  const CliResult far = run_cli("calibration-draws --model " + tiny_checkpoint() + " --out " + kDir + "/draws_bad --draws 1000");
  CHECK(far.out.find("at most") != std::string::npos);
}
