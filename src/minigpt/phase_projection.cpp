#include "minigpt/phase_projection.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/quant_plan.h"  // act_suffix

namespace minigpt {

PhaseProjection::PhaseProjection(std::unique_ptr<Projection> prefill, std::unique_ptr<Projection> decode, bool shared_codes,
                                 std::shared_ptr<const Phase> phase)
    : prefill_(std::move(prefill)), decode_(std::move(decode)), shared_(shared_codes), phase_(std::move(phase)) {
  if (!prefill_ || !decode_ || !phase_) throw mq::UsageError("PhaseProjection: a projection or the phase state is missing");
  if (prefill_->in_features() != decode_->in_features() || prefill_->out_features() != decode_->out_features())
    throw mq::UsageError(fmt::format("PhaseProjection: prefill ({}x{}) and decode ({}x{}) shapes differ", prefill_->out_features(),
                                     prefill_->in_features(), decode_->out_features(), decode_->in_features()));
}

long long PhaseProjection::weight_bytes() const {
  return shared_ ? prefill_->weight_bytes() : prefill_->weight_bytes() + decode_->weight_bytes();
}

std::string activation_suffix(const Projection& p) { return std::string(act_suffix(p.act())); }

std::string PhaseProjection::format_name() const {
  return fmt::format("prefill {}{} / decode {}{}", prefill_->format_name(), activation_suffix(*prefill_), decode_->format_name(),
                     activation_suffix(*decode_));
}

}  // namespace minigpt
