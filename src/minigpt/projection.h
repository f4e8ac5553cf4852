// The one interface through which MiniGPT runs its Linear layers: a float layer and a quantized
// one are swapped without the model knowing which it runs.
#pragma once
#include <functional>
#include <string>

#include "miniquant/kernels/kernels.h"  // mq::ActMode

namespace minigpt {

// Where Model::relocate moved the model's parameter buffer: the new address of a pointer into the old one (a
// pointer outside it comes back unchanged).
using Rebase = std::function<const float*(const float*)>;

class Projection {
 public:
  virtual ~Projection() = default;
  virtual int in_features() const = 0;
  virtual int out_features() const = 0;
  // y = x W^T for n tokens. x: (n, in) row-major, y: (n, out) row-major. No bias: biases stay
  // fp32 in the model and are added by the caller, whatever format the weight is stored in.
  virtual void forward(const float* x, int n, float* y) const = 0;
  // Bytes this layer really stores for its weight (codes + scales + zero-points).
  virtual long long weight_bytes() const = 0;
  // Bytes a forward pass reads of the weight: weight_bytes(), except for a layer that stores one copy per
  // inference phase (phase_projection.h), which reads only the current phase's.
  virtual long long read_bytes() const { return weight_bytes(); }
  virtual std::string format_name() const = 0;
  // How the layer takes its activations (the field every name and charge below is read from, as ggml's
  // vec_dot_type): weight-only (fp32 multiply-adds), "+bf16", "+a8" or "+a16". fp32 layers: weight-only.
  virtual mq::ActMode act() const { return mq::ActMode::weight_only; }
  // int8 dot products per weight per token: 1 when the layer quantizes each token's activations to
  // int8 and multiplies integers (a "+a8" recipe), 2 for 16-bit activations run as two int8 halves
  // ("+a16"), 0 when it multiplies in fp32 (fp32 weights, or codes widened to fp32). What the sweep's
  // roofline bound and the energy model charge its arithmetic as.
  int int8_dots() const { return act() == mq::ActMode::dynamic_int16 ? 2 : act() == mq::ActMode::dynamic_int8 ? 1 : 0; }
  // True when the layer rounds its activations to bf16 before multiplying ("+bf16"): fp32-class
  // multiply-adds (int8_dots() == 0), 8 significant bits of activation.
  bool bf16_activations() const { return act() == mq::ActMode::bf16; }
  bool int8_activations() const { return int8_dots() > 0; }
  // Copies the weight this layer owns into newly allocated memory and frees the old copy; a layer that views
  // the model's parameters re-points its view through `rebase` (Model::relocate says why).
  virtual void relocate(const Rebase& rebase) = 0;
};

}  // namespace minigpt
