// Loads the checkpoint and the corpus splits the graders evaluate on.
#include "labs/workbench.h"

#include <algorithm>

#include "miniquant/error.h"
#include "minigpt/checkpoint.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/lexicon.h"
#include "minigpt/eval.h"
#include "minigpt/quantized_checkpoint.h"

namespace mqlab {

minigpt::Model Workbench::fresh() const { return minigpt::load_any_model(model_path); }

double Workbench::ppl(const minigpt::Model& m) const {
  const int window = m.config().n_ctx;
  return minigpt::perplexity(m, test, window, window / 2).ppl;
}

Workbench load_workbench(const LabOptions& o) {
  const std::string path = o.root + "/data/minigpt.safetensors";
  minigpt::CheckpointMeta meta;
  (void)minigpt::load_any_model(path, "", &meta);
  Workbench w{path, minigpt::Tokenizer::from_json(meta.vocab_json), {}, {}};
  // Test and val are drawn before train from their own streams (generate_corpus), so skipping the
  // training split gives the same stories `miniquant eval` and `miniquant quantize` use.
  minigpt::CorpusConfig cfg;  // seed 42
  cfg.train_tokens = 0;
  const minigpt::Corpus c = minigpt::generate_corpus(minigpt::Lexicon::load(o.root + "/data/lexicon"), cfg);
  w.test = minigpt::encode_split(w.tok, c.test);
  w.test.resize(std::min<size_t>(w.test.size(), static_cast<size_t>(o.ppl_tokens)));
  w.val = minigpt::encode_split(w.tok, c.val);
  if (std::count(w.val.begin(), w.val.end(), minigpt::Tokenizer::kUnkId) > 0)
    throw mq::Error("the corpus and the checkpoint's vocabulary disagree (<unk> in the validation split)");
  return w;
}

}  // namespace mqlab
