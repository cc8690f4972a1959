// The device approximate sort against the CPU backend (same intervals, so identical offsets)
// and std::stable_sort: every key type, awkward sizes, every distribution, both orders, both
// splitter modes, shared and global counters, pairs; approx_refine, top_k and top_k_rows as
// exact sorts; the quality measure against the CPU's; graph capture; bad input; n >= 2^31.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "device_buffer.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/detail/core/half_keys.hpp"
#include "gpusort/detail/device/radix_select.cuh"
#include "gpusort/detail/index_math/row_select.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

GPUSORT_TYPED_SUITE(GpuApprox, GpuTest, key_types);

gpusort::options approx_options(bool sampled, bool descending, std::uint32_t intervals = 0) {
  return {.direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .intervals = intervals,
          .interval_splitters = sampled ? gpusort::splitters::sampled : gpusort::splitters::linear};
}

template <class T>
struct poisoned_array {
  T* ptr = nullptr;
  explicit poisoned_array(std::size_t count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), sizeof(T) * count + 16) == cudaSuccess)
      cudaMemset(ptr, 0xA5, sizeof(T) * count + 16);
  }
  ~poisoned_array() { cudaFree(ptr); }
  std::vector<T> to_host(std::size_t count) const {
    std::vector<T> h(count);
    cudaMemcpy(h.data(), ptr, sizeof(T) * count, cudaMemcpyDeviceToHost);
    return h;
  }
  // The 16 poisoned bytes after the first `count` elements are still poisoned.
  bool tail_intact(std::size_t count) const {
    unsigned char tail[16];
    cudaMemcpy(tail, ptr + count, sizeof(tail), cudaMemcpyDeviceToHost);
    for (unsigned char c : tail)
      if (c != 0xA5) return false;
    return true;
  }
};

// Each interval's keys, sorted: equal for two outputs with the same offsets when they hold
// the same keys in every interval.
template <class K>
std::vector<K> sorted_within(std::vector<K> keys, const std::vector<std::uint64_t>& offsets) {
  for (std::size_t j = 0; j + 1 < offsets.size(); ++j)
    std::sort(keys.begin() + offsets[j], keys.begin() + offsets[j + 1], gpusort::less<K>{});
  return keys;
}

// Runs the core approx sort (keys, or pairs with value = index) with poisoned output and
// workspace; compares offsets and intervals with the CPU backend.
template <class K, class V = gpusort::detail::no_value>
void check_approx(const std::vector<K>& keys, const gpusort::options& opt) {
  constexpr bool pairs = !std::is_same_v<V, gpusort::detail::no_value>;
  const std::size_t n = keys.size();
  const std::uint32_t intervals = gpusort::approx_intervals(opt);
  std::vector<V> values(pairs ? n : 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::memset(&values[i], 0x3C, sizeof(V));
    std::memcpy(&values[i], &i, std::min(sizeof(V), sizeof(i)));
  }
  guarded_buffer<K> in(keys);
  guarded_buffer<V> in_values(values);
  poisoned_array<K> out(n);
  poisoned_array<V> out_values(values.size());
  poisoned_array<std::uint64_t> offsets(intervals + 1);
  std::size_t bytes = 0;
  auto call = [&](void* t) {
    if constexpr (pairs)
      return gpusort::approx_sort_pairs(t, bytes, in.data(), out.ptr, in_values.data(),
                                        out_values.ptr, n, offsets.ptr, opt);
    else
      return gpusort::approx_sort_keys(t, bytes, in.data(), out.ptr, n, offsets.ptr, opt);
  };
  ASSERT_EQ(call(nullptr), cudaSuccess);
  poisoned_array<char> temp(bytes);
  ASSERT_EQ(call(temp.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint64_t> got_offsets = offsets.to_host(intervals + 1);
  const std::vector<K> got = out.to_host(n);

  std::vector<K> want(n);
  std::vector<std::uint64_t> want_offsets(intervals + 1);
  gpusort::detail::cpu_approx_sort<K, gpusort::detail::no_value>(
      keys.data(), want.data(), nullptr, nullptr, n, want_offsets.data(), opt);
  ASSERT_EQ(got_offsets, want_offsets);
  ASSERT_TRUE(same_bits(sorted_within(got, got_offsets), sorted_within(want, want_offsets)));
  if constexpr (pairs)
    ASSERT_TRUE(values_follow_keys(keys, got, out_values.to_host(n),
                                   [&](std::uint64_t i) { return values[i]; }));
}

TYPED_TEST(GpuApprox, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      for (bool sampled : {false, true}) {
        const bool descending = (n + static_cast<int>(d)) % 2;
        const std::uint64_t seed = 500 + n * 3 + static_cast<int>(d);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " sampled=" << sampled << " desc=" << descending
                                          << " seed=" << seed);
        std::vector<K> keys = tools::generate<K>(d, n, seed);
        scatter_special_values(keys, seed);
        check_approx(keys, approx_options(sampled, descending));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuApprox, IntervalCountsAndBothCounterPaths) {
  using K = TypeParam;
  // 1 (everything in one interval), small, the shared limit, and above it (global atomics).
  for (std::uint32_t intervals : {1u, 7u, 16384u, 70001u}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf}) {
      for (bool sampled : {false, true}) {
        const std::size_t n = 1000003;
        SCOPED_TRACE(::testing::Message() << "intervals=" << intervals << " dist="
                                          << tools::to_string(d) << " sampled=" << sampled);
        check_approx(tools::generate<K>(d, n, intervals), approx_options(sampled, intervals == 7, intervals));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuApprox, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{7919}, std::size_t{1000003}}) {
    for (bool sampled : {false, true}) {
      const auto keys = tools::generate<K>(tools::distribution::gaussian, n, n);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " sampled=" << sampled);
      check_approx<K, std::uint32_t>(keys, approx_options(sampled, false));
      check_approx<K, std::uint64_t>(keys, approx_options(sampled, true, 70001));
      check_approx<K, gpusort::detail::payload<16>>(keys, approx_options(sampled, false, 333));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// approx_refine through gpusort::sort_keys / sort_pairs: an exact sort.
TYPED_TEST(GpuApprox, RefineSortsExactly) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 20)) {
    if (n > 2000 && n % 3 != 0 && n != (1u << 20) + 1) continue;  // a sample of the large sizes
    for (tools::distribution d : tools::all_distributions) {
      const bool descending = (n + static_cast<int>(d)) % 2;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                        << " desc=" << descending);
      std::vector<K> keys = tools::generate<K>(d, n, n + 17);
      scatter_special_values(keys, n);
      gpusort::options opt{.algo = gpusort::algorithm::approx_refine,
                           .direction = descending ? gpusort::order::descending
                                                   : gpusort::order::ascending};
      guarded_buffer<K> dk(keys);
      std::size_t bytes = 0;
      ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, dk.data(), n, opt), cudaSuccess);
      poisoned_array<char> temp(bytes);
      ASSERT_EQ(gpusort::sort_keys(temp.ptr, bytes, dk.data(), n, opt), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_TRUE(same_bits(dk.to_host(), reference_sort(keys, descending)));
      ASSERT_TRUE(dk.guard_intact());
    }
  }
  // Pairs, and explicit linear intervals (uneven on gaussian keys: long segments).
  const std::size_t n = 3000017;
  const auto keys = tools::generate<K>(tools::distribution::gaussian, n, 5);
  std::vector<std::uint64_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = i;
  for (bool linear : {false, true}) {
    gpusort::options opt{.algo = gpusort::algorithm::approx_refine,
                         .intervals = linear ? 300u : 0u};
    std::vector<K> k = keys;
    std::vector<std::uint64_t> v = values;
    gpusort::sort(k, v, opt);
    EXPECT_TRUE(same_bits(k, reference_sort(keys)));
    EXPECT_TRUE(values_follow_keys(keys, k, v, [](std::uint64_t i) { return i; }));
  }
}

