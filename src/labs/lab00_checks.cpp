// Grader of lab 00 (quantizers): each of the learner's functions against the library's, exactly
// (grids, codes, packed bytes, storage are integer decisions), and the learner's INT4 g64 quantizer
// running every Linear of the shipped MiniGPT.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <fmt/core.h>

#include "lab00.h"
#include "labs/grade.h"
#include "labs/workbench.h"
#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/layers/linear.h"
#include "miniquant/pack.h"
#include "miniquant/random.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_projection.h"

namespace mqlab {
namespace {

using mq::Scheme;

const std::vector<Scheme>& lab_schemes() {  // the lab's symmetric integer schemes
  static const std::vector<Scheme> s = {Scheme::parse("int8-per-tensor"), Scheme::parse("int8-per-channel"),
                                        Scheme::parse("int4-per-channel"), Scheme::parse("int4-g32"),
                                        Scheme::parse("int4-g64"), Scheme::parse("int4-g128")};
  return s;
}

// Normal weights with a few outlier columns (what real Linears look like), seed 42.
std::vector<float> weights(int64_t rows, int64_t cols, uint64_t seed) {
  mq::Rng rng(seed);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      w[r * cols + c] = static_cast<float>(rng.normal() * (c % 17 == 3 ? 0.5 : 0.05));
  return w;
}

// "" when equal, else where the first difference is.
std::string first_diff(const uint8_t* a, const uint8_t* b, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return fmt::format("{} byte {}: 0x{:02x} (library 0x{:02x})", what, i, a[i], b[i]);
  return "";
}

// Compares a learner's tensor with the library's: "" when identical.
std::string compare_tensors(const mq::QTensor& got, const mq::QTensor& want) {
  if (got.scheme != want.scheme) return fmt::format("scheme {} (library {})", got.scheme.name(), want.scheme.name());
  if (got.rows != want.rows || got.cols != want.cols)
    return fmt::format("shape {}x{} (library {}x{})", got.rows, got.cols, want.rows, want.cols);
  if (got.scales.size() != want.scales.size())
    return fmt::format("{} scales (library {})", got.scales.size(), want.scales.size());
  for (size_t i = 0; i < want.scales.size(); ++i)
    if (got.scales[i] != want.scales[i])
      return fmt::format("scale {}: fp16 0x{:04x} = {} (library 0x{:04x} = {})", i, got.scales[i],
                         mq::f16_to_f32(got.scales[i]), want.scales[i], mq::f16_to_f32(want.scales[i]));
  if (got.codes.size() != want.codes.size()) return fmt::format("{} code bytes (library {})", got.codes.size(), want.codes.size());
  return first_diff(got.codes.data(), want.codes.data(), want.codes.size(), "code");
}

void block_a(Checks& c) {
  mq::Rng rng(42);
  std::vector<float> values = {0.0f, 1.0f, 127.0f, 7.0f, 1e-3f, 6e-6f, 1e-7f, 3.4e-8f, 65504.0f * 7.0f};
  for (int i = 0; i < 4000; ++i) values.push_back(static_cast<float>(std::exp(rng.uniform() * 20.0 - 14.0)));
  for (const Scheme& s : {Scheme::parse("int8-per-channel"), Scheme::parse("int4-g64")}) {
    int64_t bad = 0;
    std::string first;
    for (float a : values) {
      const mq::Grid want = mq::symmetric_grid(a, s), got = lab::symmetric_grid(a, s);
      if (got.scale_bits != want.scale_bits || got.scale != want.scale || got.zero != want.zero) {
        if (bad++ == 0)
          first = fmt::format("absmax {:g}: scale 0x{:04x} ({:g}), zero {} (library 0x{:04x} ({:g}), zero {})", a,
                              got.scale_bits, got.scale, got.zero, want.scale_bits, want.scale, want.zero);
      }
    }
    c.expect(bad == 0, fmt::format("{}: grids of {} absmax values (incl. 0 and fp16-subnormal scales)", s.name(), values.size()),
             "all equal to mq::symmetric_grid", bad == 0 ? "all equal" : fmt::format("{} differ; first: {}", bad, first));
  }
  bool threw = false;
  try {
    (void)lab::symmetric_grid(1e7f, Scheme::parse("int8-per-channel"));
  } catch (const mq::Error&) {
    threw = true;
  }
  c.expect(threw, "absmax 1e7 (scale beyond fp16's 65504)", "throws mq::Error", threw ? "threw mq::Error" : "returned a grid");
}

void block_b(Checks& c) {
  mq::Rng rng(42);
  for (const Scheme& s : {Scheme::parse("int8-per-channel"), Scheme::parse("int4-g64")}) {
    int64_t bad = 0, n = 0;
    std::string first;
    for (int k = 0; k < 200; ++k) {
      const float absmax = static_cast<float>(0.01 + rng.uniform());
      const mq::Grid g = mq::symmetric_grid(absmax, s);
      std::vector<float> ws = {absmax, -absmax, 0.0f, 2.0f * absmax, -2.0f * absmax};
      for (int q = -s.qmax(); q < s.qmax(); ++q) ws.push_back((static_cast<float>(q) + 0.5f) * g.scale);  // ties
      for (int i = 0; i < 50; ++i) ws.push_back(static_cast<float>((rng.uniform() * 2.0 - 1.0) * absmax));
      for (float w : ws) {
        ++n;
        const uint8_t want = mq::encode(w, g, s), got = lab::encode(w, g, s);
        if (got != want && bad++ == 0)
          first = fmt::format("w = {:g} with scale {:g}: field {} (library {})", w, g.scale, got, want);
      }
    }
    c.expect(bad == 0, fmt::format("{}: {} weights incl. ties (k + 0.5) * scale and |w| beyond absmax", s.name(), n),
             "all equal to mq::encode", bad == 0 ? "all equal" : fmt::format("{} differ; first: {}", bad, first));
  }
  const Scheme s4 = Scheme::parse("int4-g64");
  const mq::Grid g = mq::symmetric_grid(0.7f, s4);
  const int got = static_cast<int>(lab::encode(-0.7f, g, s4)) - g.zero;
  c.expect(got == -7, "int4: w = -absmax", "code -7 (field 1): the grid is [-7, 7], not [-8, 7]", fmt::format("code {}", got));
  // An all-zero group's grid has scale 0: 0 / 0 is NaN, and a NaN cast to an integer is any field at all.
  for (const Scheme& s : {Scheme::parse("int8-per-channel"), s4}) {
    const mq::Grid z = mq::symmetric_grid(0.0f, s);
    const int f = lab::encode(0.0f, z, s);
    c.expect(f == z.zero, s.name() + ": w = 0 in an all-zero group (scale 0)", fmt::format("the zero field {}", z.zero), fmt::format("field {}", f));
  }
}

void block_c(Checks& c) {
  mq::Rng rng(42);
  for (int bits : {8, 4}) {
    std::string first;
    for (int64_t n : {0, 1, 2, 3, 31, 64, 65, 127, 256}) {
      std::vector<uint8_t> fields(static_cast<size_t>(n));
      for (auto& f : fields) f = static_cast<uint8_t>(rng.below(1u << bits));
      const size_t bytes = static_cast<size_t>((n * bits + 7) / 8);
      std::vector<uint8_t> want(bytes + 1, 0xA5), got(bytes + 1, 0xA5);  // last byte: a canary
      mq::pack_fields(fields.data(), n, bits, want.data());
      lab::pack_fields(fields.data(), n, bits, got.data());
      std::string d = first_diff(got.data(), want.data(), bytes, "packed");
      if (d.empty() && got[bytes] != 0xA5) d = fmt::format("wrote past the {} bytes of the row", bytes);
      if (!d.empty() && first.empty()) first = fmt::format("n = {}: {}", n, d);
    }
    c.expect(first.empty(), fmt::format("int{} packing of rows of 0..256 fields (odd lengths too)", bits),
             "bytes equal to mq::pack_fields, nothing written past the row", first.empty() ? "all equal" : first);
  }
}

void block_d(Checks& c) {
  std::vector<Scheme> schemes = lab_schemes();
  schemes.push_back(Scheme::parse("int4-g64-asym"));
  schemes.push_back(Scheme::parse("int8-per-channel-asym"));
  int64_t n = 0;
  std::string first;
  for (const Scheme& s : schemes)
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{768, 256}, {256, 1024}, {3, 64}, {1, 128}, {5, 33}, {7, 384}}) {
      try {
        s.check_shape(rows, cols);
      } catch (const mq::UsageError&) {
        continue;  // a group size that does not divide cols
      }
      ++n;
      const mq::Storage want = mq::storage_of(s, rows, cols), got = lab::storage_of(s, rows, cols);
      if ((got.code_bytes != want.code_bytes || got.scale_bytes != want.scale_bytes || got.zero_bytes != want.zero_bytes) &&
          first.empty())
        first = fmt::format("{} {}x{}: codes {} + scales {} + zeros {} (library {} + {} + {})", s.name(), rows, cols,
                            got.code_bytes, got.scale_bytes, got.zero_bytes, want.code_bytes, want.scale_bytes,
                            want.zero_bytes);
    }
  c.expect(first.empty(), fmt::format("{} (scheme, shape) pairs incl. odd int4 rows and asymmetric zero-points", n),
           "equal to mq::storage_of", first.empty() ? "all equal" : first);
  const mq::Storage g64 = lab::storage_of(Scheme::parse("int4-g64"), 768, 256);
  c.bar(g64.total() == 768 * 256 / 2 + 768 * 4 * 2, "int4-g64 bytes of a 768x256 Linear", "98304 codes + 6144 scales = 104448",
        fmt::format("{}", g64.total()));
}

