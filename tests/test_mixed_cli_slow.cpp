// `miniquant mixed` end to end on a tiny model: every stage writes what it should; a second run reuses every
// finished unit and a deleted one is measured again (the resume after a crash: unit files are written
// atomically, so an interrupted unit leaves none); two shards merged give the quality numbers of the
// unsharded run; bad options and bad maps stop with one line and exit 2 before any work.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "temp_dir.h"

namespace {

const std::string kDir = mqtest::temp_path("mq_test", "mq_test_mixed_cli");

const std::string& tiny_checkpoint() {
  static const std::string path = train_tiny(kDir, R"({"vocab_size": 1963, "n_ctx": 32, "d_model": 128, "n_layer": 2, "n_head": 2, "d_ff": 512})", 3);
  return path;
}

std::string configs() {
  const std::string dir = kDir + "/configs";
  std::filesystem::create_directories(dir);
  write_test_file(dir, "a.json", R"({"config_id": "uniform-int4", "default": "int4-g64"})");
  write_test_file(dir, "b.json", R"({"config_id": "early-int8", "default": "int4-g64-gptq", "layer_groups": [{"layers": [0], "quant": "int8-per-channel"}]})");
  write_test_file(dir, "c.json", R"({"config_id": "mlp-down-int2", "default": "int4-g64", "tensors": [{"match": "mlp_down", "quant": "int2-g64-gptq"}]})");
  return dir;
}

// Small everything: the point is the plumbing, not the numbers. Exactly the two planned rounds (--max-rounds 2):
// the adaptive ones are tried once below, their rule in test_mixed.
std::string common(const std::string& out, int ppl_tokens = 1024, int max_rounds = 2) {
  return "mixed --model " + tiny_checkpoint() + " --configs " + configs() + " --out " + out +
         " --rounds 2 --max-rounds " + std::to_string(max_rounds) + " --gens 1 --ppl-tokens " + std::to_string(ppl_tokens) + " --max-slots 40 --max-items 140 --sensitivity-tokens 512 --calibration 4 --prompt-tokens 8 --gen-tokens 4"
         " --sensitivity-recipes int2-g64-gptq,int4-g64 --no-plot";
}

nlohmann::json load(const std::string& p) { return nlohmann::json::parse(mq::read_file(p)); }

// The quality and size of every configuration, by id: what must not depend on how the run was split.
std::map<std::string, std::string> quality(const nlohmann::json& res) {
  std::map<std::string, std::string> q;
  for (const auto& c : res["configs"]) {
    const auto& r = c["row"];
    q[c["config_id"]] = nlohmann::json{r["ppl"], r["divergence"]["kl"], r["divergence"]["top1_agreement"], r["verb_tense"]["overall"], r["bytes"]}.dump();
  }
  return q;
}

}  // namespace

