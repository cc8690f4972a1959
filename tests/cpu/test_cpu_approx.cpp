// The approximate sort (interval projection, Xiao et al.) on the CPU: its index math
// (index_math/approx.hpp), the CPU backend (cpu/approx.hpp) against std::stable_sort for every
// key type, both interval modes and both directions, the sampled mode's balance, top_k, the
// quality measure, and the errors of the host API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gpusort/approx.hpp"
#include "gpusort/detail/cpu/approx.hpp"
#include "gpusort/detail/index_math/approx.hpp"
#include "gpusort/detail/index_math/row_select.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace net = gpusort::detail::index_math;
namespace cpu = gpusort::detail::cpu;
using net::index_t;

namespace {

template <class K>
using ordered_t = net::ordered_t<K>;

template <class K>
ordered_t<K> ord(K k) {
  return gpusort::key_traits<K>::ordered(k);
}

// Same bits, NaN payloads and the sign of zero included.
template <class K>
bool identical(K a, K b) {
  return std::memcmp(&a, &b, sizeof(K)) == 0;
}

template <class K>
bool is_nan(K k) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(k);
  return false;
}

template <class K>
std::vector<K> random_bit_keys(std::size_t n, std::uint64_t seed) {
  std::vector<K> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = tools::random_bits(seed, i);
    std::memcpy(&v[i], &bits, sizeof(K));
  }
  return v;
}

// Extremes of every type (finite ones only for floats; nan_keys adds the others).
template <class K>
std::vector<K> edge_keys() {
  using L = std::numeric_limits<K>;
  std::vector<K> v = {L::lowest(), L::max(), L::min(), K(0), K(1), K(2), K(42), K(100)};
  if constexpr (std::is_integral_v<K>) {
    v.insert(v.end(), {K(L::max() - 1), K(L::lowest() + 1), K(L::max() / 2), K(L::max() / 2 + 1)});
  }
  if constexpr (std::is_signed_v<K>) v.insert(v.end(), {K(-1), K(-2), K(-42)});
  if constexpr (std::is_floating_point_v<K>) {
    v.insert(v.end(), {K(-0.0), L::denorm_min(), K(-L::denorm_min()), K(-L::min()),
                       L::epsilon(), K(0.5), K(-0.5), K(1e30), K(-1e30),
                       std::nextafter(L::max(), K(0)), std::nextafter(L::lowest(), K(0)),
                       K(3) * L::denorm_min(), std::nextafter(L::min(), K(0))});
  }
  return v;
}

template <class K>
std::vector<K> non_finite_keys() {
  using L = std::numeric_limits<K>;
  if constexpr (std::is_floating_point_v<K>) {
    return {L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(), L::signaling_NaN()};
  }
  return {};
}

// Finite min and max of a key set as ordered bits, as the linear mode reduces them
// (lo > hi: no finite key).
template <class K>
std::pair<ordered_t<K>, ordered_t<K>> finite_extremes(const std::vector<K>& keys) {
  using U = ordered_t<K>;
  U lo = ~U{0}, hi = 0;
  for (K k : keys) {
    if (!net::finite_key(k)) continue;
    lo = std::min(lo, ord(k));
    hi = std::max(hi, ord(k));
  }
  return {lo, hi};
}

// The interval counts of the main matrix, and the key distributions.
constexpr std::uint32_t interval_counts[] = {1, 7, 1000, 10000};
constexpr std::size_t main_sizes[] = {0, 1, 2, 3, 100, 1000, 4097, 65537};

// An input: a distribution, with (floats) NaN, infinities and signed zeros mixed in.
template <class K>
std::vector<K> make_input(tools::distribution d, std::size_t n, std::uint64_t seed,
                          bool specials) {
  std::vector<K> keys = tools::generate<K>(d, n, seed);
  if (specials) scatter_special_values(keys, seed);
  return keys;
}

// Indices of the stable sort of keys in the direction.
template <class K>
std::vector<std::uint64_t> reference_order(const std::vector<K>& keys, bool descending) {
  std::vector<std::uint64_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), std::uint64_t{0});
  const net::directed<gpusort::less<K>> before{{}, descending};
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return before(keys[a], keys[b]); });
  return idx;
}

}  // namespace

GPUSORT_TYPED_SUITE(ApproxMath, ::testing::Test, key_types);

// ---- 1. network math --------------------------------------------------------------------

TYPED_TEST(ApproxMath, FromOrderedInvertsOrdered) {
  using K = TypeParam;
  using U = ordered_t<K>;
  std::vector<K> keys = edge_keys<K>();
  for (K k : random_bit_keys<K>(20000, 11)) keys.push_back(k);
  for (K k : non_finite_keys<K>())
    if (!is_nan(k)) keys.push_back(k);
  for (K k : keys) {
    if (is_nan(k)) continue;
    const K back = net::from_ordered<K>(ord(k));
    ASSERT_TRUE(identical(back, k)) << "key " << k << " came back as " << back;
  }
  // And the other way round: any ordered value that is not a NaN's comes back.
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const U u = static_cast<U>(tools::random_bits(12, i));
    const K k = net::from_ordered<K>(u);
    if (is_nan(k)) continue;
    ASSERT_EQ(ord(k), u);
  }
  const U ends[] = {U{0}, U{1}, static_cast<U>(~U{0} >> 1), static_cast<U>((~U{0} >> 1) + 1),
                    static_cast<U>(~U{0} - 1)};
  for (U u : ends) {
    const K k = net::from_ordered<K>(u);
    if (!is_nan(k)) EXPECT_EQ(ord(k), u);
  }
  if constexpr (std::is_integral_v<K>) {
    EXPECT_EQ(net::from_ordered<K>(U{0}), std::numeric_limits<K>::lowest());
    EXPECT_EQ(net::from_ordered<K>(~U{0}), std::numeric_limits<K>::max());
  } else {
    EXPECT_TRUE(identical(net::from_ordered<K>(ord(K(-0.0))), K(-0.0)));
    EXPECT_TRUE(identical(net::from_ordered<K>(ord(K(0.0))), K(0.0)));
    EXPECT_LT(ord(K(-0.0)), ord(K(0.0)));
    // The device's "after every key" sentinel: a NaN, which sorts with (after) every key.
    EXPECT_TRUE(std::isnan(net::from_ordered<K>(~U{0})));
  }
}

// Keys for the bounds' fast compares: the edges, infinities and NaNs, both zeros, random bits.
template <class K>
std::vector<K> bound_test_keys(std::uint64_t seed) {
  std::vector<K> keys = edge_keys<K>();
  for (K k : non_finite_keys<K>()) keys.push_back(k);
  for (K k : random_bit_keys<K>(200, seed)) keys.push_back(k);
  if constexpr (std::is_floating_point_v<K>) {
    keys.push_back(K(-0.0));
    keys.push_back(K(0.0));
  }
  return keys;
}

// top_k's gather decides nearly every key by the key type's own `<` against the bound's key
// and leaves the rest to the exact test on codes and positions: a key the fast compare calls
// before the bound must be a candidate at every position, one it calls after must be none,
// and it may leave only keys equal to the bound's key (both zeros) and NaNs open.
TYPED_TEST(ApproxMath, CandidateBoundsFastCompareAgreesWithTheCodes) {
  using K = TypeParam;
  const std::vector<K> keys = bound_test_keys<K>(5);
  for (bool descending : {false, true})
    for (K b : keys) {
      const auto bound = net::candidate_bound<K>::at(b, 100, descending);
      for (K k : keys) {
        const bool before = bound.surely_before(k), after = bound.surely_after(k);
        ASSERT_FALSE(before && after) << k << " against " << b;
        for (index_t i : {index_t{0}, index_t{99}, index_t{100}, index_t{101}, ~index_t{0}}) {
          const bool exact = bound.holds(net::select_code(k, descending), i);
          if (before) ASSERT_TRUE(exact) << k << " at " << i << " against " << b << " desc " << descending;
          if (after) ASSERT_FALSE(exact) << k << " at " << i << " against " << b << " desc " << descending;
        }
        if (!before && !after)  // left open: only equal keys (both zeros) and NaNs
          ASSERT_TRUE(is_nan(k) || is_nan(b) || k == b) << k << " against " << b;
      }
    }
}

TYPED_TEST(ApproxMath, FiniteKeyRejectsOnlyInfinitiesAndNans) {
  using K = TypeParam;
  for (K k : edge_keys<K>()) EXPECT_TRUE(net::finite_key(k)) << k;
  for (K k : non_finite_keys<K>()) EXPECT_FALSE(net::finite_key(k)) << k;
  for (K k : random_bit_keys<K>(5000, 3)) {
    if constexpr (std::is_floating_point_v<K>) {
      ASSERT_EQ(net::finite_key(k), std::isfinite(k)) << k;
    } else {
      ASSERT_TRUE(net::finite_key(k));
    }
  }
}

// The projection's interval in exact arithmetic (before the clamp to [0, intervals)).
template <class K>
long double exact_projection(K k, ordered_t<K> lo, ordered_t<K> hi, std::uint32_t intervals) {
  if constexpr (std::is_integral_v<K>) {
    const ordered_t<K> u = ord(k);
    if (u <= lo) return 0;
    const unsigned __int128 num = static_cast<unsigned __int128>(u - lo) * intervals;
    const unsigned __int128 den = static_cast<unsigned __int128>(hi - lo) + 1;
    return static_cast<long double>(num / den);
  } else {
    const long double l = net::from_ordered<K>(lo), h = net::from_ordered<K>(hi);
    return std::floor((static_cast<long double>(k) - l) * intervals / (h - l));
  }
}

