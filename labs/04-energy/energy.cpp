// Lab 04 (see README.md next to this file): energy per token, by phase. Replace each TODO body; keep the
// signatures (lab04.h). Blocks A-D are here; block E is your `miniquant energy` run and answers.md.
// Grade with `miniquant lab check 04`.
// Call your own functions qualified (lab::summarize_trials(...)): with mq:: arguments an unqualified call also
// finds the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab04.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "experiments/energy_work.h"    // mqexp::prefill_work, decode_step_work, post_work (mqexp::argmax: lab04.h)
#include "miniquant/energy/sysfs.h"     // mq::energy::read_sysfs, parse_u64
#include "miniquant/error.h"

namespace lab {

uint64_t counter_delta(uint64_t before, uint64_t after, uint64_t max_range) {
  // TODO(lab 04 block A): after - before, or across one wrap at max_range.
  (void)before, (void)after, (void)max_range;
  throw std::logic_error("lab 04 block A: not implemented yet (counter_delta in labs/04-energy/energy.cpp)");
}

RaplMeter::RaplMeter(const std::string& root) : root_(root) {
  // TODO(lab 04 block A): every "intel-rapl:*" folder under root (sorted): name, energy_uj, max_energy_range_uj;
  // skip what cannot be read; which zones count in the total; mq::Error when none that counts is readable.
  throw std::logic_error("lab 04 block A: not implemented yet (RaplMeter in labs/04-energy/energy.cpp)");
}

std::string RaplMeter::source() const {
  // TODO(lab 04 block A): "rapl:package+dram" when a dram zone counts, else "rapl:package".
  throw std::logic_error("lab 04 block A: not implemented yet (RaplMeter::source in labs/04-energy/energy.cpp)");
}

mq::energy::Reading RaplMeter::read() {
  // TODO(lab 04 block A): read every zone's counter, unwrap it since the last reading, accumulate joules.
  throw std::logic_error("lab 04 block A: not implemented yet (RaplMeter::read in labs/04-energy/energy.cpp)");
}

mq::energy::ModelBreakdown model_energy(const mq::energy::Coefficients& c, double seconds, const mq::energy::Work& w) {
  // TODO(lab 04 block B): static, compute and one term per memory level, in joules.
  (void)c, (void)seconds, (void)w;
  throw std::logic_error("lab 04 block B: not implemented yet (model_energy in labs/04-energy/energy.cpp)");
}

int level_for(const std::vector<mq::CacheLevel>& caches, double bytes, int threads) {
  // TODO(lab 04 block B): the first data or unified cache level that holds `bytes`; private caches count per thread.
  (void)caches, (void)bytes, (void)threads;
  throw std::logic_error("lab 04 block B: not implemented yet (level_for in labs/04-energy/energy.cpp)");
}

mqexp::RunResult run_generation(minigpt::Model& m, mq::energy::Meter& meter, const std::vector<int32_t>& prompt, int gen,
                                const minigpt::Tokenizer* tok, const mqexp::WorkContext& w) {
  // TODO(lab 04 block C): the work of each phase first, then prefill, sample, (decode, sample) x (gen - 1),
  // detokenize; read the meter at every boundary and add each interval to its phase.
  (void)m, (void)meter, (void)prompt, (void)gen, (void)tok, (void)w;
  throw std::logic_error("lab 04 block C: not implemented yet (run_generation in labs/04-energy/energy.cpp)");
}

mq::energy::Summary summarize_trials(const std::vector<double>& trials, int warmup) {
  // TODO(lab 04 block D): drop the warm-ups; mean, sample sd, median, min, max, t interval, Tukey outliers.
  (void)trials, (void)warmup;
  throw std::logic_error("lab 04 block D: not implemented yet (summarize_trials in labs/04-energy/energy.cpp)");
}

mq::energy::Ratio paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  // TODO(lab 04 block D): per-round log ratios, their mean and t interval, exponentiated.
  (void)a, (void)b;
  throw std::logic_error("lab 04 block D: not implemented yet (paired_ratio in labs/04-energy/energy.cpp)");
}

}  // namespace lab
