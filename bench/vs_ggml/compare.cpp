#include "compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "miniquant/layers/linear.h"
#include "miniquant/random.h"
#include "miniquant/util/timer.h"

#include "lut3_kernel16.h"  // the 16-bit table rows (int2's tables, int3's bit planes)
#include "lut_kernel.h"     // the fp32 table row (pairs.h)
#include "lut_q3k_kernel16.h"  // the q2_k and q3_k table rows
#include "roofline_probes.h"
#include "verify.h"

namespace vsggml {
namespace {

// One side of a cell: a call on weight copy i (the caller cycles i), its thread setup, and what follows a batch.
struct Side {
  std::function<void(int64_t copy, int64_t n)> call;
  std::function<void(int threads)> use_threads;
  std::function<void()> after_batch;
  int64_t copies = 1;
  double bytes = 0;  // weight bytes one call reads
  int64_t next = 0;  // the copy the next call reads
};

// Seconds per call of `k` calls in a row, after one untimed call (it absorbs the wake-up of the side's workers
// and, hot, refills the cache the other side's batch evicted).
double time_batch(Side& s, int64_t n, int64_t k) {
  auto one = [&] {
    s.call(s.next, n);
    s.next = (s.next + 1) % s.copies;
  };
  one();
  mq::Stopwatch sw;
  for (int64_t i = 0; i < k; ++i) one();
  const double t = sw.seconds() / static_cast<double>(k);
  s.after_batch();
  return t;
}

nlohmann::json side_json(const Side& s, const std::vector<double>& per_call, int64_t k, double probe) {
  std::vector<double> sorted = per_call;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  const double median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  std::vector<double> us;
  for (double t : per_call) us.push_back(t * 1e6);
  const double gbps = s.bytes / median / 1e9;
  return {{"us_median", median * 1e6}, {"us_rounds", us},     {"calls_per_batch", k}, {"weight_bytes", s.bytes},
          {"copies", s.copies},        {"GBps", gbps},        {"probe_GBps", probe / 1e9}, {"of_probe", gbps / (probe / 1e9)}};
}

}  // namespace

std::vector<nlohmann::json> compare(GgmlBackend& be, const Pair& pair, const Setup& s, const std::vector<float>& w,
                                    const RunOptions& o) {
  const std::string where = pair.label() + " " + std::to_string(s.out) + "x" + std::to_string(s.in);
  // Ours: the scheme quantized by our quantizer, run through QuantizedLinear (it picks the layout, as the model).
  const mq::Scheme scheme = mq::Scheme::parse(pair.scheme);
  const mq::QuantizedLinear ql(w.data(), s.out, s.in, scheme, pair.mode);
  const std::vector<float> ours_deq = mq::dequantize(ql.weight());  // (out, in)
  // The table rows: the same codes in the 16-row block layout, for a lookup-table kernel.
  // The K table rows repack their blocks into 16-row chunks (lut_q2k_kernel16.h, lut_q3k_kernel16.h), the int rows
  // their codes.
  const bool ktable = pair.table == Pair::Table::int16 && scheme.is_kquant();
  const bool table = pair.table != Pair::Table::none && !ktable;
  if (table && pair.table == Pair::Table::int16 && !scheme.symmetric)
    throw mq::Error("vs_ggml: " + where + ": the 16-bit table rows' check bound holds for symmetric schemes only");
  // The 16-bit tables take the family's layout (int3: the same bytes in bit planes, lut3_kernel16.h).
  const mq::BlockedCodes packed = !table                           ? mq::BlockedCodes{}
                                  : pair.table == Pair::Table::int16 ? mqbench::lut::pack_table16(ql.weight())
                                                                     : mq::pack_blocked(ql.weight());
  const mqbench::lut::KTable16 kpacked = ktable ? mqbench::lut::pack_ktable16(ql.weight()) : mqbench::lut::KTable16{};
  // What each weight's rounding errors scale with in the check of our side: |w| except for the K table rows
  // (|D| |q - zero| + |M|: q2_k's min term cancels against D q, lut_q2k_kernel16.h).
  const std::vector<float> ours_mag = ktable ? mqbench::lut::k_magnitudes(ql.weight()) : std::vector<float>{};
  const double ours_bytes = static_cast<double>(ktable ? kpacked.bytes() : table ? packed.bytes() : ql.resident_bytes());
  const int64_t ours_copies = s.dram ? mqbench::cold_copies(ours_bytes) : 1;
  const std::vector<mq::QuantizedLinear> ours(table || ktable ? 0 : static_cast<size_t>(ours_copies), ql);
  const std::vector<mq::BlockedCodes> ours_packed(table ? static_cast<size_t>(ours_copies) : 0, packed);
  const std::vector<mqbench::lut::KTable16> ours_kpacked(ktable ? static_cast<size_t>(ours_copies) : 0, kpacked);
  std::vector<float> ours_y(static_cast<size_t>(*std::max_element(o.batches.begin(), o.batches.end()) * s.out));  // (n, out)
  const std::vector<float>* ours_x = nullptr;
  int table_threads = 1;
  Side our{[&](int64_t c, int64_t n) {
             const float* x = ours_x->data();
             if (ktable) mqbench::lut::gemm_ktable16(ours_kpacked[static_cast<size_t>(c)], x, n, ours_y.data(), table_threads, true);
             else if (pair.table == Pair::Table::fp32) mqbench::lut::gemm_lut(ours_packed[static_cast<size_t>(c)], x, n, ours_y.data(), table_threads, true);
             else if (pair.table == Pair::Table::int16)
               mqbench::lut::gemm_table16(ours_packed[static_cast<size_t>(c)], x, n, ours_y.data(), table_threads, true);
             else ours[static_cast<size_t>(c)].forward(x, n, ours_y.data());
           },
           [&](int t) {
             mq::set_default_threads(t);
             table_threads = t;
           },
           [] {}, ours_copies, ours_bytes};

  // ggml: the same fp32 weights quantized by ggml, in the buffer type llama.cpp would choose.
  const double ggml_bytes_one = static_cast<double>(be.api.ggml_type_size(pair.type)) * static_cast<double>(s.out) *
                                static_cast<double>(s.in / be.api.ggml_blck_size(pair.type));
  const int64_t ggml_copies = s.dram ? mqbench::cold_copies(ggml_bytes_one) : 1;
  GgmlMatmul gm(be, pair.type, w.data(), s.out, s.in, ggml_copies, o.batches);
  const std::vector<float> ggml_deq = gm.dequantized();
  Side gg{[&](int64_t c, int64_t n) { gm.run(c, n); }, [&](int t) { be.use_threads(t); }, [&] { be.pause(); },
          ggml_copies, static_cast<double>(gm.weight_bytes())};

  // Activations: fp32, the same for both sides, one set per batch size.
  std::map<int64_t, std::vector<float>> xs;
  for (int64_t n : o.batches) {
    xs[n] = mq::gaussian_matrix(n, s.in, 7);  // (n, in)
    gm.set_x(n, xs[n].data());
  }
  // The activations each side's kernel multiplies, for its reference (verify.h).
  std::map<int64_t, RefActs> ggml_acts_n, ours_acts_n;
  const ggml_type_traits& act_traits = *be.api.ggml_get_type_traits(pair.act.type);
  for (int64_t n : o.batches) {
    ggml_acts_n[n] = ggml_acts(xs[n], n, s.in, act_traits, be.api.act_rows(pair.act.type), pair.act);
    ours_acts_n[n] = pair.mode == mq::ActMode::dynamic_int8 ? int8_token_acts(xs[n], n, s.in)
                     : ktable                                 ? ktable16_acts(xs[n], n, s.in, kpacked)
                     : pair.table == Pair::Table::int16       ? table16_acts(xs[n], n, s.in, packed)
                                                              : weight_only_acts(xs[n], n, s.in);
  }

  // Correctness first, on the first and last copy, every cell: a miss stops the run before any timing.
  for (int64_t n : o.batches)
    for (int t : o.threads) {
      ours_x = &xs[n];
      our.use_threads(t);
      gg.use_threads(t);
      for (int64_t c : {int64_t{0}, ours_copies - 1}) {
        our.call(c, n);
        const std::vector<float> y(ours_y.begin(), ours_y.begin() + n * s.out);
        if (std::string e = check_output(ours_deq, s.out, s.in, ours_acts_n[n], n, y, ktable ? &ours_mag : nullptr); !e.empty())
          throw mq::Error("vs_ggml: ours (" + where + ", n=" + std::to_string(n) + ", " + std::to_string(t) + " threads) fails its check: " + e);
      }
      for (int64_t c : {int64_t{0}, ggml_copies - 1}) {
        gg.call(c, n);
        std::vector<float> y(static_cast<size_t>(n * s.out));
        gm.get_y(c, n, y.data());
        if (std::string e = check_output(ggml_deq, s.out, s.in, ggml_acts_n[n], n, y); !e.empty())
          throw mq::Error("vs_ggml: ggml (" + where + ", n=" + std::to_string(n) + ", " + std::to_string(t) + " threads) fails its check: " + e);
      }
      gg.after_batch();
    }

  // Cells, each with its batch length from a warm-up: enough calls to last batch_seconds.
  struct Cell {
    int64_t n;
    int threads;
    int64_t k_ours = 1, k_ggml = 1;
    std::vector<double> ours, ggml;  // seconds per call, per round
  };
  std::vector<Cell> cells;
  for (int64_t n : o.batches)
    for (int t : o.threads) {
      Cell c;
      c.n = n;
      c.threads = t;
      cells.push_back(c);
    }
  auto calls_for = [&](double per_call) {
    return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(o.batch_seconds / per_call)), 1, 100000);
  };
  for (Cell& c : cells) {
    ours_x = &xs[c.n];
    our.use_threads(c.threads);
    gg.use_threads(c.threads);
    // Warm-up: a pass over every copy (DRAM mode), then the estimate from a few calls.
    for (int64_t i = 0; i < std::max<int64_t>(3, our.copies); ++i) time_batch(our, c.n, 1);
    for (int64_t i = 0; i < std::max<int64_t>(3, gg.copies); ++i) time_batch(gg, c.n, 1);
    c.k_ours = calls_for(time_batch(our, c.n, 3));
    c.k_ggml = calls_for(time_batch(gg, c.n, 3));
  }
  const auto settle = std::chrono::duration<double>(o.settle_seconds);
  for (int r = 0; r < o.rounds; ++r)
    for (Cell& c : cells) {
      ours_x = &xs[c.n];
      our.use_threads(c.threads);
      gg.use_threads(c.threads);
      for (int side = 0; side < 2; ++side) {
        const bool ggml_turn = (side == 0) == (r % 2 == 0);  // ggml first in even rounds, ours first in odd ones
        std::this_thread::sleep_for(settle);
        if (ggml_turn) c.ggml.push_back(time_batch(gg, c.n, c.k_ggml));
        else c.ours.push_back(time_batch(our, c.n, c.k_ours));
      }
    }

  // Same-run read bandwidth at each side's working set (all copies in DRAM mode), after the rounds.
  std::vector<nlohmann::json> out;
  for (const Cell& c : cells) {
    const double bw_g = mqbench::read_bandwidth(static_cast<int64_t>(gg.bytes * static_cast<double>(gg.copies)), c.threads);
    const double bw_o = mqbench::read_bandwidth(static_cast<int64_t>(our.bytes * static_cast<double>(our.copies)), c.threads);
    nlohmann::json j = {{"pair", pair.label()},
                        {"ggml_type", pair.ggml_name},
                        {"scheme", pair.scheme},
                        {"act", pair.mode == mq::ActMode::dynamic_int8 ? "a8" : "weight-only"},
                        {"out", s.out},
                        {"in", s.in},
                        {"mode", s.dram ? "dram" : "hot"},
                        {"n", c.n},
                        {"threads", c.threads},
                        {"rounds", o.rounds},
                        {"ggml", side_json(gg, c.ggml, c.k_ggml, bw_g)},
                        {"ours", side_json(our, c.ours, c.k_ours, bw_o)}};
    j["ggml"]["buffer_type"] = gm.buft_name();
    j["ours"]["layout"] = ktable                                ? scheme.name() + " blocks in 16-row chunks, int16 table lookup"
                          : pair.table == Pair::Table::fp32    ? "16-row blocks, fp32 table lookup"
                          : pair.table == Pair::Table::int16 ? (mqbench::lut::runs_planes3(scheme) ? "16-row blocks in bit planes, int16 table lookup"
                                                                                                    : "16-row blocks, int16 table lookup")
                                                             : mq::runs_blocked(ql.weight(), pair.mode) ? "16-row blocks" : "row-major";
    // ggml's time over ours, paired per round (at least 2: the CLI's check): above 1, ours is faster.
    const mq::energy::Ratio rt = mq::energy::paired_ratio(c.ggml, c.ours);
    j["ratio"] = {{"ggml_over_ours", rt.ratio}, {"low", rt.low}, {"high", rt.high}};
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace vsggml