template <class K>
void check_projection(const std::vector<K>& sorted_keys, ordered_t<K> lo, ordered_t<K> hi,
                      std::uint32_t intervals) {
  const auto p = net::linear_projection<K>::make(lo, hi, intervals);
  std::uint32_t previous = 0;
  const bool exact_ok = [&] {
    if (lo >= hi) return false;
    if constexpr (std::is_integral_v<K>) {
      return true;
    } else {
      const double width = static_cast<double>(net::from_ordered<K>(hi)) -
                           static_cast<double>(net::from_ordered<K>(lo));
      return std::isfinite(p.scale) && p.scale > 0 && width >= 1e-280;
    }
  }();
  for (std::size_t i = 0; i < sorted_keys.size(); ++i) {
    const K k = sorted_keys[i];
    const std::uint32_t j = p(k);
    ASSERT_LT(j, intervals) << "key " << k;
    ASSERT_GE(j, previous) << "not monotone at key " << k << " after " << sorted_keys[i - 1];
    previous = j;
    if (!net::finite_key(k)) {
      const bool last = is_nan(k) || k > 0;
      ASSERT_EQ(j, last ? intervals - 1 : 0u) << "key " << k;
      continue;
    }
    if (ord(k) <= lo) ASSERT_EQ(j, 0u) << "key " << k << " at or below the minimum";
    if (lo >= hi) {
      ASSERT_EQ(j, 0u) << "min == max (or no finite key): key " << k;
      continue;
    }
    if (exact_ok && ord(k) >= lo && ord(k) <= hi) {
      const long double x = exact_projection(k, lo, hi, intervals);
      const long double want = std::clamp<long double>(x, 0, intervals - 1);
      ASSERT_LE(std::fabs(static_cast<long double>(j) - want), 1.0L)
          << "key " << k << ": interval " << j << ", exact " << x;
    }
  }
  if constexpr (std::is_floating_point_v<K>) {
    if (lo < hi && std::isfinite(p.scale) && p.scale > 0) {
      EXPECT_EQ(p(net::from_ordered<K>(hi)), intervals - 1) << "the maximum goes last";
    }
  }
}