TYPED_TEST(GpuApprox, TopKIsTheSortedPrefix) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{97}, std::size_t{65537}, std::size_t{3000017}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf,
                                  tools::distribution::all_equal, tools::distribution::reverse}) {
      std::vector<K> keys = tools::generate<K>(d, n, n + 3);
      scatter_special_values(keys, n);
      guarded_buffer<K> dk(keys);
      for (bool descending : {false, true}) {
        const std::vector<K> sorted = reference_sort(keys, descending, nans_largest(descending));
        for (std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, n - 1, n}) {
          if (k > n) continue;
          for (bool linear : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                              << " desc=" << descending << " k=" << k
                                              << " linear=" << linear);
            gpusort::options opt = approx_options(!linear, descending, linear ? 1000 : 0);
            guarded_buffer<K> out{std::vector<K>(k)};
            const K kth = gpusort::top_k(std::span<const K>(dk.data(), n),
                                         std::span<K>(out.data(), k), opt);
            const std::vector<K> got = out.to_host();
            ASSERT_TRUE(same_bits(got, std::vector<K>(sorted.begin(), sorted.begin() + k)));
            ASSERT_TRUE(out.guard_intact());
            if (k) ASSERT_TRUE(same_bits(std::vector<K>{kth}, std::vector<K>{sorted[k - 1]}));
          }
        }
      }
      ASSERT_TRUE(same_bits(dk.to_host(), keys)) << "top_k must not touch its input";
    }
  }
}