void block_e(Checks& c, const LabOptions& o) {
  for (const Scheme& s : lab_schemes()) {
    std::string first;
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{64, 256}, {17, 384}, {8, 64}, {3, 129}}) {
      try {
        s.check_shape(rows, cols);
      } catch (const mq::UsageError&) {
        continue;
      }
      const std::vector<float> w = weights(rows, cols, 42 + rows);
      const std::string d = compare_tensors(lab::quantize_ref(w.data(), rows, cols, s), mq::quantize_ref(w.data(), rows, cols, s));
      if (!d.empty() && first.empty()) first = fmt::format("{}x{}: {}", rows, cols, d);
    }
    c.expect(first.empty(), s.name() + ": random matrices with outlier columns", "scales and packed codes equal to mq::quantize_ref",
             first.empty() ? "all equal" : first);
  }
  std::vector<float> z(64 * 64, 0.0f);
  const std::string dz = compare_tensors(lab::quantize_ref(z.data(), 64, 64, Scheme::parse("int4-g32")),
                                         mq::quantize_ref(z.data(), 64, 64, Scheme::parse("int4-g32")));
  c.expect(dz.empty(), "an all-zero matrix (int4-g32)", "scale 0, every code 0", dz.empty() ? "as the library" : dz);
  z[5 * 64 + 7] = std::numeric_limits<float>::quiet_NaN();
  std::string nan = "returned a tensor";
  try {
    (void)lab::quantize_ref(z.data(), 64, 64, Scheme::parse("int4-g32"), "w");
  } catch (const mq::Error& e) {
    nan = std::string("threw: ") + e.what();
  }
  c.expect(nan.rfind("threw", 0) == 0, "a NaN weight at (5, 7)", "throws mq::Error (never a silent code)", nan);
  // A group size that does not divide the row: refused before any group is read (never a read past the scales).
  std::string shape = "returned a tensor";
  try {
    const std::vector<float> w96 = weights(4, 96, 3);
    (void)lab::quantize_ref(w96.data(), 4, 96, Scheme::parse("int4-g64"), "w");
  } catch (const mq::UsageError& e) {
    shape = std::string("mq::UsageError: ") + e.what();
  } catch (const std::exception& e) {
    shape = std::string("another exception: ") + e.what();
  }
  c.expect(shape.rfind("mq::UsageError", 0) == 0, "int4-g64 on rows of 96 (64 does not divide 96)", "throws mq::UsageError", shape);

  // Inside the real model: every Linear of the shipped MiniGPT through the learner's quantizer.
  const Workbench wb = load_workbench(o);
  minigpt::Model fp = wb.fresh();
  minigpt::Model lib = wb.fresh();
  minigpt::quantize_model(lib, minigpt::QuantPlan::uniform("int4-g64"));
  minigpt::Model mine = wb.fresh();
  std::string first;
  for (const minigpt::LinearInfo& li : fp.linears()) {
    for (const char* name : {"int4-g64", "int8-per-channel"}) {
      const Scheme s = Scheme::parse(name);
      mq::QTensor q = lab::quantize_ref(li.weight, li.out, li.in, s, li.name);
      const std::string d = compare_tensors(q, mq::quantize_ref(li.weight, li.out, li.in, s, li.name));
      if (!d.empty() && first.empty()) first = fmt::format("{} {}: {}", li.name, name, d);
      // The model runs the learner's codes (the embedding fp16, as the library's plan stores it).
      if (s == Scheme::parse("int4-g64"))
        mine.set_projection(li.name, std::make_unique<minigpt::QuantizedProjection>(mq::QuantizedLinear(std::move(q))));
    }
  }
  c.expect(first.empty(), "the 16 Linears of data/minigpt.safetensors in int4-g64 and int8-per-channel",
           "equal to mq::quantize_ref", first.empty() ? "all equal" : first);
  minigpt::QuantPlan emb_only = minigpt::QuantPlan::uniform("fp32");  // fp32 Linears are left as they are
  emb_only.embedding = mq::Scheme::fp16();
  minigpt::quantize_model(mine, emb_only);
  const double p_fp = wb.ppl(fp), p_lib = wb.ppl(lib), p_mine = wb.ppl(mine);
  const double vs_lib = p_mine / p_lib - 1.0, vs_fp = p_mine / p_fp - 1.0;
  c.bar(std::fabs(vs_lib) <= 0.005, fmt::format("MiniGPT with your int4-g64 Linears, PPL on {} test tokens", wb.test.size()),
        "within +-0.5% of the library's int4-g64 model", fmt::format("{:.4f} vs library {:.4f} ({})", p_mine, p_lib, pct(vs_lib, 3)));
  c.bar(std::fabs(vs_fp) <= 0.01, "its perplexity gap to fp32", "within +-1% of fp32",
        fmt::format("{:.4f} vs fp32 {:.4f} ({})", p_mine, p_fp, pct(vs_fp, 3)));
}