TYPED_TEST(ApproxMath, LinearProjectionIsMonotoneAndInRange) {
  using K = TypeParam;
  using U = ordered_t<K>;
  std::vector<K> keys = edge_keys<K>();
  for (K k : non_finite_keys<K>()) keys.push_back(k);
  for (K k : random_bit_keys<K>(3000, 5)) keys.push_back(k);
  for (K k : tools::generate<K>(tools::distribution::gaussian, 2000, 6)) keys.push_back(k);
  for (K k : tools::generate<K>(tools::distribution::zipf, 1000, 7)) keys.push_back(k);
  std::sort(keys.begin(), keys.end(), gpusort::less<K>{});

  std::vector<std::pair<U, U>> extremes = {finite_extremes(keys), {ord(K(42)), ord(K(42))},
                                           {~U{0}, U{0}}, {ord(K(0)), ord(K(100))}};
  const std::vector<K> finite = [&] {
    std::vector<K> f;
    for (K k : keys)
      if (net::finite_key(k)) f.push_back(k);
    return f;
  }();
  std::mt19937_64 rng(99);
  for (int t = 0; t < 12; ++t) {
    U a = ord(finite[rng() % finite.size()]), b = ord(finite[rng() % finite.size()]);
    extremes.push_back({std::min(a, b), std::max(a, b)});
  }
  for (auto [lo, hi] : extremes) {
    for (std::uint32_t intervals : {1u, 2u, 7u, 1000u, 10000u, 1u << 24}) {
      SCOPED_TRACE(::testing::Message() << "lo=" << net::from_ordered<K>(lo)
                                        << " hi=" << net::from_ordered<K>(hi)
                                        << " intervals=" << intervals);
      check_projection(keys, lo, hi, intervals);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(ApproxMath, LinearProjectionOverTheWholeRange) {
  using K = TypeParam;
  using L = std::numeric_limits<K>;
  const auto lo = ord(L::lowest()), hi = ord(L::max());
  for (std::uint32_t intervals : {1u, 2u, 16u, 10000u, 1u << 24}) {
    SCOPED_TRACE(::testing::Message() << "intervals=" << intervals);
    const auto p = net::linear_projection<K>::make(lo, hi, intervals);
    EXPECT_EQ(p(L::lowest()), 0u);
    EXPECT_EQ(p(L::max()), intervals - 1);
    if constexpr (std::is_floating_point_v<K>) {
      EXPECT_EQ(p(-L::infinity()), 0u);
      EXPECT_EQ(p(L::infinity()), intervals - 1);
      EXPECT_EQ(p(L::quiet_NaN()), intervals - 1);
      EXPECT_EQ(p(-L::quiet_NaN()), intervals - 1);
      // No overflow: zero is the middle, lowest/2 and max/2 the quarters.
      EXPECT_NEAR(double(p(K(0))), intervals / 2.0, 1.0);
      EXPECT_NEAR(double(p(L::max() / 2)), intervals * 0.75, 1.0);
      EXPECT_NEAR(double(p(L::lowest() / 2)), intervals * 0.25, 1.0);
    } else {
      // Equal widths: the key at j / intervals of the range starts interval j.
      using U = ordered_t<K>;
      if (intervals == 16) {
        for (U j = 0; j < 16; ++j) {
          const U at = j << (sizeof(U) * 8 - 4);
          EXPECT_EQ(p(net::from_ordered<K>(at)), j);
          // (Just below: far enough that the double holding the distance tells them apart.)
          if (j) EXPECT_EQ(p(net::from_ordered<K>(at - (U{1} << (sizeof(U) * 4)))), j - 1);
        }
      }
      EXPECT_NEAR(double(p(net::from_ordered<K>(U{1} << (sizeof(U) * 8 - 1)))), intervals / 2.0,
                  1.0);
    }
  }
  if constexpr (std::is_same_v<K, double>) {
    const auto p = net::linear_projection<K>::make(ord(-1e308), ord(1e308), 1000);
    EXPECT_EQ(p(-1e308), 0u);
    EXPECT_EQ(p(1e308), 999u);
    EXPECT_EQ(p(0.0), 500u);
    EXPECT_EQ(p(-0.0), 500u);
    EXPECT_EQ(p(5e307), 750u);
    EXPECT_EQ(p(-5e307), 250u);
    EXPECT_EQ(p(L::lowest()), 0u);
    EXPECT_EQ(p(L::max()), 999u);
  }
}

TYPED_TEST(ApproxMath, LinearModeOnSpecialInputs) {
  using K = TypeParam;
  // min == max: all in interval 0 (descending: the last).
  for (bool desc : {false, true}) {
    std::vector<K> same(100, K(42));
    const auto idx = cpu::interval_of_each(same.data(), same.size(), 50, false, desc);
    for (auto j : idx) ASSERT_EQ(j, desc ? 49u : 0u);
  }
  if constexpr (std::is_floating_point_v<K>) {
    using L = std::numeric_limits<K>;
    // No finite key at all.
    std::vector<K> odd = {L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN()};
    auto idx = cpu::interval_of_each(odd.data(), odd.size(), 10, false, false);
    EXPECT_EQ(idx, (std::vector<std::uint32_t>{9, 0, 9, 9}));
    // Non-finite keys do not change the extremes: 0 and 10 span the intervals.
    std::vector<K> mixed = {K(0), K(10), L::infinity(), -L::infinity(), L::quiet_NaN(), K(5),
                            K(-0.0), K(9.99)};
    idx = cpu::interval_of_each(mixed.data(), mixed.size(), 10, false, false);
    EXPECT_EQ(idx, (std::vector<std::uint32_t>{0, 9, 9, 0, 9, 5, 0, 9}));
    idx = cpu::interval_of_each(mixed.data(), mixed.size(), 10, false, true);
    EXPECT_EQ(idx, (std::vector<std::uint32_t>{9, 0, 0, 9, 0, 4, 9, 0}));
  } else {
    using L = std::numeric_limits<K>;
    std::vector<K> full = {L::max(), L::lowest(), K(L::lowest() + 1), K(L::max() - 1)};
    const auto idx = cpu::interval_of_each(full.data(), full.size(), 1000, false, false);
    EXPECT_EQ(idx, (std::vector<std::uint32_t>{999, 0, 0, 999}));
  }
}

TEST(ApproxMath, InOrderRankIsAPermutation) {
  for (int levels = 1; levels <= 12; ++levels) {
    const std::uint64_t nodes = (std::uint64_t{1} << levels) - 1;
    std::vector<int> seen(nodes + 1, 0);
    for (std::uint64_t node = 1; node <= nodes; ++node) {
      const std::uint64_t r = net::in_order_rank(node, levels);
      ASSERT_GE(r, 1u) << "levels=" << levels << " node=" << node;
      ASSERT_LE(r, nodes) << "levels=" << levels << " node=" << node;
      ++seen[r];
    }
    for (std::uint64_t r = 1; r <= nodes; ++r) ASSERT_EQ(seen[r], 1) << "levels=" << levels;
    EXPECT_EQ(net::in_order_rank(1, levels), std::uint64_t{1} << (levels - 1)) << "the root";
    // Children sit on either side of their parent, leaves have odd ranks.
    for (std::uint64_t node = 1; 2 * node + 1 <= nodes; ++node) {
      ASSERT_LT(net::in_order_rank(2 * node, levels), net::in_order_rank(node, levels));
      ASSERT_GT(net::in_order_rank(2 * node + 1, levels), net::in_order_rank(node, levels));
    }
    for (std::uint64_t node = (nodes + 1) / 2; node <= nodes; ++node)
      ASSERT_EQ(net::in_order_rank(node, levels) % 2, 1u);
  }
}

TEST(ApproxMath, TreeLevels) {
  for (const auto [n, expected] : small_ceil_log2_cases)
    EXPECT_EQ(net::tree_levels(n), expected) << n;
  EXPECT_EQ(net::tree_levels(256), 8);
  EXPECT_EQ(net::tree_levels(257), 9);
  EXPECT_EQ(net::tree_levels(10000), 14);
  EXPECT_EQ(net::tree_levels(1u << 14), 14);
  for (std::uint32_t k = 1; k < 5000; ++k) {
    const int l = net::tree_levels(k);
    ASSERT_GE((std::uint64_t{1} << l) - 1, k - 1u) << "room for the splitters, k=" << k;
    if (l > 0) ASSERT_LT((std::uint64_t{1} << (l - 1)), k) << "no level more than needed";
  }
}

TEST(ApproxMath, DescendCountsSplittersBeforeTheKey) {
  std::mt19937_64 rng(2024);
  for (std::uint32_t intervals = 1; intervals <= 300; intervals += (intervals < 40 ? 1 : 37)) {
    const int levels = net::tree_levels(intervals);
    const std::uint32_t m = intervals - 1;  // splitters
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<int> s(m);
      const int range = trial % 2 ? 10 : 1000;  // many ties, or few
      for (int& v : s) v = static_cast<int>(rng() % range);
      std::sort(s.begin(), s.end());
      // The tree as the device lays it out: node -> the splitter of its in-order rank.
      std::vector<int> tree(std::size_t{1} << levels, std::numeric_limits<int>::max());
      std::vector<bool> present(tree.size(), false);
      for (std::uint64_t node = 1; node < tree.size(); ++node) {
        const std::uint64_t r = net::in_order_rank(node, levels);
        if (r <= m) {
          tree[node] = s[r - 1];
          present[node] = true;
        }
      }
      for (int key = -1; key <= range; ++key) {
        const std::uint32_t got = net::descend(levels, [&](std::uint32_t node) {
          return present[node] && tree[node] < key;
        });
        const auto want = std::lower_bound(s.begin(), s.end(), key) - s.begin();
        ASSERT_EQ(got, static_cast<std::uint32_t>(want))
            << "intervals=" << intervals << " key=" << key << " trial=" << trial;
        const std::uint32_t upper = net::descend(levels, [&](std::uint32_t node) {
          return present[node] && !(key < tree[node]);
        });
        ASSERT_EQ(upper, static_cast<std::uint32_t>(std::upper_bound(s.begin(), s.end(), key) -
                                                    s.begin()));
      }
    }
  }
}

TEST(ApproxMath, SamplePositionsStayInTheirStrata) {
  const index_t sizes[] = {1, 2, 3, 7, 100, 1000, 4097, 65537, 1000003, index_t{1} << 33};
  for (index_t n : sizes) {
    for (std::uint32_t intervals : {1u, 7u, 256u, 1000u, 10000u, 1u << 14}) {
      const index_t count = net::sample_count(n, intervals);
      ASSERT_EQ(count, std::min<index_t>(n, index_t{intervals} * net::samples_per_interval));
      SCOPED_TRACE(::testing::Message() << "n=" << n << " intervals=" << intervals);
      const index_t step = count > 100000 ? count / 50000 : 1;
      index_t previous = 0;
      for (index_t j = 0; j < count; j += step) {
        const index_t pos = net::sample_position(j, count, n);
        const index_t begin = j * n / count, end = (j + 1) * n / count;
        ASSERT_LT(pos, n);
        ASSERT_GE(pos, begin) << "j=" << j;
        ASSERT_LT(pos, end) << "j=" << j;
        if (j > 0) ASSERT_GT(pos, previous) << "j=" << j;
        previous = pos;
      }
    }
  }
  // More samples than keys (strata may be empty): still inside [0, n).
  for (index_t n : {index_t{1}, index_t{5}, index_t{100}}) {
    for (index_t count : {n + 1, 3 * n, 100 * n}) {
      for (index_t j = 0; j < count; ++j) ASSERT_LT(net::sample_position(j, count, n), n);
    }
  }
  // The place inside a stratum varies, so periodic inputs do not alias with the stride.
  const index_t count = 1000, n = count * 64;
  std::vector<int> hits(64, 0);
  for (index_t j = 0; j < count; ++j) ++hits[net::sample_position(j, count, n) - j * 64];
  EXPECT_GT(std::count_if(hits.begin(), hits.end(), [](int h) { return h > 0; }), 40);
}

TEST(ApproxMath, SplitterSamplesAreSpreadEvenly) {
  for (index_t samples : {index_t{1}, index_t{5}, index_t{80}, index_t{2048}, index_t{80000}}) {
    for (std::uint32_t intervals : {2u, 7u, 256u, 10000u}) {
      index_t previous = 0;
      for (std::uint64_t r = 1; r < intervals; ++r) {
        const index_t at = net::splitter_sample(r, samples, intervals);
        ASSERT_LT(at, samples);
        ASSERT_GE(at, previous);
        previous = at;
      }
    }
  }
  EXPECT_EQ(net::splitter_sample(1, 80, 10), 8u);
  EXPECT_EQ(net::splitter_sample(9, 80, 10), 72u);
}

TEST(ApproxMath, DistanceToTheExactPlaces) {
  EXPECT_EQ(net::distance_to(3, 3, 6), 0u);
  EXPECT_EQ(net::distance_to(5, 3, 6), 0u);
  EXPECT_EQ(net::distance_to(6, 3, 6), 1u);
  EXPECT_EQ(net::distance_to(10, 3, 6), 5u);
  EXPECT_EQ(net::distance_to(2, 3, 6), 1u);
  EXPECT_EQ(net::distance_to(0, 3, 6), 3u);
  EXPECT_EQ(net::distance_to(0, 0, 1), 0u);
  EXPECT_EQ(net::distance_to(7, 7, 8), 0u);
  EXPECT_EQ(net::distance_to(0, 7, 8), 7u);
  EXPECT_EQ(net::distance_to(std::uint64_t{1} << 40, 0, 1), std::uint64_t{1} << 40);
}

TEST(ApproxMath, ExactIntervalsAndDirections) {
  EXPECT_EQ(net::exact_intervals(0, 4), 1u);
  EXPECT_EQ(net::exact_intervals(4095, 4), 1u);
  EXPECT_EQ(net::exact_intervals(8192, 4), 2u);
  EXPECT_EQ(net::exact_intervals(8192, 8), 4u);
  EXPECT_EQ(net::exact_intervals(4096 * 100, 4), 100u);
  EXPECT_EQ(net::exact_intervals(4096 * 100, 12), 200u);
  EXPECT_EQ(net::exact_intervals(index_t{4096} << 14, 4), 1u << 14);
  EXPECT_EQ(net::exact_intervals(index_t{1} << 40, 4), net::shared_intervals_max);
  EXPECT_EQ(net::exact_intervals(index_t{1} << 40, 24), net::shared_intervals_max);
  for (index_t n = 0; n < (index_t{1} << 30); n = n * 3 + 1)
    for (int slot : {4, 8, 16, 24}) {
      const auto k = net::exact_intervals(n, slot);
      ASSERT_GE(k, 1u);
      ASSERT_LE(k, net::shared_intervals_max);
    }
  EXPECT_EQ(net::directed_interval(0, 10, false), 0u);
  EXPECT_EQ(net::directed_interval(3, 10, false), 3u);
  EXPECT_EQ(net::directed_interval(0, 10, true), 9u);
  EXPECT_EQ(net::directed_interval(9, 10, true), 0u);
  EXPECT_EQ(net::directed_interval(0, 1, true), 0u);
}

// The sampled mapper exactly as the device runs it (splitter tree, descend, NaN sentinels)
// must give the CPU backend's intervals: both backends promise identical offsets.
template <class K>
std::vector<std::uint32_t> device_sampled_intervals(const std::vector<K>& keys,
                                                    std::uint32_t intervals, bool descending) {
  const index_t n = keys.size();
  const index_t count = net::sample_count(n, intervals);
  std::vector<net::sample<K>> samples(count);
  for (index_t j = 0; j < count; ++j) {
    const index_t pos = net::sample_position(j, count, n);
    samples[j] = {pos, keys[pos], 0};
  }
  std::sort(samples.begin(), samples.end(), net::sample_less<gpusort::less<K>>{});
  const int levels = net::tree_levels(intervals);
  std::vector<K> tree_keys(std::size_t{1} << levels);
  std::vector<index_t> tree_pos(tree_keys.size());
  for (std::uint64_t node = 1; node < tree_keys.size(); ++node) {
    const std::uint64_t r = net::in_order_rank(node, levels);
    if (r < intervals) {
      const net::sample<K> s = samples[net::splitter_sample(r, count, intervals)];
      tree_keys[node] = s.key;
      tree_pos[node] = s.pos;
    } else {
      tree_keys[node] = net::from_ordered<K>(~ordered_t<K>{0});
      tree_pos[node] = ~index_t{0};
    }
  }
  std::vector<std::uint32_t> out(n);
  const gpusort::less<K> lt;
  for (index_t i = 0; i < n; ++i) {
    const std::uint32_t j = net::descend(levels, [&](std::uint32_t node) {
      const K s = tree_keys[node];
      if (lt(s, keys[i])) return true;
      if (lt(keys[i], s)) return false;
      return tree_pos[node] < i;
    });
    out[i] = net::directed_interval(j, intervals, descending);
  }
  return out;
}

TYPED_TEST(ApproxMath, DeviceSplitterTreeMatchesTheCpuIntervals) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{100},
                        std::size_t{4097}, std::size_t{30011}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf,
                                  tools::distribution::all_equal, tools::distribution::few_unique,
                                  tools::distribution::reverse}) {
      for (std::uint32_t intervals : {1u, 2u, 7u, 256u, 1000u, 10000u}) {
        for (bool desc : {false, true}) {
          const std::uint64_t seed = n * 31 + static_cast<int>(d);
          SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                            << " intervals=" << intervals << " desc=" << desc
                                            << " seed=" << seed);
          const std::vector<K> keys = make_input<K>(d, n, seed, true);
          ASSERT_EQ(device_sampled_intervals(keys, intervals, desc),
                    cpu::interval_of_each(keys.data(), n, intervals, true, desc));
        }
      }
    }
  }
}

