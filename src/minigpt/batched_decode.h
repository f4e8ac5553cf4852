// Decode of B independent sequences at once: each has its own KV cache (its own length), the
// Linears and the tied LM head run once on all B rows (the kernels' batched path), attention runs
// per sequence against its own cache. Equals B separate Model::forward calls of one token each, up
// to float rounding (the batched kernels may sum in another order).
#pragma once
#include <cstdint>
#include <vector>

#include "minigpt/model.h"

namespace minigpt {

// A cache with room for `capacity` positions (1 <= capacity <= n_ctx): many sequences at short
// context need much less than n_ctx each.
KVCache make_cache(const Model& m, int capacity);

// One decode step: sequence b feeds tokens[b] after the caches[b]->length positions it holds and
// its cache grows by one; logits (B, vocab) row-major, B = caches.size(). mq::UsageError when a
// token is out of range, a cache is full, or a cache does not match the model; mq::Error for a
// non-finite logit (as Model::forward).
void decode_batch(const Model& m, const std::vector<KVCache*>& caches, const int32_t* tokens, float* logits);

}  // namespace minigpt
