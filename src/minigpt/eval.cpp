// Perplexity over fixed, strided windows and verb-tense minimal pairs, parallel over windows/slots
// (per-item results are summed serially afterwards, so the numbers do not depend on threads).
#include "minigpt/eval.h"
#include "miniquant/util/timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/first_error.h"
#include "minigpt/ops.h"

namespace minigpt {
std::vector<ScoreWindow> score_windows(int64_t L, int window, int stride) {
  // Window [begin, end) scores the targets [first, end) not scored by an earlier window.
  std::vector<ScoreWindow> windows;
  for (int64_t begin = 0, prev_end = 1; prev_end < L; begin += stride) {
    const int64_t end = std::min(begin + window, L);
    if (std::max(prev_end, begin + 1) < end) windows.push_back({begin, end, std::max(prev_end, begin + 1)});
    prev_end = std::max(prev_end, end);
  }
  return windows;
}

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

  const std::vector<ScoreWindow> windows = score_windows(L, window, stride);

  std::vector<double> logp(windows.size());
  std::vector<int64_t> hits(windows.size());
  const int V = m.config().vocab_size;
  mq::FirstError error;
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t i = 0; i < windows.size(); ++i) {
    error.run(i, [&] {
      const ScoreWindow& w = windows[i];
      // What Model::score sums, from the same logits, which also give the most likely next token.
      const std::vector<int32_t> prefix(s.begin() + w.begin, s.begin() + w.end - 1);
      std::vector<float> lg;  // (end - begin - 1, V): position t - 1 predicts t
      try {
        lg = m.logits(prefix);
      } catch (const mq::UsageError&) {
        throw;
      } catch (const mq::Error& e) {  // a non-finite logit: say which window of the split
        throw mq::Error(fmt::format("perplexity window {} (split tokens {}..{}): {}", i, w.begin, w.end, e.what()));
      }
      double lp = 0;
      int64_t h = 0;
      for (int64_t t = w.first; t < w.end; ++t) {
        const float* row = lg.data() + static_cast<size_t>(t - 1 - w.begin) * V;
        lp += ops::log_prob(row, V, s[static_cast<size_t>(t)]);
        h += std::max_element(row, row + V) - row == s[static_cast<size_t>(t)];
      }
      logp[i] = lp;
      hits[i] = h;
    });
  }
  error.rethrow();
  double total = 0.0;
  for (double v : logp) total += v;

  PerplexityResult r;
  for (int64_t h : hits) r.top1_hits += h;
  r.tokens = L - 1;
  r.nats_per_token = r.tokens > 0 ? -total / static_cast<double>(r.tokens) : 0.0;
  r.ppl = std::exp(r.nats_per_token);
  r.window = window;
  r.stride = stride;
  r.seconds = mq::seconds_since(t0);
  return r;
}

