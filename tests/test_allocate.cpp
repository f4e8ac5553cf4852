// The bit-allocation solver: its exact frontier against trying every combination, on random small
// instances and on hand-made ones whose answer is known.
#include <doctest/doctest.h>

#include <random>

#include <fmt/core.h>

#include "experiments/allocate.h"
#include "miniquant/error.h"

using mqexp::AllocItem;
using mqexp::AllocOption;

TEST_CASE("a hand-made instance: the budget picks the known answer") {
  // Two Linears of 100 and 300 fp16 bytes; halving one costs its sensitivity.
  const std::vector<AllocItem> items = {
      {"a", {{"fp16", 100, 0.0}, {"int8", 50, 1.0}, {"int4", 25, 5.0}}},
      {"b", {{"fp16", 300, 0.0}, {"int8", 150, 0.5}, {"int4", 75, 2.0}}},
  };
  const auto f = mqexp::allocation_frontier(items);
  REQUIRE(!f.empty());
  CHECK(f.front().bytes == 100);  // int4 + int4
  CHECK(f.front().cost == doctest::Approx(7.0));
  CHECK(f.back().bytes == 400);   // fp16 + fp16
  CHECK(f.back().cost == 0.0);
  for (size_t i = 1; i < f.size(); ++i) {  // sorted by bytes, strictly cheaper as bytes grow
    CHECK(f[i].bytes > f[i - 1].bytes);
    CHECK(f[i].cost < f[i - 1].cost);
  }
  // 200 bytes: {int8, int8} (200 B, cost 1.5) beats {fp16, int4} (175 B, cost 2.0); 180 bytes leaves only the latter.
  const auto b200 = mqexp::best_within(f, 200);
  REQUIRE(b200);
  CHECK(b200->bytes == 200);
  CHECK(b200->cost == doctest::Approx(1.5));
  CHECK(b200->choice == std::vector<int>{1, 1});
  const auto b180 = mqexp::best_within(f, 180);
  REQUIRE(b180);
  CHECK(b180->choice == std::vector<int>{0, 2});  // 175 B, cost 2.0
  CHECK_FALSE(mqexp::best_within(f, 99));          // nothing fits
}

TEST_CASE("the frontier agrees with brute force on random instances, at every budget") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<AllocItem> items;
    const int n = 2 + static_cast<int>(rng() % 5);  // 2..6 items
    for (int i = 0; i < n; ++i) {
      AllocItem it{fmt::format("L{}", i), {}};  // fmt, not "L" + to_string: gcc 12 -O3 warns -Wrestrict (false positive)
      const int k = 1 + static_cast<int>(rng() % 4);  // 1..4 options
      for (int o = 0; o < k; ++o)  // small integer bytes and costs so that ties happen too
        it.options.push_back({fmt::format("r{}", o), static_cast<long long>(1 + rng() % 20), static_cast<double>(rng() % 10)});
      items.push_back(it);
    }
    const auto f = mqexp::allocation_frontier(items);
    long long max_bytes = 0;
    for (const auto& it : items) {
      long long m = 0;
      for (const auto& o : it.options) m = std::max(m, o.bytes);
      max_bytes += m;
    }
    for (long long budget = 0; budget <= max_bytes + 1; ++budget) {
      CAPTURE(trial);
      CAPTURE(budget);
      const auto dp = mqexp::best_within(f, budget);
      const auto bf = mqexp::best_within_brute_force(items, budget);
      REQUIRE(dp.has_value() == bf.has_value());
      if (!dp) continue;
      CHECK(dp->cost == bf->cost);    // summed in the same order: equal, not approximately
      CHECK(dp->bytes == bf->bytes);  // among equal costs both keep the fewest bytes
      long long bytes = 0;             // the choice really has the bytes and cost it claims
      double cost = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        bytes += items[i].options[static_cast<size_t>(dp->choice[i])].bytes;
        cost += items[i].options[static_cast<size_t>(dp->choice[i])].cost;
      }
      CHECK(bytes == dp->bytes);
      CHECK(cost == dp->cost);
    }
  }
}

TEST_CASE("bad instances are refused") {
  CHECK_THROWS_AS(mqexp::allocation_frontier({{"empty", {}}}), mq::UsageError);
  std::vector<AllocItem> big(30, AllocItem{"x", {{"a", 1, 1.0}, {"b", 2, 0.5}}});
  CHECK_THROWS_AS(mqexp::best_within_brute_force(big, 10), mq::UsageError);  // 2^30 combinations
}
