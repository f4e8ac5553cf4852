// End to end through the CLI: train a tiny MiniGPT for a few steps, evaluate and sample it, and
// check the errors for broken or mismatched checkpoints.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "miniquant/util/io.h"
#include "temp_dir.h"

namespace {

const std::string kDir = mqtest::temp_path("mq_test", "mq_test_minigpt_cli");

std::string write(const std::string& name, const std::string& text) { return write_test_file(kDir, name, text); }

// Trains once for the whole file: 1 layer of width 128, 4 steps.
const std::string& tiny_checkpoint() {
  static const std::string path = train_tiny(kDir, R"({"vocab_size": 1963, "n_ctx": 128, "d_model": 128, "n_layer": 1, "n_head": 2, "d_ff": 512})", 4);
  return path;
}

}  // namespace

TEST_CASE("train writes a checkpoint and a log that eval and generate read") {
  const std::string ckpt = tiny_checkpoint();
  CHECK(std::filesystem::file_size(ckpt) > 1000000);
  std::ifstream log(kDir + "/train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("seed 42") != std::string::npos);
  CHECK(text.find("val_loss") != std::string::npos);
  CHECK(text.find("step 4/4 loss") != std::string::npos);  // the last step's line, with the others in order
  CHECK(text.find("wrote ") > text.find("step 4/4 loss"));
  // The log is rewritten through temporaries of our own at each line: none is left beside it.
  for (const auto& e : std::filesystem::directory_iterator(kDir)) CHECK(e.path().filename().string().find(".mq-") == std::string::npos);

  const CliResult e = run_cli("eval --model " + ckpt + " --max-slots 60 --json");
  INFO(e.out);
  REQUIRE(e.code == 0);
  const auto j = nlohmann::json::parse(e.out);
  for (const char* key : {"ppl", "ppl_floor", "verb_tense_accuracy", "verb_tense", "timing_s"}) CHECK(j.contains(key));
  CHECK(j["ppl_floor"].get<double>() == doctest::Approx(14.902).epsilon(1e-3));
  CHECK(j["ppl"].get<double>() > j["ppl_floor"].get<double>());  // 4 steps are far from the floor
  CHECK(j["test_tokens"] == 100024);
  CHECK(j["verb_tense"]["overall"]["total"].get<int>() + j["verb_tense"]["skipped_unknown_form"].get<int>() == 60);

  const CliResult g1 = run_cli("generate --model " + ckpt + " --prompt \"Yesterday, the dog\" --gen-tokens 8 --seed 42");
  const CliResult g2 = run_cli("generate --model " + ckpt + " --prompt \"Yesterday, the dog\" --gen-tokens 8 --seed 42");
  REQUIRE(g1.code == 0);
  CHECK(g1.out.rfind("yesterday, the dog", 0) == 0);
  CHECK(g1.out == g2.out);  // seeded
  CHECK(g1.out.find("warning") == std::string::npos);  // every word known: no warning
  // Words outside the vocabulary are named, not silently turned into <unk>.
  const CliResult g3 = run_cli("generate --model " + ckpt + " --prompt \"Yesterday, the zorblax qwerty\" --gen-tokens 4 --seed 42");
  REQUIRE(g3.code == 0);
  CHECK(g3.out.find("generate: warning: not in the model's vocabulary, read as <unk>: zorblax, qwerty") != std::string::npos);
}

TEST_CASE("broken and mismatched checkpoints give one clear error") {
  const std::string ckpt = tiny_checkpoint();
  const std::string bytes = mq::read_file(ckpt);
  const std::string cut = write("cut.safetensors", bytes.substr(0, bytes.size() / 2));
  CliResult r = run_cli("eval --model " + cut);
  CHECK(r.code == 1);
  CHECK(r.out.find("truncated") != std::string::npos);

  // A lexicon with one more verb builds another vocabulary: the checkpoint must refuse it.
  const std::string lex = kDir + "/lexicon";
  std::filesystem::remove_all(lex);
  std::filesystem::copy(MQ_SOURCE_DIR "/data/lexicon", lex);
  std::ofstream(lex + "/verbs.tsv", std::ios::app) << "zorp\tzorps\tzorped\tzorped\tzorping\treg\tanimate\t-\n";
  r = run_cli("eval --model " + ckpt + " --lexicon " + lex);
  CHECK(r.code == 1);
  CHECK(r.out.find("vocabulary hash") != std::string::npos);

  r = run_cli("eval --model /nonexistent.safetensors");
  CHECK(r.code == 2);
  r = run_cli("generate --model " + ckpt + " --temperature -1");
  CHECK(r.code == 2);
}