// top_k's splitter is the sample of one rank in (code, index) order, found by a radix select
// and a pick among equal codes (select_ranked_index), not a sort. A wrong pick would only
// slow top_k (its fallback repairs the count), so it is checked here against a stable sort:
// every rank of small arrays, the ends and random ranks of large ones, with ties (few
// distinct codes, all equal) and codes spanning the top digit.
template <class U>
void check_ranked_index(std::size_t count, unsigned distinct, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<U> codes(count);
  for (U& c : codes) {
    const std::uint64_t bits = rng();
    c = distinct ? static_cast<U>(bits % distinct * (~U{0} / distinct)) : static_cast<U>(bits);
  }
  std::vector<std::uint32_t> order(count);
  for (std::uint32_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return codes[a] < codes[b]; });
  std::vector<std::size_t> ranks;
  if (count <= 70)
    for (std::size_t r = 0; r < count; ++r) ranks.push_back(r);
  else
    ranks = {0, 1, count / 2, count - 2, count - 1, rng() % count, rng() % count};
  guarded_buffer<U> device_codes(codes);
  poisoned_array<std::uint32_t> chosen(1);
  for (std::size_t rank : ranks) {
    SCOPED_TRACE(::testing::Message() << "count=" << count << " distinct=" << distinct
                                      << " rank=" << rank << " bits=" << sizeof(U) * 8);
    CUDA_OK(cudaMemset(chosen.ptr, 0xA5, sizeof(std::uint32_t)));
    CUDA_OK(gpusort::detail::device::select_ranked_index(device_codes.data(), count, rank,
                                                         chosen.ptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    ASSERT_EQ(chosen.to_host(1)[0], order[rank]);
  }
  ASSERT_TRUE(device_codes.guard_intact());
}

TEST(GpuApproxSplitter, RankedIndexIsTheStableSortsAtThatRank) {
  GPUSORT_REQUIRE_GPU();
  for (std::size_t count : {1u, 2u, 31u, 32u, 33u, 70u, 4095u, 4096u, 65536u})
    for (unsigned distinct : {0u, 1u, 3u, 1000u}) {
      check_ranked_index<std::uint32_t>(count, distinct, count * 7 + distinct);
      check_ranked_index<std::uint64_t>(count, distinct, count * 11 + distinct);
    }
}

// top_k's gather reads 16-byte vectors where the keys are so aligned, and key by key where
// they are not: views one to three keys into a buffer take the second path, the whole buffer
// the first, with a partial last tile either way. The keys are few distinct values (both
// zeros and NaNs among the floats), so the bound's key has many equals on both sides of its
// position, which the exact test (codes and positions) decides.
TYPED_TEST(GpuApprox, TopKOfUnalignedViewsAndKeysTiedWithTheBound) {
  using K = TypeParam;
  const std::size_t total = (std::size_t{1} << 20) + 13;
  std::vector<K> keys(total);
  std::vector<K> few = {K(1), K(2), K(0), K(7)};
  if constexpr (std::is_floating_point_v<K>)
    few = {K(-0.0), K(0.0), K(1.5), K(-2.0), std::numeric_limits<K>::quiet_NaN(),
           -std::numeric_limits<K>::quiet_NaN(), std::numeric_limits<K>::infinity()};
  std::mt19937_64 rng(29);
  for (K& key : keys) key = few[rng() % few.size()];
  guarded_buffer<K> dk(keys);
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
    const std::size_t n = total - offset;
    const std::vector<K> view(keys.begin() + offset, keys.end());
    for (bool descending : {false, true}) {
      const std::vector<K> sorted = reference_sort(view, descending, nans_largest(descending));
      for (std::size_t k : {std::size_t{1}, std::size_t{1000}, n / 3, n / 2 + 1}) {
        SCOPED_TRACE(::testing::Message() << "offset=" << offset << " desc=" << descending
                                          << " k=" << k);
        guarded_buffer<K> out{std::vector<K>(k)};
        const K kth = gpusort::top_k(std::span<const K>(dk.data() + offset, n),
                                     std::span<K>(out.data(), k), approx_options(true, descending));
        ASSERT_TRUE(same_bits(out.to_host(), std::vector<K>(sorted.begin(), sorted.begin() + k)));
        ASSERT_TRUE(out.guard_intact());
        ASSERT_TRUE(same_bits(std::vector<K>{kth}, std::vector<K>{sorted[k - 1]}));
      }
    }
  }
  ASSERT_TRUE(same_bits(dk.to_host(), keys)) << "top_k must not touch its input";
}

// top_k when its sample misjudges: every sampled position holds the first key of the order
// (far fewer than k keys lie before the upper splitter) or the last one (nearly all of them
// do, more than the candidate buffer holds), so the radix select must find the k first keys
// (index_math::sample_position says where the samples are taken).
TYPED_TEST(GpuApprox, TopKWhenTheSampleMisjudges) {
  using K = TypeParam;
  namespace index_math = gpusort::detail::index_math;
  const std::size_t n = std::size_t{1} << 20, k = 1000;
  const std::uint64_t samples = index_math::focus_sample_count(n);
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i);
  guarded_buffer<std::uint32_t> dv(values);
  for (const auto [descending, sampled_first] :
       {std::pair{false, true}, {true, true}, {false, false}, {true, false}}) {
    SCOPED_TRACE(::testing::Message() << "desc=" << descending << " first=" << sampled_first);
    std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, n, 11);
    const K lowest = std::numeric_limits<K>::lowest(), highest = std::numeric_limits<K>::max();
    const K sampled = descending == sampled_first ? highest : lowest;
    for (std::uint64_t j = 0; j < samples; ++j) keys[index_math::sample_position(j, samples, n)] = sampled;
    guarded_buffer<K> dk(keys);
    const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                       : gpusort::order::ascending};
    poisoned_array<K> ok(k);
    poisoned_array<std::uint32_t> ov(k);
    std::size_t bytes = 0;
    CUDA_OK(gpusort::top_k_pairs(nullptr, bytes, dk.data(), dv.data(), n, ok.ptr, ov.ptr, k, opt));
    poisoned_array<char> temp(bytes);
    CUDA_OK(gpusort::top_k_pairs(temp.ptr, bytes, dk.data(), dv.data(), n, ok.ptr, ov.ptr, k, opt));
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<K> got = ok.to_host(k);
    const std::vector<std::uint32_t> got_values = ov.to_host(k);
    ASSERT_TRUE(ok.tail_intact(k) && ov.tail_intact(k)) << "wrote past k";
    const std::vector<K> sorted = reference_sort(keys, descending, nans_largest(descending));
    ASSERT_TRUE(same_bits(got, std::vector<K>(sorted.begin(), sorted.begin() + k)));
    std::vector<bool> seen(n);
    for (std::size_t i = 0; i < k; ++i) {
      ASSERT_LT(got_values[i], n);
      ASSERT_FALSE(seen[got_values[i]]) << "index " << got_values[i] << " twice";
      seen[got_values[i]] = true;
      ASSERT_TRUE(same_bits(std::vector<K>{keys[got_values[i]]}, std::vector<K>{got[i]}));
    }
  }
}

