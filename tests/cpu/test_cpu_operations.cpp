// unique and searchsorted on host vectors (include/gpusort/operations.hpp): without a GPU the
// CPU backend sorts, so CI runs these; on a GPU host the sort runs there.
#include <gtest/gtest.h>

#include <limits>
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

}  // namespace
}  // namespace gpusort::testing
