// Perplexity over fixed, strided windows and verb-tense minimal pairs, parallel over windows/slots
// (per-item results are summed serially afterwards, so the numbers do not depend on threads).
#include "minigpt/eval.h"

#include <algorithm>
#include <chrono>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

PerplexityResult perplexity(const Model& m, const std::vector<int32_t>& stream, int window, int stride) {
  const int n_ctx = m.config().n_ctx;
  if (window < 2 || window > n_ctx + 1)
    throw mq::UsageError(fmt::format("perplexity: window {} must be in [2, n_ctx + 1 = {}]", window, n_ctx + 1));
  if (stride < 1 || stride > window - 1)
    throw mq::UsageError(fmt::format("perplexity: stride {} must be in [1, window - 1 = {}]", stride, window - 1));
  const auto t0 = std::chrono::steady_clock::now();

  std::vector<int32_t> s;  // (L) <sep> + the split
  s.reserve(stream.size() + 1);
  s.push_back(Tokenizer::kSepId);
  s.insert(s.end(), stream.begin(), stream.end());
  const int64_t L = static_cast<int64_t>(s.size());

  // Window [begin, end) scores the targets [first, end) not scored by an earlier window.
  struct Window {
    int64_t begin, end, first;
  };
  std::vector<Window> windows;
  for (int64_t begin = 0, prev_end = 1; prev_end < L; begin += stride) {
    const int64_t end = std::min(begin + window, L);
    if (std::max(prev_end, begin + 1) < end) windows.push_back({begin, end, std::max(prev_end, begin + 1)});
    prev_end = std::max(prev_end, end);
  }

  std::vector<double> logp(windows.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t i = 0; i < windows.size(); ++i) {
    const Window& w = windows[i];
    const std::vector<int32_t> tokens(s.begin() + w.begin, s.begin() + w.end);
    logp[i] = m.score(tokens, static_cast<int>(w.first - w.begin), static_cast<int>(w.end - w.begin));
  }
  double total = 0.0;
  for (double v : logp) total += v;

  PerplexityResult r;
  r.tokens = L - 1;
  r.nats_per_token = r.tokens > 0 ? -total / static_cast<double>(r.tokens) : 0.0;
  r.ppl = std::exp(r.nats_per_token);
  r.window = window;
  r.stride = stride;
  r.seconds = seconds_since(t0);
  return r;
}

VerbTenseResult verb_tense_accuracy(const Model& m, const Tokenizer& tok, const std::vector<Story>& stories,
                                    int64_t max_slots) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n_ctx = m.config().n_ctx;
  struct Item {
    const Story* story;
    const VerbSlot* slot;
  };
  std::vector<Item> items;
  for (const Story& st : stories)
    for (const VerbSlot& sl : st.slots)
      if (max_slots <= 0 || static_cast<int64_t>(items.size()) < max_slots) items.push_back({&st, &sl});

  VerbTenseResult r;
  // Per item: -1 skipped (unknown form), -2 skipped (too long), else 1 correct / 0 wrong.
  std::vector<int> outcome(items.size());
#pragma omp parallel for schedule(dynamic, 8)
  for (size_t i = 0; i < items.size(); ++i) {
    const Story& st = *items[i].story;
    const VerbSlot& sl = *items[i].slot;
    std::array<int32_t, 3> form_ids;
    bool known = true;
    for (int c = 0; c < 3; ++c) {
      form_ids[c] = tok.id(sl.forms[c]);
      known = known && form_ids[c] != Tokenizer::kUnkId;
    }
    if (!known) {
      outcome[i] = -1;
      continue;
    }
    // <sep> + the story up to the end of the slot's sentence, cropped on the left to fit n_ctx.
    std::vector<int32_t> ids{Tokenizer::kSepId};
    for (int32_t t = 0; t < sl.sent_end; ++t) ids.push_back(tok.id(st.tokens[t]));
    const int64_t off = std::max<int64_t>(0, static_cast<int64_t>(ids.size()) - (n_ctx + 1));
    const int a = sl.sent_begin + 1 - static_cast<int>(off), b = sl.sent_end + 1 - static_cast<int>(off);
    if (a < 1) {
      outcome[i] = -2;
      continue;
    }
    ids.erase(ids.begin(), ids.begin() + off);
    // The sentence's log-probability with each candidate in the blank.
    std::array<double, 3> score;
    for (int c = 0; c < 3; ++c) {
      ids[static_cast<size_t>(sl.pos + 1 - off)] = form_ids[c];
      score[c] = m.score(ids, a, b);
    }
    const int best = static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
    outcome[i] = best == sl.correct ? 1 : 0;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (outcome[i] == -1) {
      ++r.skipped_unknown;
      continue;
    }
    if (outcome[i] == -2) {
      ++r.skipped_long;
      continue;
    }
    ConstructionScore& k = r.by_kind[static_cast<int>(items[i].slot->kind)];
    ++k.total;
    ++r.overall.total;
    k.correct += outcome[i];
    r.overall.correct += outcome[i];
  }
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace minigpt
