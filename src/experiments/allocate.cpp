// The exact multiple-choice knapsack frontier (non-dominated partial sums) and its brute-force twin.
#include "experiments/allocate.h"

#include <algorithm>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mqexp {
namespace {

// Sorts by (bytes, cost) and keeps each point only when it costs strictly less than every point with
// fewer or equal bytes before it: the non-dominated set, cheapest-first among equal bytes.
void prune(std::vector<Allocation>& v) {
  std::sort(v.begin(), v.end(), [](const Allocation& a, const Allocation& b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.cost < b.cost;
  });
  std::vector<Allocation> kept;
  for (auto& a : v)
    if (kept.empty() || a.cost < kept.back().cost) kept.push_back(std::move(a));
  v = std::move(kept);
}

}  // namespace

std::vector<Allocation> allocation_frontier(const std::vector<AllocItem>& items, size_t max_states) {
  std::vector<Allocation> states = {Allocation{}};
  for (const AllocItem& it : items) {
    if (it.options.empty()) throw mq::UsageError(fmt::format("allocation: {} has no options", it.name));
    if (states.size() * it.options.size() > max_states)
      throw mq::Error(fmt::format("allocation: more than {} partial allocations at {}", max_states, it.name));
    std::vector<Allocation> next;
    next.reserve(states.size() * it.options.size());
    for (const Allocation& s : states)
      for (size_t o = 0; o < it.options.size(); ++o) {
        Allocation a = s;
        a.bytes += it.options[o].bytes;
        a.cost += it.options[o].cost;
        a.choice.push_back(static_cast<int>(o));
        next.push_back(std::move(a));
      }
    // A partial allocation dominated now stays dominated: every completion adds the same to both.
    prune(next);
    states = std::move(next);
  }
  return states;
}

std::optional<Allocation> best_within(const std::vector<Allocation>& frontier, long long budget) {
  std::optional<Allocation> best;
  for (const Allocation& a : frontier)
    if (a.bytes <= budget) best = a;  // sorted by bytes ascending, cost descending
  return best;
}

std::optional<Allocation> best_within_brute_force(const std::vector<AllocItem>& items, long long budget, long long max_combinations) {
  long long combos = 1;
  for (const AllocItem& it : items) {
    if (it.options.empty()) throw mq::UsageError(fmt::format("allocation: {} has no options", it.name));
    combos *= static_cast<long long>(it.options.size());
    if (combos > max_combinations) throw mq::UsageError(fmt::format("allocation: more than {} combinations to try", max_combinations));
  }
  std::optional<Allocation> best;
  std::vector<int> idx(items.size(), 0);
  for (long long c = 0; c < combos; ++c) {
    Allocation a;
    a.choice = idx;
    for (size_t i = 0; i < items.size(); ++i) {
      a.bytes += items[i].options[static_cast<size_t>(idx[i])].bytes;
      a.cost += items[i].options[static_cast<size_t>(idx[i])].cost;
    }
    if (a.bytes <= budget && (!best || a.cost < best->cost || (a.cost == best->cost && a.bytes < best->bytes))) best = a;
    for (size_t i = 0; i < items.size(); ++i) {  // odometer
      if (++idx[i] < static_cast<int>(items[i].options.size())) break;
      idx[i] = 0;
    }
  }
  return best;
}

}  // namespace mqexp
