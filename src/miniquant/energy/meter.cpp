#include "miniquant/energy/meter.h"

#include <chrono>

namespace mq::energy {

Work& Work::operator+=(const Work& o) {
  flops_fp32 += o.flops_fp32;
  ops_int8 += o.ops_int8;
  for (int i = 0; i < kLevels; ++i) bytes[i] += o.bytes[i];
  return *this;
}

Work Work::scaled(double k) const {
  Work w = *this;
  w.flops_fp32 *= k;
  w.ops_int8 *= k;
  for (double& b : w.bytes) b *= k;
  return w;
}

Interval difference(const Reading& from, const Reading& to) {
  Interval iv;
  iv.seconds = to.seconds - from.seconds;
  iv.joules = to.total - from.total;
  for (const auto& [zone, j] : to.joules) {
    const auto it = from.joules.find(zone);
    iv.zones[zone] = j - (it == from.joules.end() ? 0.0 : it->second);
  }
  return iv;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace mq::energy