// top_k_indices: the positions the library generates point back at the keys chosen, once
// each, as 32-bit and 64-bit integers, in both orders, on few distinct keys and specials.
TYPED_TEST(GpuApprox, TopKAndSelectKIndicesPointAtTheirKeys) {
  using K = TypeParam;
  const std::size_t n = 1000003;
  std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, n, 9);
  scatter_special_values(keys, 9);
  guarded_buffer<K> dk(keys);
  // in_order false: select_k_indices, the same keys (and their positions) in no order.
  auto check = [&](auto index_type, std::size_t k, bool descending, bool in_order) {
    using I = decltype(index_type);
    SCOPED_TRACE(::testing::Message() << "index bytes=" << sizeof(I) << " k=" << k
                                      << " desc=" << descending
                                      << " in_order=" << in_order);
    const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                       : gpusort::order::ascending};
    poisoned_array<K> ok(k);
    poisoned_array<I> oi(k);
    std::size_t bytes = 0;
    auto call = [&](void* t) {
      return in_order ? gpusort::top_k_indices(t, bytes, dk.data(), n, ok.ptr, oi.ptr, k, opt)
                      : gpusort::select_k_indices(t, bytes, dk.data(), n, ok.ptr, oi.ptr, k, opt);
    };
    CUDA_OK(call(nullptr));
    poisoned_array<char> temp(bytes);
    CUDA_OK(call(temp.ptr));
    CUDA_OK(cudaDeviceSynchronize());
    ASSERT_TRUE(ok.tail_intact(k) && oi.tail_intact(k)) << "wrote past k";
    const std::vector<K> got = ok.to_host(k);
    const std::vector<I> got_indices = oi.to_host(k);
    const std::vector<K> sorted = reference_sort(keys, descending, nans_largest(descending));
    const std::vector<K> ordered =
        in_order ? got : reference_sort(got, descending, nans_largest(descending));
    ASSERT_TRUE(same_bits(ordered, std::vector<K>(sorted.begin(), sorted.begin() + k)));
    std::vector<bool> seen(n);
    for (std::size_t i = 0; i < k; ++i) {
      ASSERT_GE(got_indices[i], 0);
      ASSERT_LT(static_cast<std::size_t>(got_indices[i]), n);
      ASSERT_FALSE(seen[got_indices[i]]) << "index " << got_indices[i] << " twice";
      seen[got_indices[i]] = true;
      ASSERT_TRUE(same_bits(std::vector<K>{keys[got_indices[i]]}, std::vector<K>{got[i]}));
    }
  };
  for (bool descending : {false, true})
    for (std::size_t k : {std::size_t{1}, std::size_t{4321}, n})
      for (bool in_order : {true, false}) {
        check(std::int32_t{}, k, descending, in_order);
        check(std::int64_t{}, k, descending, in_order);
      }
}

// top_k_pairs, then select_k_pairs on the same input (its k-th key in device memory): values
// point back at their keys.
TYPED_TEST(GpuApprox, TopKPairs) {
  using K = TypeParam;
  const std::size_t n = 1000003, k = 4321;
  const auto keys = tools::generate<K>(tools::distribution::few_unique, n, 8);
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i);
  guarded_buffer<K> dk(keys);
  guarded_buffer<std::uint32_t> dv(values);
  poisoned_array<K> ok(k);
  poisoned_array<std::uint32_t> ov(k);
  std::size_t bytes = 0;
  CUDA_OK(gpusort::top_k_pairs(nullptr, bytes, dk.data(), dv.data(), n, ok.ptr, ov.ptr, k));
  poisoned_array<char> temp(bytes);
  CUDA_OK(gpusort::top_k_pairs(temp.ptr, bytes, dk.data(), dv.data(), n, ok.ptr, ov.ptr, k));
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<K> got = ok.to_host(k);
  const std::vector<std::uint32_t> got_values = ov.to_host(k);
  const std::vector<K> sorted = reference_sort(keys);
  ASSERT_TRUE(same_bits(got, std::vector<K>(sorted.begin(), sorted.begin() + k)));
  ASSERT_TRUE(values_follow_keys(keys, got, got_values,
                                 [](std::uint64_t i) { return static_cast<std::uint32_t>(i); }));
  // select_k_pairs: the same keys as a set, the k-th key written to device memory.
  poisoned_array<K> sk(k), kth(1);
  poisoned_array<std::uint32_t> sv(k);
  CUDA_OK(gpusort::select_k_pairs(temp.ptr, bytes, dk.data(), dv.data(), n, sk.ptr, sv.ptr, k, kth.ptr));
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<K> selected = sk.to_host(k);
  const std::vector<std::uint32_t> selected_values = sv.to_host(k);
  ASSERT_TRUE(same_bits(reference_sort(selected), std::vector<K>(sorted.begin(), sorted.begin() + k)));
  ASSERT_TRUE(same_bits(kth.to_host(1), std::vector<K>{sorted[k - 1]})) << "k-th key";
  for (std::size_t i = 0; i < k; ++i)
    ASSERT_TRUE(same_bits(std::vector<K>{keys[selected_values[i]]}, std::vector<K>{selected[i]}));
}