// top_k's sample: one per 4096 keys, clamped to [4096, 65536], never more than the keys.
TEST(ApproxMath, FocusSampleCount) {
  EXPECT_EQ(net::focus_sample_count(0), 0u);
  EXPECT_EQ(net::focus_sample_count(100), 100u);
  EXPECT_EQ(net::focus_sample_count(4096), 4096u);
  EXPECT_EQ(net::focus_sample_count(index_t{1} << 24), 4096u);
  EXPECT_EQ(net::focus_sample_count(index_t{1} << 26), 16384u);
  EXPECT_EQ(net::focus_sample_count(index_t{1} << 28), 65536u);
  EXPECT_EQ(net::focus_sample_count(index_t{1} << 34), 65536u);
}

// The candidate buffer holds the keys before the upper splitter on random inputs: drawn as
// top_k draws them (sample positions, samples ordered by key then position), the count before
// the splitter is at least k and at most the capacity, for every k up to n.
TEST(ApproxMath, CandidateCapacityHoldsTheSampledCandidates) {
  for (const index_t n : {index_t{5000}, index_t{1} << 16, index_t{1} << 20}) {
    const index_t samples = net::focus_sample_count(n);
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      const std::vector<std::uint32_t> keys =
          tools::generate<std::uint32_t>(tools::distribution::uniform, n, seed);
      std::vector<std::pair<std::uint32_t, index_t>> sample(samples), all(n);
      for (index_t j = 0; j < samples; ++j) {
        const index_t at = net::sample_position(j, samples, n);
        sample[j] = {keys[at], at};
      }
      for (index_t i = 0; i < n; ++i) all[i] = {keys[i], i};
      std::sort(sample.begin(), sample.end());
      std::sort(all.begin(), all.end());
      for (const index_t k : {index_t{1}, index_t{10}, index_t{1000}, n / 8, n / 2, n}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " seed=" << seed << " k=" << k);
        const index_t rank = net::splitter_rank(k, n, samples, false);
        const auto splitter = sample[rank];
        const index_t before = static_cast<index_t>(
            std::lower_bound(all.begin(), all.end(), splitter) - all.begin());
        const index_t capacity = net::candidate_capacity(k, n, samples);
        EXPECT_LE(capacity, n);
        EXPECT_GE(capacity, k);
        if (rank + 1 < samples) {  // else every key is a candidate and the select takes over
          EXPECT_GE(before, k);
          EXPECT_LE(before, capacity);
        }
        // Planned for about k keys, not for n.
        if (k <= n / 8 && n >= (index_t{1} << 20)) EXPECT_LT(capacity, k + n / 16);
      }
    }
  }
}

// The digit a radix select's pass picks, as the device finds it: every bucket asks
// bucket_holds_rank of the keys below it (their exclusive sum). {digit, keys below it}, or
// {buckets, total} where no bucket holds the rank.
namespace {
struct digit_pick {
  std::uint32_t digit = 0;
  std::uint64_t before = 0;
};
template <class Count>
digit_pick pick_digit(const Count* counts, std::uint32_t buckets, std::uint64_t rank) {
  digit_pick found{buckets, 0};
  std::uint64_t before = 0;
  int holders = 0;
  for (std::uint32_t d = 0; d < buckets; ++d) {
    if (net::bucket_holds_rank(before, counts[d], rank)) found = {d, before}, ++holders;
    before += counts[d];
  }
  EXPECT_LE(holders, 1) << "rank " << rank << " in two buckets";
  if (holders == 0) found.before = before;
  return found;
}
}  // namespace

TEST(ApproxMath, OneBucketHoldsEachRank) {
  const std::uint32_t counts[] = {0, 3, 0, 2, 5};
  const std::pair<std::uint64_t, digit_pick> cases[] = {
      {1, {1, 0}}, {3, {1, 0}}, {4, {3, 3}}, {5, {3, 3}}, {6, {4, 5}}, {10, {4, 5}}, {11, {5, 10}}};
  for (const auto& [rank, want] : cases) {
    const digit_pick got = pick_digit(counts, 5, rank);
    EXPECT_EQ(got.digit, want.digit) << "rank " << rank;
    EXPECT_EQ(got.before, want.before) << "rank " << rank;
  }
  EXPECT_FALSE(net::bucket_holds_rank(0, 0, 1));  // an empty bucket holds nothing
  EXPECT_TRUE(net::bucket_holds_rank(2, 1, 3));
  EXPECT_FALSE(net::bucket_holds_rank(2, 1, 2));
}

// The device radix select's digit loop, run on the CPU: for every k its code is the k-th
// smallest select_code (ties as less<K> sees them: every NaN alike), and `below` counts the
// keys before it, on special floats and few distinct keys, in both directions.
TYPED_TEST(ApproxMath, RadixSelectFindsTheKthCode) {
  using K = TypeParam;
  using U = ordered_t<K>;
  constexpr int bits = 8, width = sizeof(U) * 8;
  for (tools::distribution d : {tools::distribution::uniform, tools::distribution::few_unique,
                                tools::distribution::all_equal}) {
    const std::size_t n = 3001;
    const std::vector<K> keys = make_input<K>(d, n, 17 + static_cast<int>(d), true);
    for (bool desc : {false, true}) {
      std::vector<U> codes(n);
      for (std::size_t i = 0; i < n; ++i) codes[i] = net::select_code(keys[i], desc);
      std::vector<U> sorted = codes;
      std::sort(sorted.begin(), sorted.end());
      for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{1500},
                              std::uint64_t{n - 1}, std::uint64_t{n}}) {
        SCOPED_TRACE(::testing::Message() << "dist=" << tools::to_string(d) << " desc=" << desc
                                          << " k=" << k);
        U prefix = 0;
        std::uint64_t below = 0;
        for (int shift = width - bits; shift >= 0; shift -= bits) {
          const U high = shift + bits >= width ? U{0} : static_cast<U>(~U{0} << (shift + bits));
          std::uint64_t counts[1u << bits] = {};
          for (const U c : codes)
            if (((c ^ prefix) & high) == 0) ++counts[(c >> shift) & ((1u << bits) - 1)];
          const digit_pick pick = pick_digit(counts, 1u << bits, k - below);
          ASSERT_LT(pick.digit, 1u << bits);
          prefix |= static_cast<U>(pick.digit) << shift;
          below += pick.before;
        }
        ASSERT_EQ(prefix, sorted[k - 1]);
        ASSERT_EQ(below, static_cast<std::uint64_t>(
                             std::lower_bound(sorted.begin(), sorted.end(), prefix) - sorted.begin()));
      }
    }
  }
}

// The per-row select's digits (index_math/row_select.hpp) cover a code's bits once each, from
// the top, 11 at most; its search (the device's select_row_digit_kernel, step for step: the
// prefix and mask of the digits found, the keys below them, the early end when the bucket
// holds exactly the keys still needed) finds the k-th code, and the gather's two groups
// (below the prefix; equal to it under the mask) hold the k first keys.
TEST(RowSelect, DigitsCoverEveryBitOnceFromTheTop) {
  for (int width : {8, 11, 16, 22, 32, 33, 64}) {
    int next = width;
    for (int pass = 0; pass < net::row_select_passes(width); ++pass) {
      const net::digit_window d = net::row_select_digit(width, pass);
      ASSERT_EQ(d.shift + d.bits, next) << "width " << width << " pass " << pass;
      ASSERT_GE(d.bits, 1);
      ASSERT_LE(d.bits, net::row_digit_bits);
      next = d.shift;
    }
    ASSERT_EQ(next, 0) << "width " << width;
  }
  EXPECT_EQ(net::row_select_passes(16), 2);
  EXPECT_EQ(net::row_select_passes(32), 3);
  EXPECT_EQ(net::row_select_passes(64), 6);
}

TEST(RowSelect, BlocksPerRowAndWhichShapesItTakes) {
  EXPECT_EQ(net::row_select_blocks(1, 262144, 528), 64u);  // capped by 4,096 keys a block
  EXPECT_EQ(net::row_select_blocks(64, 131072, 528), 9u);
  EXPECT_EQ(net::row_select_blocks(512, 32000, 528), 2u);
  EXPECT_EQ(net::row_select_blocks(4096, 2048, 528), 1u);
  EXPECT_EQ(net::row_select_blocks(1, 1, 528), 1u);  // never 0
  for (std::uint64_t rows : {1u, 3u, 64u, 100000u})
    for (std::uint64_t len : {2048u, 4097u, 131072u, 1000003u}) {
      const std::uint64_t b = net::row_select_blocks(rows, len, 528);
      ASSERT_GE(b, 1u);
      ASSERT_TRUE(b == 1 || len / b >= net::row_select_least_block_keys / 2) << rows << " " << len;
    }
  EXPECT_TRUE(net::row_select_fits(2048, 2048));
  EXPECT_FALSE(net::row_select_fits(2047, 1));
  EXPECT_FALSE(net::row_select_fits(1u << 20, 2049));
  EXPECT_FALSE(net::row_select_fits(std::uint64_t{1} << 32, 1));
  // The finishing block's keys a thread: the fewest of 1, 2, 4 that hold k.
  const std::uint64_t t = net::row_finish_threads;
  EXPECT_EQ(net::row_finish_items(1), 1);
  EXPECT_EQ(net::row_finish_items(t), 1);
  EXPECT_EQ(net::row_finish_items(t + 1), 2);
  EXPECT_EQ(net::row_finish_items(2 * t), 2);
  EXPECT_EQ(net::row_finish_items(2 * t + 1), 4);
  for (std::uint64_t k = 1; k <= net::row_select_most_k; ++k) {
    const std::uint64_t items = static_cast<std::uint64_t>(net::row_finish_items(k));
    ASSERT_GE(items * t, k) << k;
    ASSERT_TRUE(items == 1 || (items / 2) * t < k) << k;
  }
}

