// Test helper: walks every sequence of generator choices (optionally only those that write a given
// text), to check that probabilities sum to one and that a text has exactly one derivation.
#pragma once
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "minigpt/corpus/story.h"

namespace mqtest {

// Depth-first over choice sequences: replays a prefix, lets new choice points take their first
// option of positive weight, then advances like an odometer.
class Enumerator final : public minigpt::Chooser {
 public:
  // With a target, stories whose written prefix leaves the target are abandoned early.
  explicit Enumerator(const std::vector<std::string>* target = nullptr) : target_(target) {}

  int pick(std::span<const double> w) override { return take(std::vector<double>(w.begin(), w.end())); }
  int pick_uniform(int n) override { return take(std::vector<double>(static_cast<size_t>(n), 1.0)); }
  bool abandon(const std::vector<std::string>& written) override {
    if (!target_) return false;
    if (written.size() > target_->size()) return true;
    // Words before `checked_` matched at an earlier call; an undecided "" is looked at again
    // next time, so a wrong "a"/"an" or auxiliary is pruned as soon as it is written.
    size_t next = written.size();
    for (size_t i = checked_; i < written.size(); ++i) {
      if (written[i].empty()) next = std::min(next, i);
      else if (written[i] != (*target_)[i]) return true;
    }
    checked_ = next;
    return false;
  }
  void rewind() {
    checked_ = 0;
    depth_ = 0;
    logq_ = 0;
  }
  bool advance() {
    while (!path_.empty()) {
      const size_t d = path_.size() - 1;
      size_t i = static_cast<size_t>(path_[d]) + 1;
      while (i < opts_[d].size() && opts_[d][i] <= 0) ++i;
      if (i < opts_[d].size()) {
        path_[d] = static_cast<int>(i);
        return true;
      }
      path_.pop_back();
      opts_.pop_back();
    }
    return false;
  }
  double logq() const { return logq_; }  // log-prob of this derivation, computed independently

 private:
  int take(std::vector<double> w) {
    if (depth_ == path_.size()) {
      size_t i = 0;
      while (i < w.size() && w[i] <= 0) ++i;
      if (i == w.size()) throw std::logic_error("a choice point offered no option of positive weight");
      path_.push_back(static_cast<int>(i));
      opts_.push_back(w);
    }
    // The same prefix must lead to the same choice point, else the walk is not exhaustive.
    if (opts_[depth_] != w) throw std::logic_error("replaying a prefix reached a different choice point");
    double total = 0;
    for (double x : w) total += x;
    const int i = path_[depth_++];
    logq_ += std::log(w[static_cast<size_t>(i)] / total);
    return i;
  }
  const std::vector<std::string>* target_;
  std::vector<int> path_;
  std::vector<std::vector<double>> opts_;
  size_t depth_ = 0;
  size_t checked_ = 0;
  double logq_ = 0;
};

struct Derivations {
  int count = 0;
  double total_p = 0;  // probability of the text: the sum over its derivations
};

// Every derivation of `target` under `gen`.
inline Derivations derivations_of(const minigpt::StoryGenerator& gen, const std::vector<std::string>& target) {
  Enumerator en(&target);
  Derivations d;
  do {
    en.rewind();
    try {
      const minigpt::Story s = gen.generate(en);
      if (s.tokens == target) {
        ++d.count;
        d.total_p += std::exp(en.logq());
      }
    } catch (const minigpt::StoryAbandoned&) {
    }
  } while (en.advance());
  return d;
}

}  // namespace mqtest
