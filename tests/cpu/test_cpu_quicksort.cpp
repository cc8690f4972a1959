// The GPU quicksort's math (index_math/quicksort.hpp) and its rounds on the host
// (cpu/quicksort.hpp): order against std::stable_sort, values, and the round bound that lets
// the device queue every round without waiting.
#include <gtest/gtest.h>

#include "gpusort/detail/cpu/quicksort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace cpu = gpusort::detail::cpu;
namespace qs = gpusort::detail::index_math::quicksort;
using gpusort::detail::payload;

namespace {

// Sorts with the CPU rounds, checks the order, returns the rounds taken.
template <class K>
int sorted_rounds(std::vector<K> keys, bool descending) {
  const std::vector<K> expect = reference_sort(keys, descending, nans_largest(descending));
  const int rounds = cpu::quicksort(keys.data(), keys_only, keys.size(), descending);
  EXPECT_TRUE(same_bits(keys, expect));
  return rounds;
}

}  // namespace

TEST(QuicksortMath, PivotsSplitEveryRangeThatIsNotOneKey) {
  EXPECT_EQ(qs::median_of_three(3u, 1u, 2u), 2u);
  EXPECT_EQ(qs::median_of_three(1u, 3u, 3u), 3u);
  EXPECT_EQ(qs::median_of_three(5u, 5u, 0u), 5u);
  for (std::uint32_t lo : {0u, 1u, 7u, 0xFFFFFFF0u})
    for (std::uint32_t width : {1u, 2u, 3u, 15u}) {
      if (lo + width < lo) continue;
      const std::uint32_t hi = lo + width, p = qs::midpoint(lo, hi);
      EXPECT_LE(lo, p);
      EXPECT_LT(p, hi) << "the part above the pivot must not be the whole part";
      EXPECT_LE(p - lo, width / 2);
      EXPECT_LE(hi - p - 1, width / 2) << "each side spans at most half the range";
    }
  EXPECT_EQ(qs::midpoint(std::uint64_t{0}, ~std::uint64_t{0}), ~std::uint64_t{0} / 2);
}

TEST(QuicksortMath, FatesAndPacking) {
  EXPECT_EQ(qs::part_fate(0, false, true), qs::fate::done);
  EXPECT_EQ(qs::part_fate(5, true, false), qs::fate::done);
  EXPECT_EQ(qs::part_fate(5, true, true), qs::fate::finish);
  EXPECT_EQ(qs::part_fate(qs::finish_size, false, false), qs::fate::finish);
  EXPECT_EQ(qs::part_fate(qs::finish_size + 1, false, false), qs::fate::partition);
  EXPECT_EQ(qs::part_fate(qs::finish_size + 1, true, true), qs::fate::partition);
  std::uint64_t packed = 0;
  for (qs::index_t chunks : {qs::index_t{3}, qs::index_t{1}, qs::index_t{1} << 30}) {
    const std::uint64_t before = packed;
    packed += qs::reservation(chunks);
    EXPECT_EQ(qs::reserved_sequences(packed), qs::reserved_sequences(before) + 1);
    EXPECT_EQ(qs::reserved_chunks(packed), qs::reserved_chunks(before) + chunks);
  }
  std::uint64_t classes = 0;
  for (int i = 0; i < 4096; ++i) classes += qs::class_unit(i % 3 == 0 ? 2 : i % 2);
  EXPECT_EQ(qs::class_count(classes, 0) + qs::class_count(classes, 1) +
                qs::class_count(classes, 2),
            4096u);
  EXPECT_EQ(qs::class_count(classes, 2), 1366u);
  EXPECT_EQ(qs::class_of(3u, 5u), 0);
  EXPECT_EQ(qs::class_of(5u, 5u), 1);
  EXPECT_EQ(qs::class_of(6u, 5u), 2);
  EXPECT_EQ(qs::chunks_of(qs::chunk_size + 1), 2u);
  EXPECT_GE(qs::max_chunks(qs::chunk_size + 1), 2u);
}

GPUSORT_TYPED_SUITE(CpuQuicksort, ::testing::Test, key_types);

TYPED_TEST(CpuQuicksort, KeysMatchStableSortOnEveryDistribution) {
  using K = TypeParam;
  for_each_hostile_input<K>(1 << 17, 13, [](std::vector<K>& keys, bool descending) {
    sorted_rounds(keys, descending);
    if (::testing::Test::HasFailure()) FAIL() << "this input sorts wrong";
  });
}

// Ordered bits that are powers of two (and one less) make every midpoint peel off one bit: the
// rounds reach the bound, and never pass it. Equal keys cost one round.
TYPED_TEST(CpuQuicksort, RoundsStayWithinTheBound) {
  using K = TypeParam;
  using U = typename gpusort::key_traits<K>::ordered_type;
  constexpr int bits = 8 * sizeof(U);
  const std::size_t n = 200003;
  int most = 0;
  for (bool descending : {false, true}) {
    std::vector<K> keys(n);
    for (std::size_t i = 0; i < n; ++i) {
      const U bit = U{1} << (tools::random_bits(11, i) % bits);
      const U bits_of_key = i % 3 == 0 ? bit : static_cast<U>(bit - 1);
      std::memcpy(&keys[i], &bits_of_key, sizeof(K));
    }
    const int rounds = sorted_rounds(keys, descending);
    EXPECT_LE(rounds, qs::max_rounds(bits));
    most = std::max(most, rounds);
  }
  EXPECT_GE(most, bits / 2) << "the input should need many rounds";
  EXPECT_EQ(sorted_rounds(tools::generate<K>(tools::distribution::all_equal, n, 1), false), 1);
  EXPECT_LE(sorted_rounds(tools::generate<K>(tools::distribution::uniform, n, 1), false),
            qs::max_rounds(bits));
}

TYPED_TEST(CpuQuicksort, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2049}, std::size_t{70001}}) {
    for (tools::distribution d : {tools::distribution::few_unique, tools::distribution::all_equal,
                                  tools::distribution::uniform}) {
      for (bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " desc=" << descending);
        const std::vector<K> input = tools::generate<K>(d, n, n + 5);
        std::vector<K> keys = input;
        std::vector<payload<16>> values(n);
        for (std::size_t i = 0; i < n; ++i) values[i] = payload_of_input<16>(i);
        cpu::quicksort(keys.data(), values.data(), n, descending);
        ASSERT_TRUE(same_bits(keys, reference_sort(input, descending, nans_largest(descending))));
        ASSERT_TRUE(values_follow_keys(input, keys, values, payload_of_input<16>));
      }
    }
  }
}