// select_k on device data: the k first keys as a set (compared after sorting them), the k-th
// key, the input untouched, nothing written past k (the core layer with values: TopKPairs).
TYPED_TEST(GpuApprox, SelectKIsTheFirstKAsASetAndTheKthKey) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{1}, std::size_t{65537}, std::size_t{1000003}}) {
    std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, n, n + 5);
    scatter_special_values(keys, n);
    guarded_buffer<K> dk(keys);
    for (bool descending : {false, true}) {
      const std::vector<K> sorted = reference_sort(keys, descending, nans_largest(descending));
      const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                         : gpusort::order::ascending};
      for (std::size_t k : {std::size_t{1}, std::size_t{1000}, n / 2, n}) {
        if (k == 0 || k > n) continue;
        SCOPED_TRACE(::testing::Message() << "n=" << n << " desc=" << descending << " k=" << k);
        poisoned_array<K> out(k);
        const K kth = gpusort::select_k(std::span<const K>(dk.data(), n), std::span<K>(out.ptr, k), opt);
        ASSERT_TRUE(out.tail_intact(k)) << "wrote past k";
        ASSERT_TRUE(same_bits(reference_sort(out.to_host(k), descending, nans_largest(descending)),
                              std::vector<K>(sorted.begin(), sorted.begin() + k)));
        ASSERT_TRUE(same_bits(std::vector<K>{kth}, std::vector<K>{sorted[k - 1]})) << "k-th key";
      }
    }
    ASSERT_TRUE(same_bits(dk.to_host(), keys)) << "select_k must not touch its input";
  }
}

// One row's top k: the sorted row's first k keys as codes (which of several keys equal to the
// k-th are taken is not promised: NaN payloads may differ), each column once, pointing at a
// key of exactly the bits written.
template <class K, class I>
void check_row_top_k(const std::vector<K>& row, const K* got, const I* columns, std::size_t k,
                     bool descending) {
  const auto code = [](K key) { return gpusort::key_traits<K>::ordered(key); };
  std::vector<std::size_t> order(row.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // The stable order's first k: by code, ties by column (only k are checked, so only k sorted).
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      const auto ca = code(row[a]), cb = code(row[b]);
                      if (ca != cb) return descending ? cb < ca : ca < cb;
                      return a < b;
                    });
  std::vector<bool> seen(row.size());
  for (std::size_t i = 0; i < k; ++i) {
    ASSERT_EQ(code(got[i]), code(row[order[i]])) << "position " << i;
    ASSERT_GE(columns[i], I{0});
    const auto c = static_cast<std::size_t>(columns[i]);
    ASSERT_LT(c, row.size());
    ASSERT_FALSE(seen[c]) << "column " << c << " twice";
    seen[c] = true;
    ASSERT_EQ(std::memcmp(&row[c], &got[i], sizeof(K)), 0) << "position " << i << ": not the key of column " << c;
  }
}

// Every row's k first keys against the sorted row, values (column indices) pointing back at
// their keys, the input untouched, nothing written past rows x k.
TYPED_TEST(GpuApprox, TopKRowsArePrefixesOfTheSortedRows) {
  using K = TypeParam;
  std::vector<matrix_shape> shapes(std::begin(top_k_row_shapes), std::end(top_k_row_shapes));
  // and larger rows; rows enough for the per-warp selection (k <= 32 of 2048 rows of >= 256)
  shapes.insert(shapes.end(), {{1000, 32}, {64, 4096}, {5, 100003}, {2048, 257}, {2051, 1024}});
  for (const matrix_shape sh : shapes) {
    const std::size_t n = sh.rows * sh.row_length;
    std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, n, n + 1);
    scatter_special_values(keys, n);
    const std::vector<std::uint32_t> column = column_indices(sh);
    guarded_buffer<K> dk(keys);
    guarded_buffer<std::uint32_t> dv(column);
    for (bool descending : {false, true}) {
      const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                         : gpusort::order::ascending};
      for (std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32},
                            sh.row_length / 2, sh.row_length}) {
        if (k > sh.row_length) continue;
        SCOPED_TRACE(::testing::Message() << "rows=" << sh.rows << " row_length=" << sh.row_length
                                          << " desc=" << descending << " k=" << k);
        poisoned_array<K> ok(sh.rows * k);
        poisoned_array<std::uint32_t> ov(sh.rows * k);
        std::size_t bytes = 0;
        CUDA_OK(gpusort::top_k_rows_pairs(nullptr, bytes, dk.data(), dv.data(), sh.rows,
                                          sh.row_length, ok.ptr, ov.ptr, k, opt));
        poisoned_array<char> temp(bytes);
        CUDA_OK(gpusort::top_k_rows_pairs(temp.ptr, bytes, dk.data(), dv.data(), sh.rows,
                                          sh.row_length, ok.ptr, ov.ptr, k, opt));
        CUDA_OK(cudaDeviceSynchronize());
        const std::vector<K> got = ok.to_host(sh.rows * k);
        const std::vector<std::uint32_t> got_columns = ov.to_host(sh.rows * k);
        ASSERT_TRUE(ok.tail_intact(sh.rows * k) && ov.tail_intact(sh.rows * k)) << "wrote past rows x k";
        for (std::size_t r = 0; r < sh.rows; ++r) {
          const std::vector<K> row(keys.begin() + r * sh.row_length,
                                   keys.begin() + (r + 1) * sh.row_length);
          check_row_top_k(row, got.data() + r * k, got_columns.data() + r * k, k, descending);
        }
      }
    }
    ASSERT_TRUE(same_bits(dk.to_host(), keys)) << "top_k_rows must not touch its input";
  }
}