std::vector<std::array<double, 3>> slot_scores(const Model& m, const std::vector<int32_t>& ids,
                                               const std::vector<SlotSpan>& slots) {
  const int V = m.config().vocab_size, L = static_cast<int>(ids.size());
  if (L < 2 || L - 1 > m.config().n_ctx)
    throw mq::UsageError(fmt::format("slot_scores: need 2 <= {} tokens <= n_ctx + 1 = {}", L, m.config().n_ctx + 1));
  for (size_t k = 0; k < slots.size(); ++k) {
    const SlotSpan& sp = slots[k];
    if (sp.a < 1 || sp.a > sp.s || sp.s >= sp.b || sp.b > L || sp.truth < 0 || sp.truth > 2 ||
        sp.forms[static_cast<size_t>(sp.truth)] != ids[static_cast<size_t>(sp.s)] || (k > 0 && sp.s < slots[k - 1].s))
      throw mq::UsageError(fmt::format("slot_scores: slot {} (a={} s={} b={}) needs 1 <= a <= s < b <= {}, slots in order, "
                                       "and ids[s] == its true form", k, sp.a, sp.s, sp.b, L));
  }
  // The story once, with its logits: row t-1 predicts ids[t].
  KVCache cache = m.make_cache();
  std::vector<float> story(static_cast<size_t>(L - 1) * V);
  m.forward(cache, ids.data(), L - 1, story.data());
  const auto row = [&](const std::vector<float>& lg, int i) { return lg.data() + static_cast<size_t>(i) * V; };

  std::vector<std::array<double, 3>> out(slots.size());
  std::vector<int32_t> tail;
  std::vector<float> lg;
  for (size_t k = 0; k < slots.size(); ++k) {
    const SlotSpan& sp = slots[k];
    double shared = 0.0;  // the sentence's tokens before the blank: the same for every candidate
    for (int t = sp.a; t < sp.s; ++t) shared += ops::log_prob(row(story, t - 1), V, ids[static_cast<size_t>(t)]);
    // Each candidate feeds the blank and the rest of its sentence from the cache cut back to the
    // blank. The true form runs last, so the cache ends holding the story again for later slots.
    tail.assign(ids.begin() + sp.s, ids.begin() + sp.b - 1);  // positions s .. b-2
    lg.resize(tail.size() * static_cast<size_t>(V));
    for (int i = 0; i < 3; ++i) {
      const int c = (sp.truth + 1 + i) % 3;
      double sc = shared + ops::log_prob(row(story, sp.s - 1), V, sp.forms[static_cast<size_t>(c)]);
      if (!tail.empty()) {
        tail[0] = sp.forms[static_cast<size_t>(c)];
        cache.length = sp.s;
        m.forward(cache, tail.data(), static_cast<int>(tail.size()), lg.data());
        for (int t = sp.s + 1; t < sp.b; ++t) sc += ops::log_prob(row(lg, t - 1 - sp.s), V, ids[static_cast<size_t>(t)]);
      }
      out[k][static_cast<size_t>(c)] = sc;
    }
    cache.length = L - 1;
  }
  return out;
}

VerbTenseResult verb_tense_accuracy(const Model& m, const Tokenizer& tok, const std::vector<Story>& stories,
                                    int64_t max_slots) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n_ctx = m.config().n_ctx;
  // One task per story (its first slots up to max_slots), or per slot when the story must be
  // cropped on the left to fit the context, which then differs from slot to slot.
  struct Task {
    const Story* story;
    int first, count;   // slots [first, first + count) of the story
    int64_t index;      // position of the first one among all slots
    int32_t end;        // story tokens needed: up to the end of the last slot's sentence
  };
  std::vector<Task> tasks;
  int64_t n_items = 0;
  for (const Story& st : stories) {
    if (max_slots > 0 && n_items >= max_slots) break;
    const int take = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(st.slots.size()),
                                                       max_slots > 0 ? max_slots - n_items : INT64_MAX));
    if (take == 0) continue;
    int32_t end = 0;
    for (int j = 0; j < take; ++j) end = std::max(end, st.slots[static_cast<size_t>(j)].sent_end);
    if (end + 1 <= n_ctx + 1) {
      tasks.push_back({&st, 0, take, n_items, end});
    } else {
      for (int j = 0; j < take; ++j) tasks.push_back({&st, j, 1, n_items + j, st.slots[static_cast<size_t>(j)].sent_end});
    }
    n_items += take;
  }

  VerbTenseResult r;
  // Per slot: -1 skipped (unknown form), -2 skipped (too long), else 1 correct / 0 wrong.
  std::vector<int> outcome(static_cast<size_t>(n_items));
  std::vector<double> margin(static_cast<size_t>(n_items), std::nan(""));
  std::vector<Construction> kind(static_cast<size_t>(n_items));
  mq::FirstError error;
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t i = 0; i < tasks.size(); ++i) error.run(i, [&] {
    const Task& task = tasks[i];
    const Story& st = *task.story;
    // <sep> + the story up to the end of the last slot's sentence, cropped on the left to fit n_ctx.
    std::vector<int32_t> ids{Tokenizer::kSepId};
    for (int32_t t = 0; t < task.end; ++t) ids.push_back(tok.id(st.tokens[static_cast<size_t>(t)]));
    const int off = std::max(0, static_cast<int>(ids.size()) - (n_ctx + 1));
    ids.erase(ids.begin(), ids.begin() + off);
    std::vector<SlotSpan> spans;
    std::vector<int64_t> where;
    for (int j = task.first; j < task.first + task.count; ++j) {
      const VerbSlot& sl = st.slots[static_cast<size_t>(j)];
      const int64_t at = task.index + (j - task.first);
      kind[static_cast<size_t>(at)] = sl.kind;
      SlotSpan sp{.a = sl.sent_begin + 1 - off, .s = sl.pos + 1 - off, .b = sl.sent_end + 1 - off, .forms = {}, .truth = sl.correct};
      bool known = true;
      for (int c = 0; c < 3; ++c) {
        sp.forms[static_cast<size_t>(c)] = tok.id(sl.forms[static_cast<size_t>(c)]);
        known = known && sp.forms[static_cast<size_t>(c)] != Tokenizer::kUnkId;
      }
      if (!known) {
        outcome[static_cast<size_t>(at)] = -1;
      } else if (sp.a < 1) {
        outcome[static_cast<size_t>(at)] = -2;
      } else {
        spans.push_back(sp);
        where.push_back(at);
      }
    }
    if (spans.empty()) return;
    const auto scores = slot_scores(m, ids, spans);
    for (size_t k = 0; k < spans.size(); ++k) {
      const auto& sc = scores[k];
      const int best = static_cast<int>(std::max_element(sc.begin(), sc.end()) - sc.begin());
      outcome[static_cast<size_t>(where[k])] = best == spans[k].truth ? 1 : 0;
      const size_t t = static_cast<size_t>(spans[k].truth);
      margin[static_cast<size_t>(where[k])] = sc[t] - std::max(sc[(t + 1) % 3], sc[(t + 2) % 3]);
    }
  });
  error.rethrow();
  for (int64_t i = 0; i < n_items; ++i) {
    const int o = outcome[static_cast<size_t>(i)];
    if (o == -1) {
      ++r.skipped_unknown;
      continue;
    }
    if (o == -2) {
      ++r.skipped_long;
      continue;
    }
    ConstructionScore& k = r.by_kind[static_cast<int>(kind[static_cast<size_t>(i)])];
    ++k.total;
    ++r.overall.total;
    k.correct += o;
    r.overall.correct += o;
  }
  r.slot_kind = std::move(kind);
  r.slot_margin = std::move(margin);
  r.seconds = mq::seconds_since(t0);
  return r;
}