void block_f(Checks& c, const LabOptions& o) {
  const Workbench wb = load_workbench(o);
  const minigpt::Model m = wb.fresh();
  const minigpt::LinearInfo li = m.linears().front();  // h.0.attn.c_attn
  const std::vector<float> rnd = weights(96, 256, 7);
  int equal = 0;
  std::string sqnrs;
  for (const Scheme& s : lab_schemes()) {
    std::string first;
    double sqnr = 0;
    for (int k = 0; k < 2; ++k) {
      const float* w = k == 0 ? rnd.data() : li.weight;
      const int64_t rows = k == 0 ? 96 : li.out, cols = k == 0 ? 256 : li.in;
      const mq::QuantStats want = mq::measure_scheme(w, rows, cols, s, "w"), got = lab::measure_scheme(w, rows, cols, s, "w");
      auto close = [](double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b) + 1e-30; };
      std::string d;
      if (got.storage.total() != want.storage.total() || got.bits_per_weight != want.bits_per_weight)
        d = fmt::format("bytes {} / {:.4f} bits per weight (library {} / {:.4f})", got.storage.total(), got.bits_per_weight,
                        want.storage.total(), want.bits_per_weight);
      else if (!close(got.max_abs_error, want.max_abs_error, 1e-6) || !close(got.rms_error, want.rms_error, 1e-6))
        d = fmt::format("max error {:.9g}, RMS {:.9g} (library {:.9g}, {:.9g})", got.max_abs_error, got.rms_error, want.max_abs_error,
                        want.rms_error);
      else if (std::fabs(got.sqnr_db - want.sqnr_db) > 0.01)
        d = fmt::format("SQNR {:.3f} dB (library {:.3f} dB)", got.sqnr_db, want.sqnr_db);
      if (!d.empty() && first.empty()) first = (k == 0 ? "random 96x256: " : li.name + ": ") + d;
      if (k == 1) sqnr = got.sqnr_db;
    }
    equal += c.expect(first.empty(), s.name() + ": bytes, bits/weight, max and RMS error, SQNR",
                      "equal to mq::measure_scheme (errors 1e-6 relative, SQNR 0.01 dB)",
                      first.empty() ? fmt::format("as the library; {} SQNR {:.2f} dB", li.name, sqnr) : first);
    sqnrs += fmt::format("{}{} {:.2f} dB", sqnrs.empty() ? "" : ", ", s.name(), sqnr);
  }
  // A lossless round trip: every weight a multiple of 1/128 and each row's largest 127/128, so int8-per-channel's
  // scale is exactly 1/128: no error, SQNR +infinity (not 0, not NaN).
  std::vector<float> exact(4 * 128);
  for (size_t i = 0; i < exact.size(); ++i) exact[i] = static_cast<float>(static_cast<int>((i * 37) % 255) - 127) / 128.0f;
  for (int r = 0; r < 4; ++r) exact[static_cast<size_t>(r) * 128] = 127.0f / 128.0f;
  const mq::QuantStats lossless = lab::measure_scheme(exact.data(), 4, 128, Scheme::parse("int8-per-channel"), "w");
  c.expect(lossless.max_abs_error == 0 && lossless.rms_error == 0 && std::isinf(lossless.sqnr_db) && lossless.sqnr_db > 0,
           "int8-per-channel on weights its grid holds exactly", "max and RMS error 0, SQNR +inf dB",
           fmt::format("max error {:g}, RMS {:g}, SQNR {:g} dB", lossless.max_abs_error, lossless.rms_error, lossless.sqnr_db));
  c.bar(equal == static_cast<int>(lab_schemes().size()), fmt::format("round trip of {} in the six schemes", li.name),
        "bytes, errors and SQNR equal to the library's", fmt::format("{} of 6 equal; SQNR {}", equal, sqnrs));
}

