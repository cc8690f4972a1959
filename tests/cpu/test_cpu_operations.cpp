// unique and searchsorted on host vectors (include/gpusort/operations.hpp): without a GPU the
// CPU backend sorts, so CI runs these; on a GPU host the sort runs there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "gpusort/operations.hpp"
#include "operations_reference.hpp"
#include "reference.hpp"

namespace gpusort::testing {
namespace {

class Operations : public ::testing::Test {};
GPUSORT_TYPED_SUITE(OperationsOnHostKeys, Operations, key_types);

TYPED_TEST(OperationsOnHostKeys, UniqueMatchesATallyOfTheKeys) {
  using K = TypeParam;
  for_each_hostile_input<K>(70000, 13, [](const std::vector<K>& keys, bool descending) {
    if (descending) return;  // unique's order is ascending: the other pass adds nothing
    const std::vector<K> input = keys;
    const unique_result<K> got = gpusort::unique(keys);
    const unique_reference<K> want = reference_unique(keys);
    EXPECT_EQ(codes_of(got.keys), want.codes);
    EXPECT_EQ(got.counts, want.counts);
    EXPECT_EQ(codes_of(keys), codes_of(input));  // the caller's keys as they were
  });
}

TYPED_TEST(OperationsOnHostKeys, UniqueRefusesAnotherOrder) {
  using K = TypeParam;
  const std::vector<K> keys = {K(3), K(1), K(3)};
  EXPECT_THROW(gpusort::unique(keys, {.direction = order::descending}), gpusort::error);
  EXPECT_THROW(gpusort::unique(keys, {.nans = nan_order::first}), gpusort::error);
}

TYPED_TEST(OperationsOnHostKeys, SearchsortedMatchesCountingOnBothSides) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{97},
                        std::size_t{1009}}) {
    for (tools::distribution d : tools::all_distributions) {
      const std::uint64_t seed = 7 * n + static_cast<int>(d);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d));
      std::vector<K> sorted = tools::generate<K>(d, n, seed);
      scatter_special_values(sorted, seed);
      gpusort::sort(sorted);
      // Queries: other keys, the keys themselves (runs of equals), and the specials.
      std::vector<K> queries = tools::generate<K>(d, 300, seed + 1);
      scatter_special_values(queries, seed + 1);
      queries.insert(queries.end(), sorted.begin(), sorted.begin() + std::min<std::size_t>(n, 50));
      for (side where : {side::left, side::right}) {
        const std::vector<std::int64_t> got = gpusort::searchsorted(sorted, queries, where);
        ASSERT_EQ(got.size(), queries.size());
        for (std::size_t j = 0; j < queries.size(); ++j)
          ASSERT_EQ(got[j], reference_place(sorted, queries[j], where))
              << "query " << j << (where == side::left ? " left" : " right");
      }
    }
  }
}

TYPED_TEST(OperationsOnHostKeys, SearchsortedRefusesAnArrayOutOfOrder) {
  using K = TypeParam;
  const std::vector<K> unsorted = {K(2), K(1)};
  EXPECT_THROW(gpusort::searchsorted(unsorted, std::vector<K>{K(1)}), gpusort::invalid_request);
  if constexpr (std::is_floating_point_v<K>) {  // a NaN first: NaNs belong last
    const std::vector<K> nan_first = {std::numeric_limits<K>::quiet_NaN(), K(1)};
    EXPECT_THROW(gpusort::searchsorted(nan_first, std::vector<K>{K(1)}), gpusort::invalid_request);
  }
}

TEST(Operations, FloatsKeepMinusZeroApartAndNaNsTogether) {
  const std::vector<float> keys = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f,
                                   -std::numeric_limits<float>::quiet_NaN(), -0.0f};
  const unique_result<float> got = gpusort::unique(keys);
  ASSERT_EQ(got.keys.size(), 4u);
  EXPECT_TRUE(std::signbit(got.keys[0]) && got.keys[0] == 0.0f);
  EXPECT_TRUE(!std::signbit(got.keys[1]) && got.keys[1] == 0.0f);
  EXPECT_EQ(got.keys[2], 1.0f);
  EXPECT_TRUE(std::isnan(got.keys[3]));
  EXPECT_EQ(got.counts, (std::vector<std::uint64_t>{2, 1, 1, 2}));
  EXPECT_EQ(gpusort::searchsorted(got.keys, std::vector<float>{0.0f}, side::left)[0], 1);
  EXPECT_EQ(gpusort::searchsorted(got.keys, std::vector<float>{got.keys[3]}, side::right)[0], 4);
}

