// What the graders that run the real MiniGPT share: the shipped checkpoint, its vocabulary, the
// corpus' test and validation splits (seed 42; the training split is not generated, it is not needed),
// and the perplexity every lab compares (window n_ctx, stride n_ctx / 2, the test split's first tokens).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "labs/grade.h"
#include "minigpt/model.h"
#include "minigpt/tokenizer.h"

namespace mqlab {

struct Workbench {
  std::string model_path;
  minigpt::Tokenizer tok;
  std::vector<int32_t> test;  // the test split's first ppl_tokens tokens
  std::vector<int32_t> val;   // the validation split (calibration windows come from here)
  minigpt::Model fresh() const;  // a new fp32 copy of the checkpoint
  double ppl(const minigpt::Model& m) const;
};

Workbench load_workbench(const LabOptions& o);

}  // namespace mqlab