TEST_CASE("mixed: all stages, resume, shards merged") {
  const std::string out = kDir + "/whole";
  std::filesystem::remove_all(out);
  CliResult r = run_cli(common(out));
  INFO(r.out);
  REQUIRE(r.code == 0);
  // 1 base + 2 layers x 4 kinds x 2 recipes + 2 layers x 2 recipes below 8 bits
  CHECK(r.out.find("sensitivity units: 21 measured, 0 reused") != std::string::npos);
  CHECK(r.out.find("configuration units: 4 measured, 0 reused") != std::string::npos);
  const nlohmann::json res = load(out + "/results.json");
  CHECK(res["configs"].size() >= 4 + 1);  // fp32, three maps, at least one allocated map
  CHECK(res["missing_units"] == 0);
  CHECK(res["sensitivity"]["linears"].size() == 16);
  CHECK(res["sensitivity"]["layers"].size() == 4);
  const nlohmann::json alloc = load(out + "/allocation.json");
  REQUIRE(alloc["frontier"].size() >= 2);
  for (size_t i = 1; i < alloc["frontier"].size(); ++i) {  // more bytes, less predicted KLD
    CHECK(alloc["frontier"][i]["linear_bytes"] > alloc["frontier"][i - 1]["linear_bytes"]);
    CHECK(alloc["frontier"][i]["predicted_kl"] < alloc["frontier"][i - 1]["predicted_kl"]);
  }
  bool any_auto = false;
  for (const auto& c : res["configs"]) {
    CAPTURE(c["config_id"]);
    CHECK(c["row"]["status"] == "ok");
    CHECK(c["energy"]["joules_per_token"]["total"]["mean"].get<double>() > 0);
    CHECK(c["energy"]["joules_per_token"]["total"]["n"] == 2);  // one value per round
    CHECK(c["epi"].get<double>() > 0);
    // The benchmark's 140 items on this test's small model: near chance (0.36-0.38 for every map when written).
    CHECK(c["accuracy"].get<double>() > 0.2);
    CHECK(c["accuracy"].get<double>() < 0.6);
    CHECK(c["accuracy_detail"]["items"].get<int64_t>() > 0);
    any_auto = any_auto || c["kind"] == "auto";
    if (c["config_id"] == "fp32") CHECK(c["row"]["divergence"]["kl"]["mean"] == 0.0);
  }
  CHECK(any_auto);
  CHECK(std::filesystem::exists(out + "/manifest.json"));
  const std::string readme = mq::read_file(out + "/README.md");
  CHECK(readme.find("### The five questions") != std::string::npos);
  CHECK(readme.find("**Control: fp32 (control) / fp32") != std::string::npos);
  CHECK(res["energy"]["set"] == "all");
  CHECK(res["energy"]["rounds"] == 2);
  CHECK(res["energy"].contains("control"));
  for (const char* q : {"rq1", "rq2", "rq3", "rq4", "rq5"}) CHECK(res["answers"].contains(q));
  // The rounds are unit files: one per round and set.
  CHECK(std::filesystem::exists(out + "/runs/energy/all/round-000.json"));
  CHECK(std::filesystem::exists(out + "/runs/energy/configs/round-001.json"));
  // A lost round is measured again, the other reused.
  std::filesystem::remove(out + "/runs/energy/all/round-001.json");
  const CliResult again = run_cli(common(out) + " --stage energy-all");
  INFO(again.out);
  CHECK(again.out.find("energy rounds of set 'all': 1 measured, 1 reused") != std::string::npos);
  // Adaptive rounds: up to 4 in all, one at a time, while the control does not pass (on this tiny model's
  // millisecond generations it usually is); the merge reads the added rounds and the README names them.
  const std::string adaptive = common(out, 1024, 4) + " --add-rounds 1";
  const CliResult more = run_cli(adaptive + " --stage energy-all");
  INFO(more.out);
  REQUIRE(more.code == 0);
  REQUIRE(run_cli(adaptive + " --stage merge").code == 0);
  const nlohmann::json res2 = load(out + "/results.json");
  const int n = res2["energy"]["rounds"].get<int>();
  MESSAGE("adaptive energy rounds of the tiny model: " << n << " of at most 4");
  CHECK(n >= 2);
  CHECK(n <= 4);
  CHECK(res2["energy"]["expected_rounds"] == 2);
  CHECK((res2["energy"]["control"]["passes"] == true || n == 4));  // stops when it passes, else at the bound
  if (n > 2) {
    CHECK(more.out.find(fmt::format("{} added for the control", n - 2)) != std::string::npos);
    CHECK(mq::read_file(out + "/README.md").find(fmt::format("{} paired rounds (2 planned, {} added", n, n - 2)) != std::string::npos);
    CHECK(std::filesystem::exists(out + fmt::format("/runs/energy/all/round-{:03d}.json", n - 1)));
  }
  // The README names where the units were measured (here: this machine, every configuration unit), not only the merge.
  REQUIRE(res["measured_on"].size() == 1);
  CHECK(res["measured_on"][0]["units"].get<size_t>() == res["configs"].size());
  CHECK(res["measured_on"][0]["machine"]["host"] == mq::host_name());
  CHECK(readme.find(fmt::format("{} units between", res["configs"].size())) != std::string::npos);
  // Some sensitivities but not all: a shard that did not finish. The merge refuses and names the unit.
  std::filesystem::remove(out + "/runs/sensitivity/L1-qkv-int4-g64.json");
  r = run_cli(common(out) + " --stage merge");
  CHECK(r.code == 1);
  CHECK(r.out.find("1 unit is not measured: sensitivity/L1-qkv-int4-g64;") != std::string::npos);
}

