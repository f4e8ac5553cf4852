// The kernel registry (kernels/registry.h): every row that runs on this build computes what its twin computes,
// the selection honours use_isa and the activations' safety, every family has a row under every mode it claims,
// and docs/ARCHITECTURE.md's kernel map is the one the registry prints.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kquant.h"
#include "miniquant/random.h"
#include "miniquant/util/io.h"

using namespace mq;

namespace {

constexpr ActMode kModes[] = {ActMode::weight_only, ActMode::bf16, ActMode::dynamic_int8, ActMode::dynamic_int16};

// The twin of a row under act: gemm_ref on x (weight-only), on bf16(x) (+bf16), gemm_dynamic_ref (+a8, +a16).
std::vector<float> twin(const QTensor& q, const std::vector<float>& x, int64_t n, ActMode act) {
  std::vector<float> y(static_cast<size_t>(n * q.rows));
  if (is_dynamic(act)) {
    gemm_dynamic_ref(q, x.data(), n, y.data(), act);
  } else if (act == ActMode::bf16) {
    std::vector<float> xr(x);
    for (float& v : xr) v = bf16_round(v);
    gemm_ref(q, xr.data(), n, y.data());
  } else {
    gemm_ref(q, x.data(), n, y.data());
  }
  return y;
}

}  // namespace

TEST_CASE("every registry row that runs here equals its twin, on every scheme of its families") {
  const int64_t rows = 32, cols = 512, n = 3;
  Rng rng(42);
  std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(n * cols));
  for (float& v : w) v = static_cast<float>(rng.normal());
  for (float& v : x) v = static_cast<float>(rng.normal());
  int ran = 0;
  for (const Scheme& s : scheme_table()) {
    const QTensor q = quantize(w.data(), rows, cols, s);
    const std::vector<float> dq = dequantize(q);
    double mag = 0;  // sum |w'| |x| over a row and token, the scale of every bound below (the largest)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double m = 0;
        for (int64_t c = 0; c < cols; ++c)
          m += (s.is_kquant() ? kmagnitude_at(q, r, c) : std::fabs(double(dq[r * cols + c]))) * std::fabs(x[t * cols + c]);
        mag = std::max(mag, m);
      }
    for (const KernelRow& row : kernel_registry()) {
      if (row.runs_on && !row.runs_on(q)) continue;
      for (ActMode act : kModes) {
        const FamilySet fam = families_of({traits_of(s).family});
        if (!(row.families & fam) || !(row.acts & act_bit(act))) continue;
        CAPTURE(s.name());
        CAPTURE(row.kernel);
        CAPTURE(static_cast<int>(act));
        // A row for unsafe activations gets a NaN in token 1 and runs weight-only on x as it is: its twin is
        // gemm_ref on x, token 1's outputs NaN on both sides.
        const bool unsafe = row.needs == Acts::bf16_unsafe;
        std::vector<float> xs(x);
        if (unsafe) xs[cols + 5] = NAN;
        const std::vector<float> yr = twin(q, xs, n, unsafe ? ActMode::weight_only : act);
        // Float sums in different orders: 2 gamma_cols each; the weight-only bf16 dots multiply x' = hi + lo,
        // within 2^-16 |x|; the dynamic kernels' int32 dots are exact and scaled in float (+a16: two halves).
        const double gamma = cols * 0x1p-24 / (1 - cols * 0x1p-24);
        const double tol = (4 * gamma + 0x1p-16) * mag;
        // A blocks16 row runs its ISA path and its portable twin (use_isa false), as gemm_blocked asks for them.
        for (const bool isa : {true, false}) {
          if (row.layout != Layout::blocks16 && !isa) continue;
          CAPTURE(isa);
          std::vector<float> y(static_cast<size_t>(n * rows));
          if (row.layout == Layout::blocks16) row.blocks(pack_blocked(q), xs.data(), n, y.data(), 1, act, isa);
          else row.rows(q, xs.data(), n, y.data(), 1, act, true);
          for (size_t i = 0; i < y.size(); ++i) {
            if (unsafe && std::isnan(yr[i])) REQUIRE(std::isnan(y[i]));
            else REQUIRE(std::fabs(double(y[i]) - yr[i]) <= tol);
          }
          ++ran;
        }
      }
    }
  }
  MESSAGE(ran << " (row, scheme, mode) runs checked");
  CHECK(ran > 100);
}

TEST_CASE("selection: use_isa false never picks an ISA row, unsafe activations never a bf16 row, every mode has a row") {
  Rng rng(42);
  std::vector<float> w(16 * 256), x(2 * 256);
  for (float& v : w) v = static_cast<float>(rng.normal());
  for (float& v : x) v = static_cast<float>(rng.normal());
  std::vector<float> bad(x);
  bad[7] = NAN;
  for (const Scheme& s : scheme_table()) {
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), 16, 256, s);
    for (ActMode act : kModes) {
      CAPTURE(static_cast<int>(act));
      const bool dynamic_ok = s.is_kquant() || s.is_integer();
      if (is_dynamic(act) && !dynamic_ok) {
        CHECK_FALSE(has_kernel(s, act));
        CHECK_THROWS_AS(select_kernel(q, act, true, x.data(), 2), UsageError);
        continue;
      }
      CHECK(has_kernel(s, act));
      CHECK_FALSE(select_kernel(q, act, false, x.data(), 2).isa);
      CHECK(select_kernel(q, act, true, bad.data(), 2).needs != Acts::bf16_safe);
      CHECK(select_kernel(q, act, true, nullptr, 2).needs != Acts::bf16_safe);
      CHECK(select_kernel(q, act, true, x.data(), 2).needs != Acts::bf16_unsafe);
    }
  }
  // The block layout: the dynamic modes of int8 / int4 always (where the tensor has the layout), floats and K never.
  const QTensor i4 = quantize(w.data(), 16, 256, Scheme::parse("int4-g64"));
  CHECK(runs_blocked(i4, ActMode::dynamic_int8));
  CHECK_FALSE(runs_blocked(quantize(w.data(), 16, 256, Scheme::fp16()), ActMode::weight_only));
  CHECK_FALSE(runs_blocked(quantize(w.data(), 16, 256, Scheme::kquant(4)), ActMode::dynamic_int8));
  CHECK(runs_blocked(i4, ActMode::weight_only) == has_bf16_weight_path(Scheme::integer(4, 64)));
}

TEST_CASE("docs/ARCHITECTURE.md carries the kernel map the registry prints, and every test it names exists") {
  const std::string doc = read_file(MQ_SOURCE_DIR "/docs/ARCHITECTURE.md");
  const std::string begin = "<!-- kernel-map:begin (miniquant kernels) -->\n", end = "<!-- kernel-map:end -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string printed = kernel_map_markdown();
  INFO("regenerate with: miniquant kernels  (and paste between the markers)\n" << printed);
  CHECK(doc.substr(a + begin.size(), b - a - begin.size()) == printed);
  for (const KernelRow& r : kernel_registry()) {
    for (size_t p = r.test.find('`'); p != std::string_view::npos; p = r.test.find('`', r.test.find('`', p + 1) + 1)) {
      const std::string name(r.test.substr(p + 1, r.test.find('`', p + 1) - p - 1));
      CAPTURE(name);
      CHECK(std::filesystem::exists(std::string(MQ_SOURCE_DIR "/tests/") + name + ".cpp"));
    }
  }
}