// The sampled threshold's rank: isqrt exact; the rank covers the expected samples among the
// k first keys with room, stays within the samples or says it would not; the shapes it is
// tried on (LLM decoding rows) and those left to the radix passes.
TEST(RowSelect, SampledThresholdRankAndShapes) {
  for (std::uint64_t x : {0ull, 1ull, 2ull, 3ull, 4ull, 15ull, 16ull, 17ull, 1ull << 40, (1ull << 62) + 5})
    ASSERT_TRUE(net::isqrt(x) * net::isqrt(x) <= x && (net::isqrt(x) + 1) * (net::isqrt(x) + 1) > x) << x;
  for (std::uint64_t n : {8192ull, 32000ull, 131072ull, 262144ull})
    for (std::uint64_t k = 1; k <= 2048; k = k * 3 + 1) {
      const std::uint32_t r = net::sample_rank(k, n);
      const std::uint64_t mu = (k * net::row_samples + n - 1) / n;
      ASSERT_TRUE(r > net::row_samples || r >= mu + 8) << n << " " << k;
      ASSERT_LE(net::sample_rank(k, n), net::sample_rank(k + 1, n));
    }
  EXPECT_TRUE(net::sampled_threshold_fits(131072, 1024, 4096));
  EXPECT_TRUE(net::sampled_threshold_fits(262144, 50, 4096));
  EXPECT_TRUE(net::sampled_threshold_fits(32000, 8, 4096));
  EXPECT_TRUE(net::sampled_threshold_fits(151936, 256, 4096));
  EXPECT_FALSE(net::sampled_threshold_fits(131072, 2048, 4096));  // too many candidates
  EXPECT_FALSE(net::sampled_threshold_fits(4096, 10, 4096));       // rows too short
  EXPECT_FALSE(net::sampled_threshold_fits(1u << 22, 50, 4096));   // a sample stands for 2,048 keys
}

// The sampled threshold's rank on random rows, step for step on the CPU: the samples' rank-th
// code as the threshold gives at least k candidates and no more than a block holds, so the
// radix passes are not needed (on uniform and Gaussian rows, several seeds, both orders).
TYPED_TEST(ApproxMath, SampledThresholdLeavesNoRowToTheRadixPasses) {
  using K = TypeParam;
  using U = net::ordered_t<K>;
  for (std::size_t n : {std::size_t{32000}, std::size_t{131072}})
    for (const auto d : {tools::distribution::uniform, tools::distribution::gaussian})
      for (int seed = 0; seed < 3; ++seed) {
        const std::vector<K> keys = make_input<K>(d, n, 41 + seed + static_cast<int>(d), true);
        for (bool desc : {false, true})
          for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{8}, std::uint64_t{50},
                                  std::uint64_t{256}, std::uint64_t{1024}}) {
            if (!net::sampled_threshold_fits(n, k, 4096)) continue;
            std::vector<U> samples(net::row_samples);
            for (std::uint32_t j = 0; j < net::row_samples; ++j)
              samples[j] = net::select_code(keys[j * n / net::row_samples], desc);
            std::sort(samples.begin(), samples.end());
            const U threshold = samples[net::sample_rank(k, n) - 1];
            std::uint64_t candidates = 0;
            for (const K& key : keys) candidates += net::select_code(key, desc) <= threshold;
            ASSERT_GE(candidates, k) << "n=" << n << " " << tools::to_string(d) << " seed=" << seed
                                     << " desc=" << desc << " k=" << k;
            ASSERT_LE(candidates, 4096u) << "n=" << n << " " << tools::to_string(d)
                                         << " seed=" << seed << " desc=" << desc << " k=" << k;
          }
      }
}

TYPED_TEST(ApproxMath, RowSelectSearchFindsTheKthCode) {
  using K = TypeParam;
  using U = net::ordered_t<K>;
  constexpr int width = sizeof(U) * 8;
  for (const auto d : {tools::distribution::uniform, tools::distribution::few_unique,
                       tools::distribution::all_equal}) {
    const std::size_t n = 5003;
    const std::vector<K> keys = make_input<K>(d, n, 29 + static_cast<int>(d), true);
    for (bool desc : {false, true}) {
      std::vector<U> codes(n);
      for (std::size_t i = 0; i < n; ++i) codes[i] = net::select_code(keys[i], desc);
      std::vector<U> sorted = codes;
      std::sort(sorted.begin(), sorted.end());
      for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{50}, std::uint64_t{2048},
                              std::uint64_t{n}}) {
        SCOPED_TRACE(::testing::Message() << "dist=" << tools::to_string(d) << " desc=" << desc
                                          << " k=" << k);
        U prefix = 0, mask = 0;
        std::uint64_t below = 0;
        bool done = false;
        for (int pass = 0; pass < net::row_select_passes(width) && !done; ++pass) {
          const net::digit_window w = net::row_select_digit(width, pass);
          const std::uint32_t digit_mask = (1u << w.bits) - 1;
          std::vector<std::uint64_t> counts(digit_mask + 1);
          for (const U c : codes)
            if (static_cast<U>(c & mask) == prefix) ++counts[(c >> w.shift) & digit_mask];
          const digit_pick pick = pick_digit(counts.data(), digit_mask + 1, k - below);
          ASSERT_LE(pick.digit, digit_mask);
          prefix = static_cast<U>(prefix | static_cast<U>(static_cast<U>(pick.digit) << w.shift));
          mask = static_cast<U>(mask | static_cast<U>(static_cast<U>(digit_mask) << w.shift));
          below += pick.before;
          done = counts[pick.digit] == k - below;
        }
        std::uint64_t lower = 0, tied = 0;
        for (const U c : codes) {
          lower += static_cast<U>(c & mask) < prefix;
          tied += static_cast<U>(c & mask) == prefix;
        }
        ASSERT_EQ(lower, below);
        ASSERT_GE(below + tied, k);
        ASSERT_LT(below, k);
        if (!done) ASSERT_EQ(prefix, sorted[k - 1]);
        ASSERT_EQ(static_cast<U>(sorted[k - 1] & mask), prefix);
      }
    }
  }
}

// ---- 2. the CPU backend against std::stable_sort ------------------------------------------

struct approx_case {
  std::uint32_t intervals;
  bool sampled;
  bool descending;
};

// Runs cpu::approx_sort on pairs (value = input index) and checks everything; returns the
// offsets.
template <class K>
std::vector<std::uint64_t> check_approx_sort(const std::vector<K>& input,
                                             const std::vector<std::uint64_t>& expect_order,
                                             const approx_case& c) {
  const std::size_t n = input.size();
  std::vector<K> keys(n);
  std::vector<std::uint64_t> index(n), values(n, ~std::uint64_t{0});
  std::iota(index.begin(), index.end(), std::uint64_t{0});
  std::vector<std::uint64_t> offsets(c.intervals + std::size_t{1}, 777);
  cpu::approx_sort(input.data(), keys.data(), index.data(), values.data(), n, offsets.data(),
                   c.intervals, c.sampled, c.descending);
  // (b) offsets
  EXPECT_EQ(offsets[0], 0u);
  EXPECT_EQ(offsets[c.intervals], n);
  for (std::uint32_t j = 0; j < c.intervals; ++j)
    if (offsets[j] > offsets[j + 1]) {
      ADD_FAILURE() << "offsets decrease at " << j << ": " << offsets[j] << " > "
                    << offsets[j + 1];
      return offsets;
    }
  if (offsets[0] != 0 || offsets[c.intervals] != n) return offsets;
  // (a) + (e): every input index once, its key next to it bit for bit: a permutation.
  std::vector<bool> seen(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] >= n || seen[values[i]]) {
      ADD_FAILURE() << "value " << values[i] << " at " << i << " is out of range or repeated";
      return offsets;
    }
    seen[values[i]] = true;
    if (!identical(input[values[i]], keys[i])) {
      ADD_FAILURE() << "value " << values[i] << " left its key: " << keys[i] << " at " << i
                    << " instead of " << input[values[i]];
      return offsets;
    }
  }
  // (c) interval order: the largest key of an interval is not after the smallest of the next.
  const net::directed<gpusort::less<K>> before{{}, c.descending};
  bool have_previous = false;
  K previous_max{};
  std::uint32_t previous_interval = 0;
  for (std::uint32_t j = 0; j < c.intervals; ++j) {
    const std::uint64_t first = offsets[j], end = offsets[j + 1];
    if (first == end) continue;
    const K mn = *std::min_element(keys.begin() + first, keys.begin() + end, before);
    const K mx = *std::max_element(keys.begin() + first, keys.begin() + end, before);
    if (have_previous && before(mn, previous_max)) {
      ADD_FAILURE() << "interval " << j << " holds " << mn << ", before " << previous_max
                    << " of interval " << previous_interval;
      return offsets;
    }
    // CPU backend: inside an interval, keys keep their input order.
    for (std::uint64_t p = first + 1; p < end; ++p)
      if (values[p] <= values[p - 1]) {
        ADD_FAILURE() << "interval " << j << " is not in input order at " << p;
        return offsets;
      }
    have_previous = true;
    previous_max = mx;
    previous_interval = j;
  }
  // (d) sorting every interval gives the exact sort.
  std::vector<std::uint64_t> refined = values;
  for (std::uint32_t j = 0; j < c.intervals; ++j)
    std::stable_sort(refined.begin() + offsets[j], refined.begin() + offsets[j + 1],
                     [&](std::uint64_t a, std::uint64_t b) { return before(input[a], input[b]); });
  for (std::size_t i = 0; i < n; ++i) {
    if (ord(input[refined[i]]) != ord(input[expect_order[i]])) {
      ADD_FAILURE() << "refined sort differs at " << i << ": " << input[refined[i]] << " vs "
                    << input[expect_order[i]];
      return offsets;
    }
  }
  // Equal keys spread over intervals by position (sampled), or share one (linear): the
  // refined order is then the stable one, except that descending sampled intervals take equal
  // keys in reverse position order.
  if (!(c.sampled && c.descending)) {
    for (std::size_t i = 0; i < n; ++i)
      if (refined[i] != expect_order[i]) {
        ADD_FAILURE() << "refined sort is not the stable sort at " << i << ": index "
                      << refined[i] << " vs " << expect_order[i];
        return offsets;
      }
  }
  return offsets;
}

