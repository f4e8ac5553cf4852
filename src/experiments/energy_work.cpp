#include "experiments/energy_work.h"

#include <algorithm>

#include "miniquant/energy/model.h"
#include "minigpt/throughput.h"

namespace mqexp {
namespace {

using mq::energy::Work;

// The Linears' operations per token (2 per multiply-add), split by how each one runs: int8 dot
// products when it quantizes its activations (+a8: one per weight; +a16: two, its codes' high and low
// halves), fp32 FMAs otherwise (fp32 weights, or codes widened to fp32). A quant map can mix them.
struct LinearOps {
  double int8 = 0, fp32 = 0;
  double model = 0;  // the Linears' multiply-adds x 2 as the model counts them (decode_traffic's flops):
                     // int8 + fp32, except that +a16 runs each of its multiply-adds as two int8 ones
};

LinearOps linear_ops(const minigpt::Model& m) {
  LinearOps ops;
  for (const auto& li : m.linears()) {
    const int dots = m.projection(li.name).int8_dots();
    const double madds = 2.0 * li.in * li.out;
    (dots > 0 ? ops.int8 : ops.fp32) += std::max(dots, 1) * madds;
    ops.model += madds;
  }
  return ops;
}

int level(const WorkContext& w, double bytes) { return mq::energy::level_for(w.caches, bytes, w.threads); }

// Bytes of every parameter a forward reads: Linear weights as stored, the embedding, fp32 rest.
double param_bytes(const minigpt::DecodeTraffic& t) { return t.weight_bytes + t.embedding_bytes + t.other_param_bytes; }

// `per_token` of Linear operations times `tokens`, and `other` fp32 operations.
void add_ops(Work& wk, const LinearOps& per_token, double tokens, double other) {
  wk.ops_int8 += per_token.int8 * tokens;
  wk.flops_fp32 += per_token.fp32 * tokens + other;
}

}  // namespace

Work decode_step_work(const minigpt::Model& m, int context, int batch, const WorkContext& w) {
  const minigpt::ModelConfig& c = m.config();
  const minigpt::DecodeTraffic t = minigpt::decode_traffic(m, context);
  Work wk;
  const double params = param_bytes(t);
  wk.bytes[level(w, params)] += params;
  // Activations: each sequence's vectors; their working set is the widest row times the batch.
  const double act_ws = 4.0 * batch * std::max({3 * c.d_model, c.d_ff, c.vocab_size});
  wk.bytes[level(w, act_ws)] += t.activation_bytes * batch;
  // KV: every sequence reads its own cache; together they are the working set.
  wk.bytes[level(w, t.kv_bytes * batch)] += t.kv_bytes * batch;
  const LinearOps lin = linear_ops(m);
  add_ops(wk, lin, batch, (t.flops - lin.model) * batch);
  return wk;
}

Work prefill_work(const minigpt::Model& m, int prompt, const WorkContext& w) {
  const minigpt::ModelConfig& c = m.config();
  const minigpt::DecodeTraffic t = minigpt::decode_traffic(m, 0);  // per-token terms without attention
  const double P = prompt, d = c.d_model, L = c.n_layer;
  Work wk;
  const double params = param_bytes(t);
  wk.bytes[level(w, params)] += params;
  const double act_ws = 4.0 * P * std::max({3 * c.d_model, c.d_ff, c.vocab_size});
  wk.bytes[level(w, act_ws)] += t.activation_bytes * P;
  const double kv = 4.0 * L * 2 * d * P;  // the block's keys and values
  wk.bytes[level(w, kv)] += 2 * kv;        // written once, read once by the score and value products
  const LinearOps lin = linear_ops(m);
  // t.flops at context 0 = Linears + LM head per token; attention: full P x P scores and sums per layer.
  add_ops(wk, lin, P, (t.flops - lin.model) * P + 4.0 * L * d * P * P);
  return wk;
}

Work post_work(int vocab, int tokens, const WorkContext& w) {
  Work wk;
  const double row = 4.0 * vocab;
  wk.bytes[level(w, row)] += row * tokens;
  wk.flops_fp32 += static_cast<double>(vocab) * tokens;  // one compare per logit
  return wk;
}

}  // namespace mqexp