// One row's k outputs of select_k_rows_indices (in no order) put in the order top_k gives,
// ties by column, so that check_row_top_k can judge them.
template <class K, class I>
void put_row_in_order(K* got, I* columns, std::size_t k, bool descending) {
  const auto code = [](K key) { return gpusort::key_traits<K>::ordered(key); };
  std::vector<std::pair<K, I>> pairs;
  for (std::size_t i = 0; i < k; ++i) pairs.emplace_back(got[i], columns[i]);
  std::sort(pairs.begin(), pairs.end(), [&](const auto& a, const auto& b) {
    const auto ca = code(a.first), cb = code(b.first);
    if (ca != cb) return descending ? cb < ca : ca < cb;
    return a.second < b.second;
  });
  for (std::size_t i = 0; i < k; ++i) std::tie(got[i], columns[i]) = pairs[i];
}

// top_k_rows_indices through the per-row select (k up to 2048 of rows of 2048 or more: one
// row over many blocks, rows of one block, more rows than one batch, k the whole row) and the
// column matrix beside it (other shapes), as 32- and 64-bit indices, on ties, sorted and
// reversed rows and special values. in_order false: select_k_rows_indices, each row's k in
// any order.
template <class K, class I>
void check_top_k_rows_indices(const std::vector<K>& keys, std::size_t rows, std::size_t row_length,
                              std::size_t k, bool descending, bool in_order = true) {
  SCOPED_TRACE(::testing::Message() << "rows=" << rows << " row_length=" << row_length << " k=" << k
                                    << " desc=" << descending << " index bytes=" << sizeof(I)
                                    << " in order=" << in_order);
  guarded_buffer<K> dk(keys);
  const gpusort::options opt{.direction = descending ? gpusort::order::descending
                                                     : gpusort::order::ascending};
  poisoned_array<K> ok(rows * k);
  poisoned_array<I> oi(rows * k);
  std::size_t bytes = 0;
  auto call = [&](void* t) {
    if constexpr (std::is_same_v<K, gpusort::detail::half_bits> ||
                  std::is_same_v<K, gpusort::detail::bfloat16_bits>)
      return gpusort::detail::top_k_rows_positions(
          t, bytes, dk.data(), rows, row_length, ok.ptr,
          reinterpret_cast<gpusort::detail::payload<sizeof(I)>*>(oi.ptr), k, opt, in_order);
    else if (in_order)
      return gpusort::top_k_rows_indices(t, bytes, dk.data(), rows, row_length, ok.ptr, oi.ptr, k, opt);
    else
      return gpusort::select_k_rows_indices(t, bytes, dk.data(), rows, row_length, ok.ptr, oi.ptr, k,
                                            opt);
  };
  CUDA_OK(call(nullptr));
  poisoned_array<char> temp(bytes);
  CUDA_OK(call(temp.ptr));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(ok.tail_intact(rows * k) && oi.tail_intact(rows * k)) << "wrote past rows x k";
  std::vector<K> got = ok.to_host(rows * k);
  std::vector<I> got_indices = oi.to_host(rows * k);
  for (std::size_t r = 0; r < rows; ++r) {
    SCOPED_TRACE(::testing::Message() << "row " << r);
    if (!in_order) put_row_in_order(got.data() + r * k, got_indices.data() + r * k, k, descending);
    const std::vector<K> row(keys.begin() + r * row_length, keys.begin() + (r + 1) * row_length);
    check_row_top_k(row, got.data() + r * k, got_indices.data() + r * k, k, descending);
    if (::testing::Test::HasFatalFailure()) return;
  }
  ASSERT_EQ(std::memcmp(dk.to_host().data(), keys.data(), sizeof(K) * keys.size()), 0)
      << "top_k_rows_indices must not touch its input";
}

struct row_case {
  std::size_t rows, row_length;
  std::vector<std::size_t> ks;
};
const row_case row_select_cases[] = {
    {1, 262144, {1, 50, 1024, 2048}},  // one decoding step: one row over many blocks
    {3, 2048, {0, 1, 2047, 2048}},     // the shortest rows it takes, k the whole row
    {17, 70001, {33, 1000}},           // rows not a multiple of a block's share
    {4099, 2048, {5, 40}},             // more rows than one batch
    {7, 1000, {10, 999}},              // too short: the column matrix
};

