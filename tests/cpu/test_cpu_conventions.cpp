// The conventions users bring from NumPy, PyTorch and CUB (issue 26), through the host
// overloads (the GPU where there is one, else the CPU backend) and the index math on the CPU:
// NaNs last or first in both orders, options::stable for every algorithm, argsort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "float_keys.hpp"
#include "gpusort/detail/index_math/nan_block.hpp"
#include "gpusort/detail/index_math/tie_break.hpp"
#include "gpusort/detail/core/address_range.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

namespace {

using gpusort::nan_order;
using gpusort::order;
using namespace gpusort::testing;

constexpr order both_orders[] = {order::ascending, order::descending};
constexpr nan_order both_placements[] = {nan_order::last, nan_order::first};

TEST(NanPlacement, LowestIsTheOneQuestion) {
  EXPECT_FALSE(gpusort::nans_lowest(order::ascending, nan_order::last));
  EXPECT_TRUE(gpusort::nans_lowest(order::descending, nan_order::last));
  EXPECT_TRUE(gpusort::nans_lowest(order::ascending, nan_order::first));
  EXPECT_FALSE(gpusort::nans_lowest(order::descending, nan_order::first));
  const gpusort::options desc{.direction = order::descending, .nans = nan_order::last};
  EXPECT_EQ(gpusort::with_nans_largest(desc).nans, nan_order::first);
  EXPECT_EQ(gpusort::with_nans_largest(gpusort::options{}).nans, nan_order::last);
}

// The rotation by two reversals, run on the CPU with the index functions the kernels use.
TEST(NanPlacement, TwoReversalsRotateTheBlock) {
  namespace net = gpusort::detail::index_math;
  for (std::uint64_t n : {2u, 3u, 8u, 11u}) {
    for (std::uint64_t m = 0; m <= n; ++m) {
      for (bool in_front : {false, true}) {
        std::vector<int> a(n);  // NaNs as -1 - i, numbers as i, block in front or at the back
        for (std::uint64_t i = 0; i < n; ++i) {
          const bool nan = in_front ? i < m : i >= n - m;
          a[i] = nan ? -1 - static_cast<int>(i) : static_cast<int>(i);
        }
        std::vector<int> want = a;
        if (in_front)
          std::rotate(want.begin(), want.begin() + m, want.end());
        else
          std::rotate(want.begin(), want.begin() + (n - m), want.end());
        const std::uint64_t end = in_front ? m : n - m;
        ASSERT_EQ(net::nan_block_count(end, n, in_front), m);
        if (!net::nan_block_stays(m, n)) {
          const std::uint64_t split = net::nan_block_split(m, n, in_front);
          for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t j = net::part_mirror(i, split, n);
            if (i < j) std::swap(a[i], a[j]);
          }
          for (std::uint64_t i = 0; i < n / 2; ++i) std::swap(a[i], a[net::whole_mirror(i, n)]);
        }
        EXPECT_EQ(a, want) << "n=" << n << " m=" << m << " in_front=" << in_front;
      }
    }
  }
}

GPUSORT_TYPED_SUITE(NanCodes, ::testing::Test, float_types);

// With NaNs lowest, the codes keep the numbers' order above every NaN and invert exactly.
TYPED_TEST(NanCodes, LowestCodesPutEveryNanBelowMinusInfinity) {
  using F = TypeParam;
  using order_of = gpusort::detail::float_order<F>;
  const auto bits = special_float_bits<F>();
  for (const auto a : bits) {
    EXPECT_EQ(order_of::from_code(order_of::to_code(a, true), true), a);
    for (const auto b : bits) {
      const bool a_nan = is_nan_bits<F>(a), b_nan = is_nan_bits<F>(b);
      const auto ca = order_of::to_code(a, true), cb = order_of::to_code(b, true);
      if (a_nan && !b_nan) EXPECT_LT(ca, cb);
      if (!a_nan && !b_nan)
        EXPECT_EQ(ca < cb, gpusort::less<F>{}(float_of_bits<F>(a), float_of_bits<F>(b)));
      if (a_nan && b_nan) EXPECT_EQ(order_of::tie_nans(ca, true), order_of::tie_nans(cb, true));
    }
  }
}

GPUSORT_TYPED_SUITE(Conventions, ::testing::Test, key_types);

