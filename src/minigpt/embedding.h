// The tied token embedding / LM head behind one interface, so its storage (fp32 now, fp16 for
// quantized models) can change without the model knowing. Not one of the Linears.
#pragma once
#include <cstdint>
#include <string>

#include "miniquant/layers/linear.h"
#include "minigpt/projection.h"  // Rebase

namespace minigpt {

class Embedding {
 public:
  virtual ~Embedding() = default;
  virtual int vocab_size() const = 0;
  virtual int dim() const = 0;
  // out(d) = the embedding row of `token`, as float.
  virtual void lookup(int32_t token, float* out) const = 0;
  // The tied LM head: logits(n, vocab) = h(n, d) E^T.
  virtual void logits(const float* h, int n, float* out) const = 0;
  virtual long long bytes() const = 0;
  virtual std::string format_name() const = 0;
  // As Projection::relocate: a stored table moves to new memory, a view of the model's wte re-points.
  virtual void relocate(const Rebase& rebase) = 0;
};

// fp32 view of a (vocab, d) row-major table it does not own (the model's wte), so training
// updates are seen without a copy. The table must outlive this object.
class FloatEmbedding final : public Embedding {
 public:
  FloatEmbedding(const float* table, int vocab, int d) : e_(table), vocab_(vocab), d_(d) {}
  int vocab_size() const override { return vocab_; }
  int dim() const override { return d_; }
  void lookup(int32_t token, float* out) const override;
  void logits(const float* h, int n, float* out) const override;
  long long bytes() const override { return 4LL * vocab_ * d_; }
  std::string format_name() const override { return "fp32"; }
  void relocate(const Rebase& rebase) override { e_ = rebase(e_); }

 private:
  const float* e_;  // (vocab, d) row-major
  int vocab_, d_;
};

// fp16 copy of a (vocab, d) table, as quantized models store it: lookups widen one row, the tied
// LM head runs the fp16 weight-only kernel (no fp32 copy of the table is kept).
class HalfEmbedding final : public Embedding {
 public:
  // table: (vocab, d) row-major fp32; throws mq::Error for values fp16 cannot hold (NaN, > 65504).
  HalfEmbedding(const float* table, int vocab, int d);
  // A stored fp16 table (vocab, d), as quantized checkpoints hold it; mq::UsageError for another scheme.
  explicit HalfEmbedding(mq::QTensor table);
  const mq::QuantizedLinear& table() const { return e_; }
  int vocab_size() const override { return static_cast<int>(e_.out_features()); }
  int dim() const override { return static_cast<int>(e_.in_features()); }
  void lookup(int32_t token, float* out) const override;
  void logits(const float* h, int n, float* out) const override { e_.forward(h, n, out); }
  long long bytes() const override { return e_.storage().total(); }
  std::string format_name() const override { return "fp16"; }
  void relocate(const Rebase&) override { e_ = mq::QuantizedLinear(e_); }

 private:
  mq::QuantizedLinear e_;  // (vocab, d) fp16: logits = h E^T is a Linear with out = vocab
};

}  // namespace minigpt
