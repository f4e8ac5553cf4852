#include "minigpt/throughput.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/random.h"

namespace minigpt {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

std::vector<int32_t> speed_tokens(const ModelConfig& c, const SpeedOptions& o) {
  const int decode = std::min(o.decode, c.n_ctx - o.prompt);
  if (o.prompt < 1 || decode < 1 || o.reps < 1)
    throw mq::UsageError(fmt::format("measure_speed: prompt {} and decode {} must be >= 1 and fit n_ctx {}, reps {} >= 1",
                                     o.prompt, o.decode, c.n_ctx, o.reps));
  mq::Rng rng(o.seed);
  std::vector<int32_t> toks(static_cast<size_t>(o.prompt + decode));
  for (auto& t : toks) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab_size)));
  return toks;
}

Speed measure_speed(Model& m, const SpeedOptions& o) {
  const std::vector<int32_t> toks = speed_tokens(m.config(), o);
  const int decode = static_cast<int>(toks.size()) - o.prompt;
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + o.prompt);
  const Outputs pre_out = o.prefill_last_only ? Outputs::last : Outputs::all;

  Speed s;
  s.prompt = o.prompt;
  s.decode_tokens = decode;
  std::vector<double> dec, pre;
  const int first = o.warmup ? -1 : 0;  // r == -1: the warm-up
  for (int r = first; r < o.reps; ++r) {
    m.prefill(prompt);
    const double t0 = now_s();
    for (int i = 0; i < decode; ++i) m.decode(toks[static_cast<size_t>(o.prompt + i)]);
    if (r >= 0) dec.push_back((now_s() - t0) / decode);
  }
  for (int r = first; r < o.reps; ++r) {
    const double t0 = now_s();
    m.prefill(prompt, pre_out);
    if (r >= 0) pre.push_back(now_s() - t0);
  }
  m.reset_cache();
  s.decode = mq::summarize(dec, decode);
  s.prefill = mq::summarize(pre, 1);
  return s;
}

DecodeTraffic decode_traffic(const Model& m, int context) {
  const ModelConfig& c = m.config();
  const double d = c.d_model, L = c.n_layer, V = c.vocab_size;
  DecodeTraffic t;
  double biases = 0;
  for (const LinearInfo& li : m.linears()) {
    t.weight_bytes += static_cast<double>(m.projection(li.name).read_bytes());  // a phase split: the current phase's copy
    t.flops += 2.0 * li.in * li.out;
    t.activation_bytes += 4.0 * (li.in + li.out);
    biases += li.out;
  }
  t.flops += 2.0 * V * d;                    // LM head
  t.flops += L * 4.0 * context * d;          // scores q.k and the weighted sum of v, all heads
  t.embedding_bytes = static_cast<double>(m.embedding().bytes());
  t.activation_bytes += 4.0 * V;             // logits
  t.other_param_bytes = 4.0 * (biases + L * 4 * d + 2 * d + d);  // biases, ln1/ln2 (w, b), ln_f, wpe row
  t.kv_bytes = 4.0 * L * 2 * d * (context + 1);
  return t;
}

}  // namespace minigpt