GPUSORT_TYPED_SUITE(CpuApprox, ::testing::Test, key_types);

TYPED_TEST(CpuApprox, MatchesStableSortOnEveryDistribution) {
  using K = TypeParam;
  for (std::size_t n : main_sizes) {
    if (n == 0) continue;  // EmptyInput
    for (tools::distribution d : tools::all_distributions) {
      for (bool specials : {false, true}) {
        if (specials && !std::is_floating_point_v<K>) continue;
        if (!specials && std::is_floating_point_v<K> && n > 10000) continue;  // runtime
        const std::uint64_t seed = n * 7 + static_cast<int>(d) * 3 + specials;
        const std::vector<K> input = make_input<K>(d, n, seed, specials);
        const std::vector<std::uint64_t> asc = reference_order(input, false);
        const std::vector<std::uint64_t> desc = reference_order(input, true);
        for (std::uint32_t intervals : interval_counts) {
          if (n > 10000 && intervals == 1000) continue;  // runtime: 1, 7 and 10000 suffice
          for (bool sampled : {false, true}) {
            std::vector<std::uint64_t> offsets[2];
            for (bool descending : {false, true}) {
              SCOPED_TRACE(::testing::Message()
                           << "n=" << n << " dist=" << tools::to_string(d)
                           << " specials=" << specials << " seed=" << seed
                           << " intervals=" << intervals << " sampled=" << sampled
                           << " desc=" << descending);
              offsets[descending] = check_approx_sort(input, descending ? desc : asc,
                                                      {intervals, sampled, descending});
              if (::testing::Test::HasFailure()) return;
            }
            // Descending mirrors the intervals.
            for (std::uint32_t j = 0; j <= intervals; ++j)
              ASSERT_EQ(offsets[1][j], n - offsets[0][intervals - j])
                  << "n=" << n << " dist=" << tools::to_string(d) << " intervals=" << intervals
                  << " sampled=" << sampled << " j=" << j;
          }
        }
      }
    }
  }
}

// No keys: the offsets all 0, through the backend and the host API. Returns whether all went
// right (it prints what did not).
template <class K>
bool empty_input_ok(std::uint32_t intervals, bool sampled, bool descending) {
  std::vector<std::uint64_t> offsets(intervals + std::size_t{1}, 777);
  cpu::approx_sort(static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                   static_cast<const std::uint64_t*>(nullptr), static_cast<std::uint64_t*>(nullptr),
                   0, offsets.data(), intervals, sampled, descending);
  for (auto o : offsets)
    if (o != 0) {
      std::fprintf(stderr, "cpu::approx_sort: offset %llu, not 0\n",
                   static_cast<unsigned long long>(o));
      return false;
    }
  std::vector<K> keys;
  const gpusort::approx_result r = gpusort::approx_sort(
      keys, {.direction = descending ? gpusort::order::descending : gpusort::order::ascending,
             .intervals = intervals,
             .interval_splitters = sampled ? gpusort::splitters::sampled
                                           : gpusort::splitters::linear});
  if (r.offsets.size() != intervals + std::size_t{1} || r.offsets.back() != 0 ||
      r.largest_interval != 0) {
    std::fprintf(stderr, "gpusort::approx_sort: wrong offsets\n");
    return false;
  }
  return true;
}

// Each case runs in a child process, so that a crash fails this test alone.
TYPED_TEST(CpuApprox, EmptyInput) {
  using K = TypeParam;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (std::uint32_t intervals : interval_counts) {
    for (bool sampled : {false, true}) {
      for (bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=0 intervals=" << intervals
                                          << " sampled=" << sampled << " desc=" << descending);
        EXPECT_EXIT(std::exit(empty_input_ok<K>(intervals, sampled, descending) ? 0 : 1),
                    ::testing::ExitedWithCode(0), "");
      }
    }
  }
}

TYPED_TEST(CpuApprox, KeysOnlyAndTheHostApiGiveTheSameIntervals) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{40009}}) {
    for (tools::distribution d : {tools::distribution::gaussian, tools::distribution::few_unique,
                                  tools::distribution::sorted}) {
      for (auto mode : {gpusort::splitters::linear, gpusort::splitters::sampled}) {
        for (auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
          for (std::uint32_t intervals : {0u, 7u, 1000u}) {
            const std::uint64_t seed = n + static_cast<int>(d);
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " dist=" << tools::to_string(d) << " seed=" << seed
                         << " sampled=" << (mode == gpusort::splitters::sampled)
                         << " desc=" << (dir == gpusort::order::descending)
                         << " intervals=" << intervals);
            const std::vector<K> input = make_input<K>(d, n, seed, true);
            const std::uint32_t k = intervals ? intervals : net::default_intervals;
            const bool sampled = mode == gpusort::splitters::sampled;
            const bool desc = dir == gpusort::order::descending;
            std::vector<K> pairs_keys(n), keys(n);
            std::vector<std::uint32_t> index(n), values(n);
            std::iota(index.begin(), index.end(), 0u);
            std::vector<std::uint64_t> pairs_offsets(k + 1), offsets(k + 1);
            cpu::approx_sort(input.data(), pairs_keys.data(), index.data(), values.data(), n,
                             pairs_offsets.data(), k, sampled, desc);
            cpu::approx_sort(input.data(), keys.data(),
                             static_cast<const gpusort::detail::no_value*>(nullptr),
                             static_cast<gpusort::detail::no_value*>(nullptr), n, offsets.data(),
                             k, sampled, desc);
            ASSERT_EQ(offsets, pairs_offsets);
            for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(identical(keys[i], pairs_keys[i]));
            // The public host overload: same offsets; inside an interval any order.
            std::vector<K> api = input;
            const gpusort::approx_result r = gpusort::approx_sort(
                api, {.direction = dir, .intervals = intervals, .interval_splitters = mode});
            ASSERT_EQ(r.offsets, offsets);
            std::uint64_t largest = 0;
            for (std::uint32_t j = 0; j < k; ++j) {
              largest = std::max(largest, offsets[j + 1] - offsets[j]);
              auto by_bits = [](K a, K b) {
                using U = ordered_t<K>;
                U x, y;
                std::memcpy(&x, &a, sizeof(K));
                std::memcpy(&y, &b, sizeof(K));
                return x < y;
              };
              std::vector<K> got(api.begin() + offsets[j], api.begin() + offsets[j + 1]);
              std::vector<K> want(keys.begin() + offsets[j], keys.begin() + offsets[j + 1]);
              std::sort(got.begin(), got.end(), by_bits);
              std::sort(want.begin(), want.end(), by_bits);
              for (std::size_t i = 0; i < got.size(); ++i)
                ASSERT_TRUE(identical(got[i], want[i])) << "interval " << j;
            }
            EXPECT_EQ(r.largest_interval, largest);
          }
        }
      }
    }
  }
}

// ---- 3. balance of the sampled mode ------------------------------------------------------

TYPED_TEST(CpuApprox, SampledIntervalsStayBalanced) {
  using K = TypeParam;
  constexpr std::uint32_t intervals = 256;
  for (std::size_t n : {std::size_t{1} << 16, std::size_t{1} << 17, std::size_t{1} << 18}) {
    for (tools::distribution d :
         {tools::distribution::all_equal, tools::distribution::zipf,
          tools::distribution::few_unique, tools::distribution::sorted,
          tools::distribution::reverse, tools::distribution::gaussian,
          tools::distribution::organ_pipe}) {
      const std::uint64_t seed = n / 1024 + static_cast<int>(d);
      const std::vector<K> keys = tools::generate<K>(d, n, seed);
      for (bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " seed=" << seed << " desc=" << desc);
        std::vector<std::uint64_t> offsets(intervals + 1);
        cpu::count_intervals(keys.data(), n, intervals, true, desc, offsets.data());
        std::uint64_t largest = 0, smallest = n;
        for (std::uint32_t j = 0; j < intervals; ++j) {
          largest = std::max(largest, offsets[j + 1] - offsets[j]);
          smallest = std::min(smallest, offsets[j + 1] - offsets[j]);
        }
        // 8 samples per interval: on inputs in random order an interval's size varies like a
        // gamma(8) variable (3x the mean happens about once in 10^5 intervals; this test sees
        // 2 * 10^4 of them, and few_unique n=65536 seed=70 has one of 777 = 3.03 n / 256).
        EXPECT_LE(largest, 4 * n / intervals);
        if (d == tools::distribution::all_equal || d == tools::distribution::sorted) {
          // Stratified samples: every boundary lies within one stratum (n / 8 intervals) of
          // its ideal place.
          const std::uint64_t slack = n / (intervals * net::samples_per_interval) + 2;
          EXPECT_LE(largest, n / intervals + slack);
          EXPECT_GE(smallest, n / intervals - slack);
        }
        if (d == tools::distribution::all_equal) {
          // The linear mode puts everything in one interval.
          std::vector<std::uint64_t> linear(intervals + 1);
          cpu::count_intervals(keys.data(), n, intervals, false, desc, linear.data());
          const std::uint32_t where = desc ? intervals - 1 : 0;
          EXPECT_EQ(linear[where + 1] - linear[where], n);
        }
      }
    }
  }
}

// ---- 4. top_k ------------------------------------------------------------------------------

