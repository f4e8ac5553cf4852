// Quantization error statistics (in double, so the statistic itself adds no error worth seeing).
#include "miniquant/stats.h"
#include "miniquant/util/timer.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "miniquant/quantize.h"

namespace mq {

QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const Scheme& s, const std::string& name) {
  QuantStats st;
  st.scheme = s;
  st.rows = rows;
  st.cols = cols;
  const auto t0 = std::chrono::steady_clock::now();
  const QTensor q = quantize(w, rows, cols, s, name);
  st.quantize_seconds = mq::seconds_since(t0);
  st.storage = q.storage();
  st.bits_per_weight = bits_per_weight(s, rows, cols);

  const std::vector<float> d = dequantize(q);
  double signal = 0.0, noise = 0.0, worst = 0.0;
  for (size_t i = 0; i < d.size(); ++i) {
    const double e = static_cast<double>(w[i]) - static_cast<double>(d[i]);
    signal += static_cast<double>(w[i]) * w[i];
    noise += e * e;
    worst = std::max(worst, std::fabs(e));
  }
  st.max_abs_error = worst;
  st.rms_error = d.empty() ? 0.0 : std::sqrt(noise / static_cast<double>(d.size()));
  st.sqnr_db = noise == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
  return st;
}

}  // namespace mq
