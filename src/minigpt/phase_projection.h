// Precision per inference phase: one Linear that runs one projection while the model prefills and another
// while it decodes (Model::phase()). Prefill is many tokens per call and bound by arithmetic, decode one
// token per call and bound by reading the weights, so each phase may want its own activation mode over the
// same stored codes (e.g. prefill "+a8", decode weight-only: no extra bytes), or its own stored recipe (two
// copies: their bytes add up).
#pragma once
#include <memory>
#include <string>

#include "minigpt/model.h"
#include "minigpt/projection.h"

namespace minigpt {

class PhaseProjection final : public Projection {
 public:
  // `shared_codes`: both projections run the same stored codes (only the activation mode differs), so the
  // weight is stored once; otherwise the two copies' bytes add up. The phase is read from `phase`
  // (Model::phase_state()) at every forward. Throws mq::UsageError when the shapes differ.
  PhaseProjection(std::unique_ptr<Projection> prefill, std::unique_ptr<Projection> decode, bool shared_codes,
                  std::shared_ptr<const Phase> phase);
  int in_features() const override { return prefill_->in_features(); }
  int out_features() const override { return prefill_->out_features(); }
  // x: (n, in), y: (n, out) row-major: the current phase's projection.
  void forward(const float* x, int n, float* y) const override { current().forward(x, n, y); }
  long long weight_bytes() const override;  // stored: once with shared codes, both copies otherwise
  long long read_bytes() const override { return current().read_bytes(); }
  // "prefill <name> / decode <name>" (with their activation modes; see activation_name()).
  std::string format_name() const override;
  // The current phase's: the energy model charges each phase's arithmetic as that phase runs it.
  mq::ActMode act() const override { return current().act(); }
  void relocate(const Rebase& rebase) override {
    prefill_->relocate(rebase);
    decode_->relocate(rebase);
  }
  const Projection& for_phase(Phase p) const { return p == Phase::prefill ? *prefill_ : *decode_; }
  bool shared_codes() const { return shared_; }

 private:
  const Projection& current() const { return for_phase(*phase_); }
  std::unique_ptr<Projection> prefill_, decode_;
  bool shared_ = false;
  std::shared_ptr<const Phase> phase_;
};

// How a projection takes its activations, as a recipe suffix: "+a8", "+a16", "+bf16", or "" (fp32).
std::string activation_suffix(const Projection& p);

}  // namespace minigpt