TYPED_TEST(GpuApprox, TopKRowsIndicesPointAtTheirKeys) {
  using K = TypeParam;
  const tools::distribution dists[] = {tools::distribution::few_unique, tools::distribution::all_equal,
                                       tools::distribution::reverse};
  int seed = 0;
  for (const row_case& c : row_select_cases) {
    for (const tools::distribution d : dists) {
      std::vector<K> keys = tools::generate<K>(d, c.rows * c.row_length, ++seed);
      if (d == tools::distribution::few_unique) scatter_special_values(keys, seed);
      for (bool descending : {false, true})
        for (std::size_t k : c.ks) {
          check_top_k_rows_indices<K, std::int64_t>(keys, c.rows, c.row_length, k, descending);
          if (d == tools::distribution::few_unique) {
            check_top_k_rows_indices<K, std::int32_t>(keys, c.rows, c.row_length, k, descending);
            check_top_k_rows_indices<K, std::int64_t>(keys, c.rows, c.row_length, k, descending,
                                                      false);
          }
        }
    }
  }
}

// Rows that mislead the sampled threshold: the keys at the sampled positions (row_samples
// evenly spaced) are the row's first in the order asked (too few candidates: fewer than k) or
// its last (nearly every key a candidate). Either way the row's last block searches it again.
template <class K>
std::vector<K> rows_against_the_sample(std::size_t rows, std::size_t row_length, bool descending,
                                       bool samples_first, int seed) {
  namespace net = gpusort::detail::index_math;
  std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, rows * row_length, seed);
  std::vector<bool> sampled(row_length);
  for (std::size_t j = 0; j < net::row_samples; ++j) sampled[j * row_length / net::row_samples] = true;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = keys.begin() + static_cast<std::ptrdiff_t>(r * row_length);
    std::vector<K> order(row, row + static_cast<std::ptrdiff_t>(row_length));
    std::sort(order.begin(), order.end(), [&](const K& a, const K& b) {
      const auto ca = net::select_code(a, descending), cb = net::select_code(b, descending);
      return samples_first ? ca < cb : cb < ca;
    });
    std::size_t next_sample = 0, next_other = net::row_samples;
    for (std::size_t i = 0; i < row_length; ++i) row[i] = order[sampled[i] ? next_sample++ : next_other++];
  }
  return keys;
}

TYPED_TEST(GpuApprox, TopKRowsWhereTheSampleMisleads) {
  using K = TypeParam;
  int seed = 500;
  for (bool descending : {false, true})
    for (bool samples_first : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "samples first=" << samples_first);
      const std::vector<K> keys = rows_against_the_sample<K>(3, 131072, descending, samples_first, ++seed);
      for (std::size_t k : {std::size_t{50}, std::size_t{1024}})
        for (bool in_order : {true, false})
          check_top_k_rows_indices<K, std::int64_t>(keys, 3, 131072, k, descending, in_order);
    }
}