Lab make(const LabOptions& o) {
  Lab lab{"00", "quantizers", "labs/00-quantizers/quantizers.cpp", {}};
  lab.blocks = {
      {"A", "symmetric_grid: the fp16 scale of a group", block_a, {}, {"mq::symmetric_grid", "mq::detail::grid_from", "mq::detail::grid_for"}},
      {"B", "encode: round, clamp to [-qmax, qmax], offset", block_b, {}, {"mq::encode"}},
      {"C", "pack_fields: int8 bytes, int4 nibbles", block_c, {}, {"mq::pack_fields"}},
      {"D", "storage_of: bytes with scales and zero-points", block_d, {"int4-g64 bytes of a 768x256 Linear"}, {"mq::storage_of"}},
      {"E", "quantize_ref: per-tensor, per-channel, per-group, inside MiniGPT", [o](Checks& c) { block_e(c, o); },
       {"MiniGPT int4-g64 PPL within +-0.5% of the library's", "its gap to fp32 within +-1%"},
       {"mq::quantize_ref", "mq::quantize"}},
      {"F", "measure_scheme: round-trip error and SQNR", [o](Checks& c) { block_f(c, o); },
       {"round trip of h.0.attn.c_attn in the six schemes"}, {"mq::measure_scheme"}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv, MQ_LEARNER_OBJECT); }