std::vector<std::uint64_t> top_k_counts(std::size_t n) {
  std::vector<std::uint64_t> ks;
  for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2},
                          std::uint64_t{1000}, std::uint64_t(n ? n - 1 : 0), std::uint64_t(n)})
    if (k <= n && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  return ks;
}

TYPED_TEST(CpuApprox, TopKIsThePrefixOfTheStableSort) {
  using K = TypeParam;
  struct mode {
    std::uint32_t intervals;
    bool sampled;
  };
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1000},
                        std::size_t{12007}}) {
    const mode modes[] = {{1, false},  {7, false}, {1000, false},
                          {7, true},   {256, true}, {net::exact_intervals(n, sizeof(K)), true}};
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::gaussian,
                                  tools::distribution::zipf, tools::distribution::all_equal,
                                  tools::distribution::few_unique, tools::distribution::reverse}) {
      const std::uint64_t seed = n * 5 + static_cast<int>(d);
      const std::vector<K> input = make_input<K>(d, n, seed, true);
      std::vector<std::uint64_t> index(n);
      std::iota(index.begin(), index.end(), std::uint64_t{0});
      for (bool desc : {false, true}) {
        const std::vector<std::uint64_t> order = reference_order(input, desc);
        for (std::uint64_t k : top_k_counts(n)) {
          SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                            << " seed=" << seed << " desc=" << desc
                                            << " k=" << k);
          std::vector<K> want(k);
          for (std::uint64_t i = 0; i < k; ++i) want[i] = input[order[i]];
          // The public host overload (default options: sampled intervals chosen from n).
          const std::vector<K> got = gpusort::top_k(
              input, k, {.direction = desc ? gpusort::order::descending : gpusort::order::ascending});
          ASSERT_TRUE(same_bits(got, want)) << "gpusort::top_k";
          for (const mode& m : modes) {
            SCOPED_TRACE(::testing::Message() << "intervals=" << m.intervals
                                              << " sampled=" << m.sampled);
            std::vector<K> keys(k);
            std::vector<std::uint64_t> values(k, ~std::uint64_t{0});
            cpu::top_k(input.data(), index.data(), n, keys.data(), values.data(), k, m.intervals,
                       m.sampled, desc);
            ASSERT_TRUE(same_bits(keys, want));
            std::vector<bool> seen(n, false);
            for (std::uint64_t i = 0; i < k; ++i) {
              ASSERT_LT(values[i], n);
              ASSERT_FALSE(seen[values[i]]) << "value " << values[i] << " twice";
              seen[values[i]] = true;
              ASSERT_TRUE(identical(input[values[i]], keys[i])) << "value left its key at " << i;
              // The candidates are a prefix of the stable order except for descending sampled
              // intervals, which take equal keys in reverse position order.
              if (!(m.sampled && desc)) ASSERT_EQ(values[i], order[i]) << "at " << i;
            }
          }
        }
      }
    }
  }
}

// select_k: the k first keys of the direction as a set (sorted here before comparing, since no
// order is promised) and the k-th key, on every key type, hostile distributions and sizes.
TYPED_TEST(CpuApprox, SelectKIsTheFirstKAsASetAndTheKthKey) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1025},
                        std::size_t{12007}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf,
                                  tools::distribution::all_equal, tools::distribution::few_unique}) {
      const std::vector<K> input = make_input<K>(d, n, n * 3 + static_cast<int>(d), true);
      for (bool desc : {false, true}) {
        const std::vector<std::uint64_t> order = reference_order(input, desc);
        const gpusort::options opt{.direction = desc ? gpusort::order::descending
                                                     : gpusort::order::ascending};
        for (std::uint64_t k : top_k_counts(n)) {
          SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                            << " desc=" << desc << " k=" << k);
          std::vector<K> want(k);
          for (std::uint64_t i = 0; i < k; ++i) want[i] = input[order[i]];
          gpusort::selection<K> got = gpusort::select_k(input, k, opt);
          ASSERT_EQ(got.keys.size(), k);
          std::vector<K> as_set = reference_sort(got.keys, desc, nans_largest(desc));
          ASSERT_TRUE(same_bits(as_set, want));
          // The k-th key up to ties: NaNs of different payloads are one key to the sort, and
          // the device's unstable sort of the selection may put any of them last (the CPU's
          // stable one puts the last in position order last).
          if (k) ASSERT_EQ(+ord(got.kth), +ord(want[k - 1])) << "the k-th key";
        }
      }
    }
  }
}

// Every row's k first keys in the direction, as the stable sort of that row gives them: the
// public host overload (the CPU path without a GPU; no special floats, whose ties an unstable
// GPU sort may order otherwise) and the backend with values that point back at their keys.
TYPED_TEST(CpuApprox, TopKRowsAreEachRowsStablePrefix) {
  using K = TypeParam;
  for (const matrix_shape sh : top_k_row_shapes) {
    const std::size_t n = sh.rows * sh.row_length;
    const std::vector<std::uint32_t> column = column_indices(sh);
    for (bool specials : {false, true}) {
      const std::vector<K> input = make_input<K>(tools::distribution::few_unique, n, n + 3, specials);
      for (bool desc : {false, true}) {
        const gpusort::options opt{.direction = desc ? gpusort::order::descending
                                                     : gpusort::order::ascending};
        for (std::size_t k : {std::size_t{0}, std::size_t{1}, sh.row_length / 2, sh.row_length}) {
          SCOPED_TRACE(::testing::Message() << "rows=" << sh.rows << " row_length=" << sh.row_length
                                            << " specials=" << specials << " desc=" << desc
                                            << " k=" << k);
          std::vector<K> want(sh.rows * k);
          for (std::size_t r = 0; r < sh.rows; ++r) {
            const std::vector<K> row(input.begin() + r * sh.row_length,
                                     input.begin() + (r + 1) * sh.row_length);
            const std::vector<std::uint64_t> order = reference_order(row, desc);
            for (std::size_t i = 0; i < k; ++i) want[r * k + i] = row[order[i]];
          }
          if (!specials)
            ASSERT_TRUE(same_bits(gpusort::top_k_rows(input, sh.row_length, k, opt), want));
          std::vector<K> keys(sh.rows * k);
          std::vector<std::uint32_t> values(sh.rows * k, ~0u);
          cpu::top_k_rows(input.data(), column.data(), sh.rows, sh.row_length, keys.data(),
                          values.data(), k, desc);
          ASSERT_TRUE(same_bits(keys, want));
          for (std::size_t r = 0; r < sh.rows; ++r)
            for (std::size_t i = 0; i < k; ++i) {
              const std::uint32_t c = values[r * k + i];
              ASSERT_LT(c, sh.row_length);
              ASSERT_TRUE(identical(input[r * sh.row_length + c], keys[r * k + i])) << r << "," << i;
            }
        }
      }
    }
  }
}

TEST(CpuApproxErrors, TopKRowsRejectsBadShapes) {
  const std::vector<std::int32_t> keys = {5, 1, 4, 2, 8, 3};
  EXPECT_THROW(gpusort::top_k_rows(keys, 4, 1), gpusort::error);   // 6 keys are not rows of 4
  EXPECT_THROW(gpusort::top_k_rows(keys, 3, 4), gpusort::error);   // k above the row length
  EXPECT_THROW(gpusort::top_k_rows(keys, 0, 0), gpusort::error);   // rows of no keys, 6 keys
  EXPECT_TRUE(gpusort::top_k_rows(std::vector<std::int32_t>{}, 0, 0).empty());
  EXPECT_EQ(gpusort::top_k_rows(keys, 3, 2), (std::vector<std::int32_t>{1, 4, 2, 3}));
  EXPECT_EQ(gpusort::top_k_rows(keys, 2, 1, {.direction = gpusort::order::descending}),
            (std::vector<std::int32_t>{5, 4, 8}));
}

// ---- 5. quality -----------------------------------------------------------------------------

