#include "experiments/energy_phases.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/batched_decode.h"

namespace mqexp {

using mq::energy::Reading;
using mq::energy::Work;

void PhaseStats::add(const mq::energy::Interval& iv, const Work& w) {
  joules += iv.joules;
  seconds += iv.seconds;
  for (const auto& [z, j] : iv.zones) zones[z] += j;
  work += w;
}

const PhaseStats& RunResult::phase(const std::string& name) const {
  if (name == "prefill") return prefill;
  if (name == "decode") return decode;
  if (name == "post") return post;
  if (name == "total") return total;
  throw mq::Error("no phase named " + name);
}

int32_t argmax(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

namespace {

// Charge `w` to the meter, read it, and add the interval since `last` to `phase`.
void boundary(mq::energy::Meter& meter, Reading& last, PhaseStats& phase, const Work& w) {
  meter.add_work(w);
  const Reading now = meter.read();
  phase.add(mq::energy::difference(last, now), w);
  last = now;
}

}  // namespace

RunResult run_generation(minigpt::Model& m, mq::energy::Meter& meter, const std::vector<int32_t>& prompt, int gen,
                         const minigpt::Tokenizer* tok, const WorkContext& w) {
  const minigpt::ModelConfig& c = m.config();
  const int P = static_cast<int>(prompt.size()), V = c.vocab_size;
  if (P < 1 || gen < 2 || P + gen - 1 > c.n_ctx)
    throw mq::UsageError(fmt::format("generation: prompt {} + {} generated tokens - 1 must fit n_ctx {} (prompt >= 1, "
                                     "gen >= 2)", P, gen, c.n_ctx));
  // The work terms are computed before the loop: nothing but the model runs between readings. Each in its
  // phase, so a model split by phase is charged what each phase runs (phase_projection.h).
  Work pre;
  {
    const minigpt::Model::PhaseGuard prefilling = m.use_phase(minigpt::Phase::prefill);
    pre = prefill_work(m, P, w);
  }
  const Work post1 = post_work(V, 1, w);
  std::vector<Work> dec(static_cast<size_t>(gen - 1));
  {
    const minigpt::Model::PhaseGuard decoding = m.use_phase(minigpt::Phase::decode);
    for (int i = 0; i < gen - 1; ++i) dec[static_cast<size_t>(i)] = decode_step_work(m, P + i, 1, w);
  }
  RunResult r;
  r.generated.reserve(static_cast<size_t>(gen));

  const Reading start = meter.read();
  Reading last = start;
  const std::vector<float> logits = m.prefill(prompt);
  boundary(meter, last, r.prefill, pre);
  int32_t t = argmax(logits.data() + static_cast<size_t>(P - 1) * V, V);
  r.generated.push_back(t);
  boundary(meter, last, r.post, post1);
  for (int i = 0; i < gen - 1; ++i) {
    const std::vector<float> lg = m.decode(t);
    boundary(meter, last, r.decode, dec[static_cast<size_t>(i)]);
    t = argmax(lg.data(), V);
    r.generated.push_back(t);
    boundary(meter, last, r.post, post1);
  }
  if (tok) r.text = tok->decode(r.generated);  // detokenizing is part of post
  boundary(meter, last, r.post, Work{});
  r.total.add(mq::energy::difference(start, last), r.prefill.work);
  r.total.work += r.decode.work;
  r.total.work += r.post.work;
  r.prefill.tokens = P;
  r.decode.tokens = gen - 1;
  r.post.tokens = gen;
  r.total.tokens = gen;
  return r;
}

BatchDecoder::BatchDecoder(const minigpt::Model& m, const std::vector<std::vector<int32_t>>& prompts, int steps)
    : m_(m), steps_(steps) {
  if (prompts.empty() || steps < 1) throw mq::UsageError("batch decode: need >= 1 prompt and >= 1 step");
  prompt_len_ = static_cast<int>(prompts[0].size());
  const int cap = prompt_len_ + steps;
  if (prompt_len_ < 1 || cap > m.config().n_ctx)
    throw mq::UsageError(fmt::format("batch decode: prompt {} + {} steps exceed n_ctx {}", prompt_len_, steps, m.config().n_ctx));
  std::vector<float> logits(static_cast<size_t>(prompt_len_) * m.config().vocab_size);
  for (const auto& p : prompts) {
    if (static_cast<int>(p.size()) != prompt_len_) throw mq::UsageError("batch decode: prompts of different lengths");
    caches_.push_back(minigpt::make_cache(m, cap));
    m.forward(caches_.back(), p.data(), prompt_len_, logits.data());
    first_.push_back(argmax(logits.data() + static_cast<size_t>(prompt_len_ - 1) * m.config().vocab_size, m.config().vocab_size));
  }
}

BatchRun BatchDecoder::run(mq::energy::Meter& meter, const WorkContext& w) {
  const int B = batch(), V = m_.config().vocab_size;
  std::vector<minigpt::KVCache*> ptrs;
  for (auto& c : caches_) {
    c.length = prompt_len_;  // rewind: the prompt's positions are untouched by decoding
    ptrs.push_back(&c);
  }
  std::vector<int32_t> toks = first_;
  std::vector<float> logits(static_cast<size_t>(B) * V);
  std::vector<Work> dec(static_cast<size_t>(steps_));
  {
    const minigpt::Model::PhaseGuard decoding = m_.use_phase(minigpt::Phase::decode);
    for (int s = 0; s < steps_; ++s) dec[static_cast<size_t>(s)] = decode_step_work(m_, prompt_len_ + s, B, w);
  }
  const Work postB = post_work(V, B, w);
  BatchRun r;
  const Reading start = meter.read();
  Reading last = start;
  for (int s = 0; s < steps_; ++s) {
    minigpt::decode_batch(m_, ptrs, toks.data(), logits.data());
    boundary(meter, last, r.decode, dec[static_cast<size_t>(s)]);
    for (int b = 0; b < B; ++b) toks[static_cast<size_t>(b)] = argmax(logits.data() + static_cast<size_t>(b) * V, V);
    boundary(meter, last, r.post, postB);
  }
  r.total.add(mq::energy::difference(start, last), r.decode.work);
  r.total.work += r.post.work;
  r.decode.tokens = r.post.tokens = r.total.tokens = static_cast<double>(B) * steps_;
  return r;
}

nlohmann::json work_json(const Work& w) {
  return {{"flops_fp32", w.flops_fp32}, {"ops_int8", w.ops_int8},
          {"bytes", {{"L1", w.bytes[0]}, {"L2", w.bytes[1]}, {"L3", w.bytes[2]}, {"DRAM", w.bytes[3]}}},
          {"bytes_total", w.total_bytes()}};
}

nlohmann::json phase_json(const PhaseStats& p) {
  return {{"joules", p.joules},         {"joules_per_token", p.joules_per_token()}, {"seconds", p.seconds},
          {"watts", p.watts()},         {"tokens", p.tokens},   {"tokens_per_s", p.tokens_per_s()},
          {"zones", p.zones},           {"work", work_json(p.work)}};
}

}  // namespace mqexp
