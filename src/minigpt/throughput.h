// Speed of a MiniGPT as it is configured (whatever its projections and embedding): decode and
// prefill tokens/s with warm-up and repetitions, and the memory traffic and FLOPs of one decode
// step, term by term, for the roofline.
#pragma once
#include <cstdint>
#include <vector>

#include "miniquant/roofline.h"
#include "minigpt/model.h"

namespace minigpt {

struct SpeedOptions {
  int prompt = 64;     // prefill length, and the cache length decode starts from
  int decode = 64;     // tokens decoded per repetition (capped by n_ctx - prompt)
  int reps = 5;        // timed repetitions
  bool warmup = true;  // one untimed repetition first (page faults, thread start, caches)
  uint64_t seed = 42;  // random prompt tokens
  // Prefill computes logits for the last position only (Outputs::last), as llama.cpp does for a
  // prompt; off (every position's logits), the sweep's prefill is unchanged.
  bool prefill_last_only = false;
};

// The ids measure_speed feeds: `prompt` then `decode` (capped as measure_speed caps it) random ids
// below `vocab` from `seed`, so another program can be timed on exactly the same tokens.
std::vector<int32_t> speed_tokens(const ModelConfig& c, const SpeedOptions& o);

struct Speed {
  mq::Timing decode;   // seconds per decoded token
  mq::Timing prefill;  // seconds per prefill call of `prompt` tokens
  int prompt = 0, decode_tokens = 0;
  double decode_tokens_per_s() const { return 1.0 / decode.median; }
  double prefill_tokens_per_s() const { return prompt / prefill.median; }
};
// Decode: each repetition prefills the prompt (untimed), then times `decode` single-token steps.
// With warmup, one untimed repetition of each comes first.
// Prefill: each repetition times one prefill of the prompt (its logits: every position, or the
// last only with prefill_last_only).
Speed measure_speed(Model& m, const SpeedOptions& o = {});

// One decode step at cache length `context`: FLOPs and bytes moved, by term.
struct DecodeTraffic {
  double flops = 0;              // 2 per multiply-add: Linears, LM head, attention
  double weight_bytes = 0;       // Linear weights as stored (codes + scales + zero-points) that one step reads
  double embedding_bytes = 0;    // the tied table, read whole by the LM head
  double other_param_bytes = 0;  // biases, LayerNorms, one position row (fp32)
  double activation_bytes = 0;   // each Linear's input and output vectors, the logits (fp32)
  double kv_bytes = 0;           // keys and values read for `context` positions, and written for one
  double total_bytes() const { return weight_bytes + embedding_bytes + other_param_bytes + activation_bytes + kv_bytes; }
  double intensity() const { return flops / total_bytes(); }  // FLOP per byte
};
DecodeTraffic decode_traffic(const Model& m, int context);

}  // namespace minigpt