// Every algorithm, both orders, both NaN placements: keys and pairs in the reference's order
// (floats bit for bit, NaN blocks where asked); with options::stable, exactly the reference's
// permutation.
TYPED_TEST(Conventions, EveryAlgorithmPlacesNansAndKeepsTiesWhenAsked) {
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{257},
                              std::size_t{5003}}) {
    const std::vector<K> input = tied_keys<K>(n, 26 + n);
    for (const gpusort::algorithm a : gpusort::all_algorithms) {
      // cub_radix on a GPU is CUB's own float order (the baseline as users have it).
      if (std::is_floating_point_v<K> && a == gpusort::algorithm::cub_radix &&
          gpusort::detail::gpu_available())
        continue;
      for (const order dir : both_orders) {
        for (const nan_order nans : both_placements) {
          for (const bool stable : {false, true}) {
            const bool desc = dir == order::descending;
            const gpusort::options opt{.algo = a, .direction = dir, .nans = nans, .stable = stable};
            SCOPED_TRACE(::testing::Message()
                         << gpusort::to_string(a) << " n=" << n << (desc ? " desc" : " asc")
                         << " nans " << gpusort::to_string(nans) << (stable ? " stable" : ""));
            std::vector<K> keys = input;
            std::vector<std::uint32_t> values(n);
            std::iota(values.begin(), values.end(), 0u);
            gpusort::sort(keys, values, opt);
            EXPECT_TRUE(pairs_like_reference(input, keys, values, desc, stable, nans));
            if constexpr (std::is_floating_point_v<K>) {
              std::vector<K> alone = input;
              gpusort::sort(alone, opt);
              EXPECT_TRUE(sorted_like_reference(input, alone, desc, false, nullptr, nans));
            }
          }
        }
      }
    }
  }
}

// argsort: the indices are a permutation that sorts the keys (exactly the stable one when
// asked), the keys untouched; 32- and 64-bit indices.
TYPED_TEST(Conventions, ArgsortIndicesSortTheKeys) {
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3000}}) {
    const std::vector<K> input = tied_keys<K>(n, 7 + n);
    for (const order dir : both_orders) {
      for (const bool stable : {false, true}) {
        const bool desc = dir == order::descending;
        const gpusort::options opt{.direction = dir, .stable = stable};
        const std::vector<std::uint32_t> idx = gpusort::argsort(input, opt);
        const std::vector<std::uint64_t> idx64 = gpusort::argsort<std::uint64_t>(input, opt);
        ASSERT_EQ(idx.size(), n);
        ASSERT_EQ(idx64.size(), n);
        const std::vector<std::uint64_t> want = stable_positions(input, desc, nan_order::last);
        std::vector<bool> seen(n, false);
        const sort_order<K> before{desc, nan_order::last};
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_LT(idx[i], n);
          ASSERT_FALSE(seen[idx[i]]) << "index " << idx[i] << " twice";
          seen[idx[i]] = true;
          if (i > 0) ASSERT_FALSE(before(input[idx[i]], input[idx[i - 1]])) << "unsorted at " << i;
          if (stable) {
            ASSERT_EQ(idx[i], want[i]) << "not stable at " << i;
            ASSERT_EQ(idx64[i], want[i]) << "64-bit indices not stable at " << i;
          }
        }
      }
    }
  }
}

// Segments of floats, every segmented algorithm, NaNs both ways.
TEST(ConventionsSegments, NansPlacedInEverySegment) {
  const std::size_t batch = 37, count = 61;
  const std::vector<float> input = special_float_input<float>(batch * count, 3);
  for (const gpusort::algorithm a : {gpusort::algorithm::automatic, gpusort::algorithm::cub_radix,
                                     gpusort::algorithm::cub_merge}) {
    for (const order dir : both_orders) {
      for (const nan_order nans : both_placements) {
        const bool desc = dir == order::descending;
        SCOPED_TRACE(::testing::Message() << gpusort::to_string(a) << (desc ? " desc" : " asc")
                                          << " nans " << gpusort::to_string(nans));
        std::vector<float> keys = input;
        gpusort::sort_batched(keys, count, batch, {.algo = a, .direction = dir, .nans = nans});
        for (std::size_t s = 0; s < count; ++s) {
          const std::vector<float> in(input.begin() + s * batch, input.begin() + (s + 1) * batch);
          const std::vector<float> got(keys.begin() + s * batch, keys.begin() + (s + 1) * batch);
          ASSERT_TRUE(sorted_like_reference(in, got, desc, false, nullptr, nans)) << "segment " << s;
        }
      }
    }
  }
}

