#include "verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "miniquant/kernels/kernels.h"

#include "lut3_kernel16.h"
#include "lut_q3k_kernel16.h"

namespace vsggml {

RefActs weight_only_acts(const std::vector<float>& x, int64_t n, int64_t in) {
  RefActs a{x, std::vector<double>(static_cast<size_t>(n * in))};
  for (size_t j = 0; j < x.size(); ++j) a.slack[j] = 0x1p-16 * std::fabs(x[j]);
  return a;
}

RefActs table16_acts(const std::vector<float>& x, int64_t n, int64_t in, const mq::BlockedCodes& w) {
  const std::vector<double> slack = mqbench::lut::table16_slack(w, x.data(), n);  // (n, groups)
  RefActs a{x, std::vector<double>(x.size())};
  for (int64_t tok = 0; tok < n; ++tok)
    for (int64_t j = 0; j < in; ++j) a.slack[static_cast<size_t>(tok * in + j)] = slack[static_cast<size_t>(tok * w.groups + j / w.group_k)];
  return a;
}

RefActs int8_token_acts(const std::vector<float>& x, int64_t n, int64_t in) {
  RefActs a{std::vector<float>(x.size()), std::vector<double>(x.size(), 0.0)};
  std::vector<int8_t> codes(static_cast<size_t>(in));  // (in)
  for (int64_t t = 0; t < n; ++t) {
    const float s = mq::quantize_activations(x.data() + t * in, in, codes.data());
    for (int64_t j = 0; j < in; ++j) a.x[static_cast<size_t>(t * in + j)] = s * static_cast<float>(codes[static_cast<size_t>(j)]);
  }
  return a;
}

RefActs ggml_acts(const std::vector<float>& x, int64_t n, int64_t in, const ggml_type_traits& traits, const Api::ActRows& rows,
                  const ActQuant& q) {
  RefActs a{std::vector<float>(x.size()), std::vector<double>(x.size(), 0.0)};
  std::vector<uint8_t> blocks(static_cast<size_t>(in / traits.blck_size) * traits.type_size);  // one token's blocks
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x.data() + t * in;
    rows.from_float_ref(xt, blocks.data(), in);
    rows.to_float(blocks.data(), a.x.data() + t * in, in);
    for (int64_t j0 = 0; j0 < in; j0 += q.block) {
      double amax = 0;
      for (int64_t j = j0; j < j0 + q.block; ++j) amax = std::max(amax, static_cast<double>(std::fabs(xt[j])));
      if (amax == 0) continue;
      const double step = amax / q.codes_max * (1 + 0x1p-10);  // one code, with room for the scale's rounding
      for (int64_t j = j0; j < j0 + q.block; ++j) {
        // The SIMD quantizer scales by codes_max / absmax where the reference divides by absmax / codes_max: the
        // products differ by a few ulps (2^-17 at 127), so only values this close to a tie can round apart.
        const double v = std::fabs(xt[j]) * q.codes_max / amax;
        if (std::fabs(v - std::floor(v) - 0.5) < 1e-3) a.slack[static_cast<size_t>(t * in + j)] = step;
      }
    }
  }
  return a;
}

RefActs ktable16_acts(const std::vector<float>& x, int64_t n, int64_t in, const mqbench::lut::KTable16& w) {
  const std::vector<double> slack = mqbench::lut::ktable16_slack(w, x.data(), n);  // (n, super-blocks)
  RefActs a{x, std::vector<double>(x.size())};
  for (int64_t tok = 0; tok < n; ++tok)
    for (int64_t j = 0; j < in; ++j) a.slack[static_cast<size_t>(tok * in + j)] = slack[static_cast<size_t>(tok * w.sbs() + j / 256)];
  return a;
}

std::string check_output(const std::vector<float>& deq, int64_t out, int64_t in, const RefActs& a, int64_t n,
                         const std::vector<float>& y, const std::vector<float>* mags) {
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < out; r += 17) rows.push_back(r);
  if (rows.back() != out - 1) rows.push_back(out - 1);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = a.x.data() + t * in;
    const double* et = a.slack.data() + t * in;
    for (int64_t r : rows) {
      const float* w = deq.data() + r * in;
      const float* wm = mags ? mags->data() + r * in : nullptr;
      double exact = 0, act = 0, mag = 0;
      for (int64_t j = 0; j < in; ++j) {
        const double m = wm ? wm[j] : std::fabs(w[j]);
        exact += static_cast<double>(w[j]) * xt[j];
        act += m * et[j];
        mag += m * (std::fabs(xt[j]) + et[j]);
      }
      const double bound = 1.01 * (act + static_cast<double>(in + 8) * 0x1p-24 * mag);
      const double got = y[static_cast<size_t>(t * out + r)];
      if (!(std::fabs(got - exact) <= bound)) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "token %lld row %lld: %.9g against the reference %.9g, bound %.3g",
                      static_cast<long long>(t), static_cast<long long>(r), got, exact, bound);
        return buf;
      }
    }
  }
  return "";
}

}  // namespace vsggml