// sample_candidates' draw (index_math/sampling.hpp) on worked rows: weights e^((v - v0) / T),
// top-p keeps candidates whose mass before them is below p of the total, the draw by u.
TEST(Sampling, WorkedRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::int64_t> ids = {10, 11, 12, 13};
  const auto draw = [&](std::vector<float> values, float p, float temperature, float u) {
    return detail::sample_row(values.data(), ids.data(), values.size(), p, temperature, u);
  };
  // ln 3, ln 2, 0, -inf at T = 1: weights 1, 2/3, 1/3, 0 of total 2.
  const std::vector<float> row = {std::log(3.0f), std::log(2.0f), 0.0f, -inf};
  EXPECT_EQ(draw(row, 1.0f, 1.0f, 0.0f), 10);
  EXPECT_EQ(draw(row, 1.0f, 1.0f, 0.49f), 10);  // 0.49 of 2 is below the first weight, 1
  EXPECT_EQ(draw(row, 1.0f, 1.0f, 0.51f), 11);
  EXPECT_EQ(draw(row, 1.0f, 1.0f, 0.84f), 12);  // past 5/3 of 2
  EXPECT_EQ(draw(row, 1.0f, 1.0f, 0.999f), 12);  // -inf weighs nothing
  // p = 0.5: the mass before the second (1) is not below 1, so the first alone.
  EXPECT_EQ(draw(row, 0.5f, 1.0f, 0.99f), 10);
  // p = 0.6: the second (mass before 1 < 1.2) too, not the third (5/3): u of 5/3.
  EXPECT_EQ(draw(row, 0.6f, 1.0f, 0.59f), 10);
  EXPECT_EQ(draw(row, 0.6f, 1.0f, 0.61f), 11);
  EXPECT_EQ(draw(row, 0.6f, 1.0f, 0.999f), 11);
  // Temperature infinity: every number alike, a third each here, and -inf (a masked token)
  // never drawn.
  EXPECT_EQ(draw({4.0f, 3.0f, 2.0f, -inf}, 1.0f, inf, 0.32f), 10);
  EXPECT_EQ(draw({4.0f, 3.0f, 2.0f, -inf}, 1.0f, inf, 0.35f), 11);
  EXPECT_EQ(draw({4.0f, 3.0f, 2.0f, -inf}, 1.0f, inf, 0.999f), 12);
  // NaNs first (top-k's order) are never drawn; a row of NaNs gives its first candidate.
  EXPECT_EQ(draw({nan, nan, 1.0f, 1.0f}, 1.0f, 1.0f, 0.0f), 12);
  EXPECT_EQ(draw({nan, nan, 1.0f, 1.0f}, 1.0f, 1.0f, 0.99f), 13);
  EXPECT_EQ(draw({nan, nan, nan, nan}, 1.0f, 1.0f, 0.7f), 10);
  // +inf logits share the draw; the numbers after them weigh nothing.
  EXPECT_EQ(draw({inf, inf, 5.0f, 1.0f}, 1.0f, 1.0f, 0.4f), 10);
  EXPECT_EQ(draw({inf, inf, 5.0f, 1.0f}, 1.0f, 1.0f, 0.6f), 11);
}

TEST(Sampling, RowsAndRefusals) {
  const std::vector<float> values = {2.0f, 1.0f, 5.0f, 0.0f};  // two rows of k = 2
  const std::vector<std::int64_t> ids = {7, 3, 9, 1};
  const std::vector<float> uniforms = {0.0f, 0.999f};
  std::vector<std::int64_t> tokens(2, -1);
  sample_candidates_on_host(values.data(), ids.data(), 2, 2, 1.0f, 1.0f, uniforms.data(), tokens.data());
  EXPECT_EQ(tokens, (std::vector<std::int64_t>{7, 1}));
  for (const auto [p, t] : {std::pair{0.0f, 1.0f}, std::pair{1.5f, 1.0f}, std::pair{0.5f, 0.0f},
                            std::pair{std::nanf(""), 1.0f}, std::pair{0.5f, -1.0f}})
    EXPECT_THROW(sample_candidates_on_host(values.data(), ids.data(), 2, 2, p, t, uniforms.data(),
                                           tokens.data()),
                 gpusort::invalid_request);
}

}  // namespace
}  // namespace gpusort::testing