// The tie-break's ranks rise along a sorted array and tie exactly where the order ties.
TYPED_TEST(Conventions, TieBreakRanksFollowTheOrder) {
  using K = TypeParam;
  namespace net = gpusort::detail::index_math;
  const std::vector<K> input = tied_keys<K>(2000, 99);
  for (const order dir : both_orders) {
    for (const nan_order nans : both_placements) {
      const bool desc = dir == order::descending;
      const bool low = gpusort::nans_lowest(dir, nans);
      const std::vector<K> sorted = reference_sort(input, desc, nans);
      const auto rank_at = [&](std::uint64_t i) { return net::order_rank(sorted[i], desc, low); };
      const sort_order<K> before{desc, nans};
      for (std::size_t i = 1; i < sorted.size(); ++i) {
        const bool tie = !before(sorted[i - 1], sorted[i]);
        ASSERT_EQ(rank_at(i - 1) == rank_at(i), tie) << "at " << i;
        ASSERT_LE(rank_at(i - 1), rank_at(i)) << "at " << i;
        const std::uint64_t start = net::run_start(rank_at, i + 1, rank_at(i));
        ASSERT_TRUE(start == 0 || rank_at(start - 1) < rank_at(i));
        ASSERT_EQ(rank_at(start), rank_at(i));
      }
    }
  }
  EXPECT_EQ(net::composite_position(net::tie_composite(5, 0xfffffffeu)), 0xfffffffeu);
  EXPECT_LT(net::tie_composite(1, 0xffffffffu), net::tie_composite(2, 0));
  EXPECT_TRUE(net::tie_break_fits(std::uint64_t{1} << 32));
  EXPECT_FALSE(net::tie_break_fits((std::uint64_t{1} << 32) + 1));
}

// The core argsort refuses, before touching anything, indices too narrow for n.
TEST(ConventionsErrors, NarrowIndicesAndNegativeSizesAreRefused) {
  std::size_t bytes = 0;
  const float* keys = nullptr;
  std::uint32_t* idx = nullptr;
  EXPECT_EQ(gpusort::argsort(nullptr, bytes, keys, idx, (std::uint64_t{1} << 32) + 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(gpusort::argsort(nullptr, bytes, keys, idx, -1), cudaErrorInvalidValue);
  float* mutable_keys = nullptr;
  EXPECT_EQ(gpusort::sort_with_indices(nullptr, bytes, mutable_keys, idx, -5),
            cudaErrorInvalidValue);
}

// The pointer check's end of an array: exact where it fits, 0 where the byte size or the end
// would wrap 64 bits (which a "last element is device memory" test would let through).
TEST(ConventionsErrors, ArrayEndsThatWrapAreRefused) {
  using gpusort::detail::array_end;
  constexpr std::uint64_t base = 0x7f0000000000;
  EXPECT_EQ(array_end(base, 1024, 4), base + 4096);
  EXPECT_EQ(array_end(base, 1, 16), base + 16);
  EXPECT_EQ(array_end(0, ~std::uint64_t{0}, 1), ~std::uint64_t{0});
  EXPECT_EQ(array_end(1, ~std::uint64_t{0}, 1), 0u);
  // (count - 1) * 8 wraps to 0xfff...f8: the last element would look like base - 8.
  EXPECT_EQ(array_end(base, std::uint64_t{1} << 61, 8), 0u);
  EXPECT_EQ(array_end(base, (std::uint64_t{1} << 62) + 1, 4), 0u);
  EXPECT_EQ(array_end(base, ~std::uint64_t{0}, 8), 0u);
  EXPECT_EQ(array_end(~std::uint64_t{0} - 7, 1, 8), 0u);
  EXPECT_EQ(array_end(~std::uint64_t{0} - 8, 1, 8), ~std::uint64_t{0});
  static_assert(array_end(16, 2, 8) == 32);
}

}  // namespace
