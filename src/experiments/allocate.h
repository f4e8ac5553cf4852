// Bit allocation as a multiple-choice knapsack: every Linear takes exactly one of its options (a recipe
// with its exact stored bytes and a cost, e.g. the KL divergence it adds when quantized alone), and the
// costs are taken as additive. The exact frontier of (total bytes, total cost) over all choices, and the
// cheapest choice within a byte budget. experiments/27-mixed-epi measures what the chosen maps really do.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mqexp {

struct AllocOption {
  std::string recipe;    // e.g. "int3-g64-gptq"
  // The budgeted resource: stored bytes of this Linear in that recipe, or any other additive integer
  // (27-mixed-epi also budgets fitted nanojoules per token).
  long long bytes = 0;
  double cost = 0;       // predicted harm (>= 0 expected, not required)
};

struct AllocItem {
  std::string name;                  // e.g. "h.2.mlp.c_proj"
  std::vector<AllocOption> options;  // at least one
};

struct Allocation {
  long long bytes = 0;
  double cost = 0;
  std::vector<int> choice;  // (items) index of the option each item takes
};

// Every allocation no other beats (fewer or equal bytes and lower cost, or fewer bytes and equal cost),
// by bytes ascending (and so cost descending). Exact: a dynamic programme over the items that keeps only
// the non-dominated partial sums, so nothing better can be pruned away. mq::UsageError for an item
// without options; mq::Error when the frontier would exceed `max_states` partial allocations.
std::vector<Allocation> allocation_frontier(const std::vector<AllocItem>& items, size_t max_states = 4'000'000);

// The lowest-cost frontier point whose bytes fit `budget` (the frontier is sorted, so the last that fits),
// or nullopt when even the smallest allocation does not fit.
std::optional<Allocation> best_within(const std::vector<Allocation>& frontier, long long budget);

// The same answer by trying every combination (for tests on small instances); mq::UsageError when the
// instance has more than `max_combinations` combinations.
std::optional<Allocation> best_within_brute_force(const std::vector<AllocItem>& items, long long budget,
                                                  long long max_combinations = 1'000'000);

}  // namespace mqexp
