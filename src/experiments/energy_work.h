// The work of each inference phase as the energy model charges it: operations by datatype (each
// Linear's as it runs: int8 dot products for a "+a8" Linear, fp32 for the others) and bytes by the
// memory level they come from. Bytes follow minigpt::decode_traffic (weights as
// stored with their scales, the embedding, the fp32 parameters, activations, the KV cache); each
// term's level is where its working set fits in this machine's caches.
#pragma once
#include <vector>

#include "miniquant/energy/meter.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/model.h"

namespace mqexp {

struct WorkContext {
  std::vector<mq::CacheLevel> caches;  // this machine's, from mq::cpu_info()
  int threads = 1;
};

// One decode step of `batch` sequences, each with `context` positions already cached: the
// parameters are read once for the whole batch; activations, KV and operations scale with it.
mq::energy::Work decode_step_work(const minigpt::Model& m, int context, int batch, const WorkContext& w);
// Prefill of `prompt` tokens into an empty cache: parameters once, per-token activations, the KV
// block written and read once, logits for every position (Model::prefill computes them all) and the
// full prompt x prompt attention scores the forward computes.
mq::energy::Work prefill_work(const minigpt::Model& m, int prompt, const WorkContext& w);
// Greedy sampling of `tokens` tokens: one pass over `vocab` fp32 logits each.
mq::energy::Work post_work(int vocab, int tokens, const WorkContext& w);

}  // namespace mqexp