TEST_CASE("mixed: a second run reuses finished units, a missing one is measured again, changed options measure again") {
  const std::string out = kDir + "/resume";
  std::filesystem::remove_all(out);
  REQUIRE(run_cli(common(out) + " --stage configs").code == 0);
  const auto t0 = std::filesystem::last_write_time(out + "/runs/config/uniform-int4.json");
  std::filesystem::remove(out + "/runs/config/early-int8.json");  // as a crash inside that unit leaves it
  CliResult r = run_cli(common(out) + " --stage configs");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("configuration units: 1 measured, 3 reused") != std::string::npos);
  CHECK(r.out.find("config early-int8") != std::string::npos);
  CHECK(std::filesystem::last_write_time(out + "/runs/config/uniform-int4.json") == t0);  // not rewritten
  r = run_cli(common(out, 900) + " --stage configs");
  CHECK(r.out.find("configuration units: 4 measured, 0 reused") != std::string::npos);
}

TEST_CASE("mixed: two shards merged give the unsharded quality numbers") {
  const std::string whole = kDir + "/unsharded", a = kDir + "/shard0", b = kDir + "/shard1";
  for (const auto& d : {whole, a, b}) std::filesystem::remove_all(d);
  REQUIRE(run_cli(common(whole) + " --stage configs").code == 0);
  REQUIRE(run_cli(common(whole) + " --stage merge").code == 0);
  CliResult r0 = run_cli(common(a) + " --stage configs --shard 0/2");
  INFO(r0.out);
  CHECK(r0.out.find("configuration units: 2 measured, 0 reused from earlier runs, 2 left to other shards") != std::string::npos);
  REQUIRE(run_cli(common(b) + " --stage configs --shard 1/2").code == 0);
  // Merging one shard alone refuses, naming the other shard's units (fp32, uniform-int4, early-int8,
  // mlp-down-int2 by index: shard 1 has uniform-int4 and mlp-down-int2), and writes nothing.
  CliResult p = run_cli(common(a) + " --stage merge");
  CHECK(p.code == 1);
  CHECK(p.out.find("merge: 2 units are not measured: config/uniform-int4, config/mlp-down-int2; rerun their shards") != std::string::npos);
  CHECK(!std::filesystem::exists(a + "/results.json"));
  // --allow-partial merges what is there and says what is not.
  p = run_cli(common(a) + " --stage merge --allow-partial");
  INFO(p.out);
  REQUIRE(p.code == 0);
  CHECK(load(a + "/results.json")["missing_units"] == 2);
  CHECK(load(a + "/results.json")["missing"].size() == 2);
  CHECK(mq::read_file(a + "/README.md").find("2 units are not measured: config/uniform-int4") != std::string::npos);
  CliResult m = run_cli(common(a) + " --stage merge --runs " + b + "/runs");
  INFO(m.out);
  REQUIRE(m.code == 0);
  const nlohmann::json merged = load(a + "/results.json");
  CHECK(merged["missing_units"] == 0);
  CHECK(merged["missing"].empty());
  CHECK(quality(merged) == quality(load(whole + "/results.json")));
  CHECK(m.out.find("units were measured on") == std::string::npos);  // one machine: no warning

  // A unit whose attempt failed is named as such.
  const std::string failed = kDir + "/failed";
  std::filesystem::remove_all(failed);
  std::filesystem::create_directories(failed);
  std::filesystem::copy(b + "/runs", failed + "/runs", std::filesystem::copy_options::recursive);
  nlohmann::json f = load(failed + "/runs/config/mlp-down-int2.json");
  f["status"] = "failed";
  f["error"] = "killed by the test";
  mq::write_file_atomic(failed + "/runs/config/mlp-down-int2.json", f.dump());
  p = run_cli(common(a) + " --stage merge --runs " + failed + "/runs");
  CHECK(p.code == 1);
  CHECK(p.out.find("1 unit is not measured: config/mlp-down-int2 (failed)") != std::string::npos);

  // A finished unit edited by hand: the merge refuses it naming the file and the field; --allow-partial counts it
  // as missing, with that reason, and merges the rest.
  f = load(b + "/runs/config/mlp-down-int2.json");
  f["row"]["ppl"] = "abc";
  mq::write_file_atomic(failed + "/runs/config/mlp-down-int2.json", f.dump());
  p = run_cli(common(a) + " --stage merge --runs " + failed + "/runs");
  CHECK(p.code == 1);
  CHECK(p.out.find("mlp-down-int2.json: /row/ppl") != std::string::npos);
  p = run_cli(common(a) + " --stage merge --allow-partial --runs " + failed + "/runs");
  INFO(p.out);
  CHECK(p.code == 0);
  CHECK(p.out.find("config/mlp-down-int2 (invalid: ") != std::string::npos);
  CHECK(load(a + "/results.json")["missing_units"] == 1);

  // Units of another machine: shard 1's files as if measured on another host, first with the same CPU, then
  // with another CPU. The merge warns, and --per-machine reports each machine's units alone.
  const std::string other = kDir + "/other";
  const auto as_other = [&](bool other_cpu) {
    std::filesystem::remove_all(other);
    std::filesystem::create_directories(other);
    std::filesystem::copy(b + "/runs", other + "/runs", std::filesystem::copy_options::recursive);
    for (const char* id : {"uniform-int4", "mlp-down-int2"}) {
      const std::string path = other + "/runs/config/" + id + ".json";
      nlohmann::json u = load(path);
      u["machine"]["host"] = "other-node";
      if (other_cpu) u["machine"]["cpu_model"] = "Another CPU";
      mq::write_file_atomic(path, u.dump());
    }
  };
  as_other(false);
  p = run_cli(common(a) + " --stage merge --runs " + other + "/runs");
  INFO(p.out);
  REQUIRE(p.code == 0);
  CHECK(p.out.find("Note: the units were measured on 2 hosts with the same CPU") != std::string::npos);
  as_other(true);
  std::filesystem::remove_all(a + "/by-machine");
  p = run_cli(common(a) + " --stage merge --per-machine --runs " + other + "/runs");
  REQUIRE(p.code == 0);
  CHECK(p.out.find("Warning: the units were measured on 2 different CPUs (2 hosts)") != std::string::npos);
  const nlohmann::json two = load(a + "/results.json");
  CHECK(two["machines"] == 2);
  CHECK(two["hosts"] == 2);
  CHECK(quality(two) == quality(load(whole + "/results.json")));  // the quality numbers are the files', wherever measured
  CHECK(mq::read_file(a + "/README.md").find("measured on 2 different CPUs") != std::string::npos);
  const nlohmann::json elsewhere = load(a + "/by-machine/other-node/results.json");
  std::map<std::string, std::string> want = quality(merged);
  std::erase_if(want, [](const auto& kv) { return kv.first != "uniform-int4" && kv.first != "mlp-down-int2"; });
  CHECK(quality(elsewhere) == want);
  CHECK(elsewhere["measured_elsewhere"] == 2);
  CHECK(elsewhere["measured_on"].size() == 1);
  CHECK(mq::read_file(a + "/by-machine/other-node/README.md").find("other-node: Another CPU") != std::string::npos);
  CHECK(mq::read_file(a + "/by-machine/other-node/README.md").find("different CPUs") == std::string::npos);
  // The other report holds this machine's two units, fp32 among them.
  bool here = false;
  for (const auto& e : std::filesystem::directory_iterator(a + "/by-machine"))
    if (e.path().filename() != "other-node") {
      here = true;
      CHECK(quality(load(e.path().string() + "/results.json")).count("fp32") == 1);
      CHECK(load(e.path().string() + "/results.json")["configs"].size() == 2);
    }
  CHECK(here);
}

TEST_CASE("mixed: bad input stops with one line and exit 2 before any work") {
  const std::string out = kDir + "/bad";
  CliResult r = run_cli(common(out) + " --shard 2/2");
  CHECK(r.code == 2);
  CHECK(r.out.find("--shard '2/2': i 2: must be in [0, 1]") != std::string::npos);
  r = run_cli(common(out) + " --shard x");
  CHECK(r.code == 2);
  r = run_cli(common(out) + " --rounds 1");
  CHECK(r.code == 2);
  r = run_cli(common(out) + " --stage everything");
  CHECK(r.code == 2);
  // A map whose layer does not exist in this 2-layer model.
  const std::string dir = kDir + "/bad_configs";
  std::filesystem::create_directories(dir);
  write_test_file(dir, "x.json", R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [5], "quant": "int8-per-channel"}]})");
  r = run_cli("mixed --model " + tiny_checkpoint() + " --configs " + dir + " --out " + out + " --stage configs --no-plot");
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("layer 5 is out of range") != std::string::npos);
}