TEST(CpuApproxQuality, HandMadeExamples) {
  auto measure = [](std::vector<std::uint32_t> keys, std::vector<std::uint64_t> offsets,
                    bool desc = false) {
    return gpusort::measure_approx(
        keys, offsets,
        {.direction = desc ? gpusort::order::descending : gpusort::order::ascending,
         .intervals = static_cast<std::uint32_t>(offsets.size() - 1)});
  };
  // [3, 1, 2] in one interval: 3 belongs at 2, 1 at 0, 2 at 1.
  gpusort::approx_quality q = measure({3, 1, 2}, {0, 3});
  EXPECT_EQ(q.largest_interval, 3u);
  EXPECT_EQ(q.out_of_place, 3u);
  EXPECT_DOUBLE_EQ(q.mean_distance, 4.0 / 3.0);
  EXPECT_EQ(q.max_distance, 2u);
  // Sorted: nothing out of place.
  q = measure({1, 2, 3, 4}, {0, 2, 4});
  EXPECT_EQ(q.largest_interval, 2u);
  EXPECT_EQ(q.out_of_place, 0u);
  EXPECT_EQ(q.mean_distance, 0.0);
  EXPECT_EQ(q.max_distance, 0u);
  // Two intervals, each reversed.
  q = measure({2, 1, 4, 3}, {0, 2, 4});
  EXPECT_EQ(q.largest_interval, 2u);
  EXPECT_EQ(q.out_of_place, 4u);
  EXPECT_DOUBLE_EQ(q.mean_distance, 1.0);
  EXPECT_EQ(q.max_distance, 1u);
  // Equal keys anywhere in their range are in place: [1, 3, 3, 2] sorts to [1, 2, 3, 3]; the
  // first 3 is one early of its range [2, 4), the second inside, 2 two late.
  q = measure({1, 3, 3, 2}, {0, 4});
  EXPECT_EQ(q.out_of_place, 2u);
  EXPECT_DOUBLE_EQ(q.mean_distance, 3.0 / 4.0);
  EXPECT_EQ(q.max_distance, 2u);
  q = measure({5, 5, 5, 5, 5}, {0, 5});
  EXPECT_EQ(q.out_of_place, 0u);
  EXPECT_EQ(q.max_distance, 0u);
  q = measure({2, 1, 1, 2}, {0, 4});  // 2 at 0 (range [2, 4)): 2; 1 at 2 (range [0, 2)): 1
  EXPECT_EQ(q.out_of_place, 2u);
  EXPECT_DOUBLE_EQ(q.mean_distance, 3.0 / 4.0);
  EXPECT_EQ(q.max_distance, 2u);
  // Descending: [1, 2] should be [2, 1].
  q = measure({1, 2}, {0, 2}, true);
  EXPECT_EQ(q.out_of_place, 2u);
  EXPECT_EQ(q.max_distance, 1u);
  q = measure({2, 1}, {0, 2}, true);
  EXPECT_EQ(q.out_of_place, 0u);
  // Empty intervals and an empty input.
  q = measure({3, 1, 2}, {0, 0, 3, 3});
  EXPECT_EQ(q.largest_interval, 3u);
  EXPECT_EQ(q.out_of_place, 3u);
  EXPECT_EQ(q.max_distance, 2u);
  q = measure({}, {0, 0});
  EXPECT_EQ(q.largest_interval, 0u);
  EXPECT_EQ(q.out_of_place, 0u);
  EXPECT_EQ(q.mean_distance, 0.0);
  // Floats in the total order: -0.0 before +0.0, NaN last.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  gpusort::approx_quality f =
      gpusort::measure_approx(std::vector<float>{0.0f, -0.0f, nan, 1.0f}, {0, 4}, {.intervals = 1});
  EXPECT_EQ(f.out_of_place, 4u);  // sorted: -0.0, 0.0, 1.0, NaN
  EXPECT_EQ(f.max_distance, 1u);
  f = gpusort::measure_approx(std::vector<float>{-0.0f, 0.0f, 1.0f, -nan, nan}, {0, 5},
                              {.intervals = 1});
  EXPECT_EQ(f.out_of_place, 0u);
  // The direct CPU backend gives the same words.
  const std::uint32_t keys[] = {3, 1, 2};
  const std::uint64_t offsets[] = {0, 3};
  unsigned long long words[4];
  cpu::approx_quality(keys, 3, offsets, 1, false, words);
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(words[1], 3u);
  EXPECT_EQ(words[2], 4u);
  EXPECT_EQ(words[3], 2u);
}

// Brute force over the whole array: a key's exact places are the range of its equal keys in
// the fully sorted array (the same as inside its interval when the intervals are in order).
template <class K>
void brute_force_quality(const std::vector<K>& keys, bool desc, unsigned long long (&w)[4]) {
  const net::directed<gpusort::less<K>> before{{}, desc};
  std::vector<K> sorted = keys;
  std::sort(sorted.begin(), sorted.end(), before);
  w[1] = w[2] = w[3] = 0;
  for (std::size_t p = 0; p < keys.size(); ++p) {
    const auto r = std::equal_range(sorted.begin(), sorted.end(), keys[p], before);
    const std::uint64_t d = net::distance_to(p, r.first - sorted.begin(), r.second - sorted.begin());
    w[1] += d > 0;
    w[2] += d;
    w[3] = std::max<unsigned long long>(w[3], d);
  }
}

TYPED_TEST(CpuApprox, QualityMatchesBruteForce) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{5003}, std::size_t{16411}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf,
                                  tools::distribution::few_unique, tools::distribution::reverse}) {
      for (auto mode : {gpusort::splitters::linear, gpusort::splitters::sampled}) {
        for (std::uint32_t intervals : {1u, 7u, 1000u}) {
          for (bool desc : {false, true}) {
            const std::uint64_t seed = n * 3 + static_cast<int>(d);
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " dist=" << tools::to_string(d) << " seed=" << seed
                         << " sampled=" << (mode == gpusort::splitters::sampled)
                         << " intervals=" << intervals << " desc=" << desc);
            const gpusort::options opt{
                .direction = desc ? gpusort::order::descending : gpusort::order::ascending,
                .intervals = intervals,
                .interval_splitters = mode};
            std::vector<K> keys = make_input<K>(d, n, seed, true);
            const gpusort::approx_result r = gpusort::approx_sort(keys, opt);
            const gpusort::approx_quality q = gpusort::measure_approx(keys, r.offsets, opt);
            unsigned long long w[4];
            brute_force_quality(keys, desc, w);
            EXPECT_EQ(q.largest_interval, r.largest_interval);
            EXPECT_EQ(q.out_of_place, w[1]);
            EXPECT_DOUBLE_EQ(q.mean_distance, double(w[2]) / double(n));
            EXPECT_EQ(q.max_distance, w[3]);
            EXPECT_LT(q.max_distance, q.largest_interval);
            EXPECT_LE(q.out_of_place, n);
            if (intervals == 1) {
              EXPECT_EQ(q.largest_interval, n);
            }
            // The exact sort with the same offsets: nothing out of place.
            const std::vector<K> exact = reference_sort(keys, desc, nans_largest(desc));
            const gpusort::approx_quality e = gpusort::measure_approx(exact, r.offsets, opt);
            EXPECT_EQ(e.out_of_place, 0u);
            EXPECT_EQ(e.max_distance, 0u);
            EXPECT_EQ(e.mean_distance, 0.0);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
}

// ---- 6. errors --------------------------------------------------------------------------------

TEST(CpuApproxErrors, TooManyIntervalsThrowsAndKeepsTheInput) {
  const std::vector<float> input = tools::generate<float>(tools::distribution::uniform, 1000, 1);
  for (auto mode : {gpusort::splitters::linear, gpusort::splitters::sampled}) {
    std::vector<float> keys = input;
    EXPECT_THROW(gpusort::approx_sort(keys, {.intervals = (1u << 24) + 1, .interval_splitters = mode}),
                 gpusort::error);
    EXPECT_TRUE(same_bits(keys, input));
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(identical(keys[i], input[i]));
    EXPECT_THROW(gpusort::approx_sort(keys, {.intervals = ~0u, .interval_splitters = mode}),
                 gpusort::error);
    EXPECT_TRUE(same_bits(keys, input));
  }
  std::vector<float> keys = input;
  EXPECT_THROW(
      gpusort::approx_sort(keys, {.interval_splitters = static_cast<gpusort::splitters>(7)}),
      gpusort::error);
  EXPECT_TRUE(same_bits(keys, input));
  EXPECT_THROW(gpusort::top_k(input, 10, {.intervals = (1u << 24) + 1}), gpusort::error);
  const std::vector<std::uint64_t> offsets = {0, 1000};
  EXPECT_THROW(gpusort::measure_approx(input, offsets, {.intervals = (1u << 24) + 1}),
               gpusort::error);
}

TEST(CpuApproxErrors, TheLargestIntervalCountWorks) {
  // 2^24 intervals over [0, 2^32): 256 values each, so the key k goes to interval k >> 8.
  std::vector<std::uint32_t> keys = {0x500, 0x100, 0x4ff, 0x1ff, 0x300, 0, 0xffffffffu};
  const gpusort::approx_result r = gpusort::approx_sort(keys, {.intervals = 1u << 24});
  ASSERT_EQ(r.offsets.size(), (std::size_t{1} << 24) + 1);
  EXPECT_EQ(r.offsets.front(), 0u);
  EXPECT_EQ(r.offsets[1], 1u);
  EXPECT_EQ(r.offsets[2], 3u);
  EXPECT_EQ(r.offsets[3], 3u);
  EXPECT_EQ(r.offsets[4], 4u);
  EXPECT_EQ(r.offsets[5], 5u);
  EXPECT_EQ(r.offsets[6], 6u);
  EXPECT_EQ(r.offsets[(1u << 24) - 1], 6u);
  EXPECT_EQ(r.offsets.back(), 7u);
  EXPECT_EQ(r.largest_interval, 2u);
  EXPECT_EQ(keys[0], 0u);
  EXPECT_EQ(keys[3], 0x300u);
  EXPECT_EQ(keys[4], 0x4ffu);
  EXPECT_EQ(keys[5], 0x500u);
  EXPECT_EQ(keys[6], 0xffffffffu);
}

TEST(CpuApproxErrors, TopKWithKAboveNThrows) {
  const std::vector<std::int64_t> keys = {3, 1, 2};
  EXPECT_THROW(gpusort::top_k(keys, 4), gpusort::error);
  EXPECT_THROW(gpusort::top_k(std::vector<std::int64_t>{}, 1), gpusort::error);
  EXPECT_EQ(gpusort::top_k(keys, 3), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(gpusort::top_k(keys, 2, {.direction = gpusort::order::descending}),
            (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(gpusort::top_k(std::vector<std::int64_t>{}, 0).empty());
  EXPECT_THROW(gpusort::select_k(keys, 4), gpusort::error);
  EXPECT_EQ(gpusort::select_k(keys, 2).kth, 2);
  EXPECT_EQ(gpusort::select_k(keys, 1, {.direction = gpusort::order::descending}).kth, 3);
  EXPECT_TRUE(gpusort::select_k(keys, 0).keys.empty());
}

TEST(CpuApproxErrors, OffsetsThatDoNotMatchThrow) {
  const std::vector<double> keys = {1.0, 2.0, 3.0};
  EXPECT_THROW(gpusort::measure_approx(keys, {0, 3}, {.intervals = 2}), gpusort::error);
  EXPECT_THROW(gpusort::measure_approx(keys, {0, 2}, {.intervals = 1}), gpusort::error);
  EXPECT_THROW(gpusort::measure_approx(keys, {0, 3}), gpusort::error) << "default: 10,000";
  EXPECT_NO_THROW(gpusort::measure_approx(keys, {0, 1, 3}, {.intervals = 2}));
}
