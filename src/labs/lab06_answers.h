// Lab 06's written answers (block G). Its questions ask about the learner's own timings, which change from run to
// run and exist in no committed file: every learner grading run that measures blocks E and F keeps its table (those
// blocks' numbers and this machine's fp32 FMA peak, with the time and the CPU) in the run folder, and block G reads
// each answer against the kept run it cites, for its numbers, its claim and its reasoning.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "labs/grade.h"

namespace mqlab::lab06 {

// One grading run's table, in the units an answer's printed unit is read against (seconds, bytes/s, FLOP/s; a
// fraction, never a percentage): "212 us" is 212e-6 s, "31.4 GB/s" 31.4e9 bytes/s.
struct Table {
  std::string time, cpu;  // when (UTC) and on which CPU (its model name) it was measured
  int threads = 0;
  int64_t rows = 0, cols = 0;  // the timed int4-g64 matrix
  double bytes = 0;            // its codes and fp16 scales
  double read_bps = 0;         // the read bandwidth probe over the same working set
  // Block E, one token from DRAM: your GEMV, the library's, and their ratios (medians over the rounds).
  double gemv_s = 0, library_gemv_s = 0, bandwidth_fraction = 0, library_over_yours_gemv = 0;
  // Block F: your GEMM at 1 and 8 tokens, the library's at 8, and their ratios.
  double gemm1_s = 0, gemm8_s = 0, eight_over_one = 0, library_gemm8_s = 0, library_eight_over_one = 0, library_over_yours_gemm = 0;
  double fma_flops = 0;  // fp32 FMA peak on `threads` threads (mq::fma_peak)

  bool complete() const { return read_bps > 0 && gemv_s > 0 && gemm8_s > 0 && fma_flops > 0 && rows > 0 && cols > 0 && bytes > 0; }
  double gemv_bps() const { return bytes / gemv_s; }
  double bytes_per_weight() const { return bytes / static_cast<double>(rows * cols); }
  double flops_per_byte() const { return 2.0 / bytes_per_weight(); }  // per token: one multiply-add per weight
  // Tokens from which a GEMM of this matrix is bound by the FMA peak rather than the read bandwidth.
  double crossover_tokens() const { return fma_flops / (flops_per_byte() * read_bps); }
  double loop_of_8_s() const { return 8 * gemm1_s; }  // 8 GEMVs in a loop
  // 8 times the 1-token time as the report prints it ("997 us" -> 7976 us): what a learner multiplies.
  double loop_of_8_as_printed_s() const { return 8 * std::round(gemm1_s * 1e6) / 1e6; }
};

nlohmann::json to_json(const Table& t);  // with the derived numbers an answer may cite
Table table_from_json(const nlohmann::json& j);

// The runs kept in `path` (a JSON array, oldest first; none when the file is missing). A malformed file: mq::Error.
std::vector<Table> read_tables(const std::string& path);
// Keeps t in `path` after the runs already there, the newest kKept of them, written atomically.
constexpr size_t kKept = 20;
void append_table(const std::string& path, const Table& t);

// The reference grader's three answers, written from its own run's table (no committed file can hold them).
std::string reference_answers(const Table& t);

// Block G's checks: `answers` (sections 1-3) against the one of `runs` made on `cpu` that they cite (every check of
// the best-matching run is reported, newest first on a tie).
void check_answers(Checks& c, const std::map<int, std::string>& answers, const std::vector<Table>& runs, const std::string& cpu,
                   const std::string& runs_file);

}  // namespace mqlab::lab06
