// The radix sort's index math (index_math/radix.hpp) on worked keys, and the CPU backend's
// radix sort (cpu/radix_sort.hpp: algorithm::cub_radix and automatic there) against
// std::stable_sort of the keys' ordered bits, every key type, both orders, with values that
// show stability; sizes around the threads' shares, and keys whose high digits all agree
// (passes that move nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "float_keys.hpp"
#include "gpusort/detail/cpu/radix_sort.hpp"
#include "gpusort/detail/index_math/radix.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace im = gpusort::detail::index_math;

namespace {

TEST(RadixIndexMath, PassesAndDigits) {
  EXPECT_EQ(im::radix_passes<std::uint32_t>(8), 4);
  EXPECT_EQ(im::radix_passes<std::uint64_t>(8), 8);
  EXPECT_EQ(im::radix_passes<std::uint32_t>(11), 3);  // 11 + 11 + 10 bits
  EXPECT_EQ(im::radix_passes<std::uint64_t>(11), 6);
  constexpr std::uint32_t key = 0x12345678u;
  EXPECT_EQ(im::radix_digit(key, 0, 8, false), 0x78u);
  EXPECT_EQ(im::radix_digit(key, 3, 8, false), 0x12u);
  EXPECT_EQ(im::radix_digit(key, 0, 8, true), 0x87u);  // descending: the complement's digits
  EXPECT_EQ(im::radix_digit(key, 2, 11, false), 0x12345678u >> 22);
  EXPECT_EQ(im::radix_digit(~std::uint64_t{0}, 7, 8, false), 0xffu);
  static_assert(im::radix_digit(std::uint64_t{1} << 63, 7, 8, false) == 0x80u);
}

GPUSORT_TYPED_SUITE(CpuRadixSort, ::testing::Test, key_types);

// keys sorted by the radix sort with their positions as values, against std::stable_sort of
// (ordered bits, position).
template <class K>
void expect_stable_order(std::vector<K> keys, bool descending) {
  using U = typename gpusort::key_traits<K>::ordered_type;
  const std::size_t n = keys.size();
  std::vector<std::pair<U, std::uint32_t>> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = {gpusort::key_traits<K>::ordered(keys[i]), static_cast<std::uint32_t>(i)};
  std::stable_sort(want.begin(), want.end(), [&](const auto& a, const auto& b) {
    return descending ? a.first > b.first : a.first < b.first;
  });
  std::vector<std::uint32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = static_cast<std::uint32_t>(i);
  gpusort::detail::cpu::radix_sort(keys.data(), positions.data(), n, descending);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(positions[i], want[i].second) << "n=" << n << " at " << i;
    ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[i]), want[i].first) << "n=" << n << " at " << i;
  }
}

TYPED_TEST(CpuRadixSort, StableOnHostileInputs) {
  using K = TypeParam;
  for_each_hostile_input<K>(std::size_t{1} << 17, 13, [](const std::vector<K>& keys, bool descending) {
    expect_stable_order(keys, descending);
  });
  for (const bool descending : {false, true}) expect_stable_order(tied_keys<K>(300007, 5), descending);
}

// Keys that differ only in their lowest byte: every other pass finds one digit and moves
// nothing, so the sorted keys end in the second buffer or the first by the passes' parity.
TYPED_TEST(CpuRadixSort, PassesThatMoveNothing) {
  using K = TypeParam;
  std::mt19937_64 rng(42);
  std::vector<K> keys(100003);
  for (K& k : keys) k = static_cast<K>(100 + rng() % 50);
  expect_stable_order(keys, false);
  expect_stable_order(keys, true);
}

}  // namespace