BenchmarkScores benchmark_scores(const Model& m, const Tokenizer& tok, const std::vector<BenchmarkItem>& items) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n_ctx = m.config().n_ctx;
  BenchmarkScores r;
  r.margin.assign(items.size(), std::nan(""));
  std::vector<int8_t> skip(items.size(), 0);  // 1 unknown form, 2 too long
  mq::FirstError error;
#pragma omp parallel for schedule(dynamic, 8)
  for (size_t i = 0; i < items.size(); ++i) error.run(i, [&] {
    const BenchmarkItem& it = items[i];
    if (static_cast<int>(it.tokens.size()) + 1 > n_ctx + 1) {
      skip[i] = 2;
      return;
    }
    SlotSpan sp{.a = it.sent_begin + 1, .s = it.pos + 1, .b = it.sent_end + 1, .forms = {}, .truth = it.correct};
    for (int c = 0; c < 3; ++c) {
      sp.forms[static_cast<size_t>(c)] = tok.id(it.forms[static_cast<size_t>(c)]);
      if (sp.forms[static_cast<size_t>(c)] == Tokenizer::kUnkId) skip[i] = 1;
    }
    if (skip[i]) return;
    std::vector<int32_t> ids{Tokenizer::kSepId};
    for (const auto& w : it.tokens) ids.push_back(tok.id(w));
    const auto sc = slot_scores(m, ids, {sp})[0];
    const size_t t = it.correct;
    r.margin[i] = sc[t] - std::max(sc[(t + 1) % 3], sc[(t + 2) % 3]);
  });
  error.rethrow();
  for (int8_t s : skip) {
    r.skipped_unknown += s == 1;
    r.skipped_long += s == 2;
  }
  r.seconds = mq::seconds_since(t0);
  return r;
}

}  // namespace minigpt