// 16-bit float keys (binary16 and bfloat16, as bits): every bit pattern in the rows (NaNs of
// both signs and every payload, +-0, +-inf, subnormals), and few distinct values.
template <class H>
void check_float16_rows() {
  std::mt19937 rng(16);
  for (const row_case& c : row_select_cases) {
    if (c.row_length < gpusort::detail::index_math::row_select_least_row) continue;
    std::vector<H> keys(c.rows * c.row_length);
    for (std::size_t i = 0; i < keys.size(); ++i)
      keys[i].bits = static_cast<std::uint16_t>(i % 3 ? rng() : rng() % 8 * 0x1111u);
    for (bool descending : {false, true})
      for (std::size_t k : c.ks) {
        for (bool in_order : {true, false})
          check_top_k_rows_indices<H, std::int64_t>(keys, c.rows, c.row_length, k, descending,
                                                    in_order);
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}
TEST(GpuApproxFloat16, TopKRowsOfHalfAndBfloat16) {
  GPUSORT_REQUIRE_GPU();
  check_float16_rows<gpusort::detail::half_bits>();
  check_float16_rows<gpusort::detail::bfloat16_bits>();
}

TYPED_TEST(GpuApprox, QualityMatchesTheCpu) {
  using K = TypeParam;
  for (tools::distribution d : {tools::distribution::uniform, tools::distribution::gaussian,
                                tools::distribution::few_unique}) {
    for (bool descending : {false, true}) {
      const std::size_t n = 200003;
      SCOPED_TRACE(::testing::Message() << "dist=" << tools::to_string(d) << " desc=" << descending);
      const auto keys = tools::generate<K>(d, n, 77);
      const gpusort::options opt = approx_options(false, descending, 1000);
      guarded_buffer<K> in(keys);
      poisoned_array<K> out(n);
      const gpusort::approx_result r =
          gpusort::approx_sort(std::span<const K>(in.data(), n), std::span<K>(out.ptr, n), opt);
      const gpusort::approx_quality q = gpusort::measure_approx(std::span<const K>(out.ptr, n), r.offsets, opt);
      const gpusort::approx_quality c = gpusort::measure_approx(out.to_host(n), r.offsets, opt);
      EXPECT_EQ(q.largest_interval, r.largest_interval);
      EXPECT_EQ(q.largest_interval, c.largest_interval);
      EXPECT_EQ(q.out_of_place, c.out_of_place);
      EXPECT_DOUBLE_EQ(q.mean_distance, c.mean_distance);
      EXPECT_EQ(q.max_distance, c.max_distance);
      EXPECT_LT(q.max_distance, q.largest_interval);
      if (d == tools::distribution::uniform) EXPECT_GT(q.out_of_place, 0u);
    }
  }
}

TEST(GpuApproxApi, BadInputIsRejectedBeforeAnythingIsWritten) {
  GPUSORT_REQUIRE_GPU();
  const auto keys = tools::generate<std::uint32_t>(tools::distribution::uniform, 1000, 1);
  guarded_buffer<std::uint32_t> in(keys), out(keys);
  poisoned_array<std::uint64_t> offsets(10001);
  std::size_t bytes = 0;
  CUDA_OK(gpusort::approx_sort_keys(nullptr, bytes, in.data(), out.data(), 1000, offsets.ptr));
  poisoned_array<char> temp(bytes);
  EXPECT_NE(gpusort::approx_sort_keys(temp.ptr, bytes, static_cast<const std::uint32_t*>(nullptr),
                                      out.data(), 1000, offsets.ptr),
            cudaSuccess);
  EXPECT_NE(gpusort::approx_sort_keys(temp.ptr, bytes, keys.data(), out.data(), 1000, offsets.ptr),
            cudaSuccess)
      << "host input";
  EXPECT_NE(gpusort::approx_sort_keys(temp.ptr, bytes, in.data(), out.data(), -1, offsets.ptr),
            cudaSuccess);
  gpusort::options too_many{.intervals = (1u << 24) + 1};
  EXPECT_EQ(gpusort::approx_sort_keys(nullptr, bytes, in.data(), out.data(), 1000, offsets.ptr,
                                      too_many),
            cudaErrorInvalidValue);
  std::size_t small = 0;
  EXPECT_EQ(gpusort::approx_sort_keys(temp.ptr, small, in.data(), out.data(), 1000, offsets.ptr),
            cudaErrorInvalidValue)
      << "workspace too small";
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(out.to_host(), keys);
  {
    guarded_buffer<std::uint32_t> too_long{std::vector<std::uint32_t>(1001)};
    EXPECT_THROW(gpusort::top_k(std::span<const std::uint32_t>(in.data(), 1000),
                                std::span<std::uint32_t>(too_long.data(), 1001)),
                 gpusort::error);
  }
  EXPECT_THROW(gpusort::approx_sort(std::span<const std::uint32_t>(in.data(), 1000),
                                    std::span<std::uint32_t>(out.data(), 1000), too_many),
               gpusort::error);
}

TEST(GpuApproxApi, WorksInsideGraphCapture) {
  GPUSORT_REQUIRE_GPU();
  const std::size_t n = 2000001;
  const auto keys = tools::generate<float>(tools::distribution::gaussian, n, 12);
  for (bool sampled : {false, true}) {
    guarded_buffer<float> in(keys);
    poisoned_array<float> out(n);
    poisoned_array<std::uint64_t> offsets(10001);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    gpusort::options opt = approx_options(sampled, false);
    opt.stream = stream;
    std::size_t bytes = 0;
    CUDA_OK(gpusort::approx_sort_keys(nullptr, bytes, in.data(), out.ptr, n, offsets.ptr, opt));
    poisoned_array<char> temp(bytes);
    captured_graph graph;
    cudaError_t e = cudaSuccess;
    ASSERT_NO_FATAL_FAILURE(graph.capture(stream, [&] {
      e = gpusort::approx_sort_keys(temp.ptr, bytes, in.data(), out.ptr, n, offsets.ptr, opt);
    }));
    ASSERT_EQ(e, cudaSuccess);
    ASSERT_NO_FATAL_FAILURE(graph.launch(stream));
    std::vector<float> want(n);
    std::vector<std::uint64_t> want_offsets(10001);
    gpusort::detail::cpu_approx_sort<float, gpusort::detail::no_value>(
        keys.data(), want.data(), nullptr, nullptr, n, want_offsets.data(), opt);
    const auto got_offsets = offsets.to_host(10001);
    EXPECT_EQ(got_offsets, want_offsets);
    EXPECT_TRUE(same_bits(sorted_within(out.to_host(n), got_offsets), sorted_within(want, want_offsets)));
    cudaStreamDestroy(stream);
  }
}

// approx_refine of a shuffled 0 .. n-1, n > 2^31: the approximate sort's 32-bit shared
// counters at their largest, then the segmented sort.
TEST(GpuApproxHuge, RefineMoreThan2To31Keys) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * 4 * 2 + (std::size_t{3} << 30)) GTEST_SKIP() << "needs 2 x " << n * 4 << " bytes";
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  fill_shuffled<<<4096, 256>>>(keys, n);
  const gpusort::options opt{.algo = gpusort::algorithm::approx_refine};
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, opt));
  poisoned_array<char> temp(bytes);
  ASSERT_NE(temp.ptr, nullptr);
  CUDA_OK(gpusort::sort_keys(temp.ptr, bytes, keys, n, opt));
  EXPECT_EQ(count_misplaced(keys, n), 0u);
  cudaFree(keys);
}
