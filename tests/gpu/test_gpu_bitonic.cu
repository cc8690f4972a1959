// The device bitonic sort against std::stable_sort: every key type, awkward sizes, every
// distribution, both orders, pairs with 4-, 8- and 16-byte values, and n >= 2^31.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

template <class K>
class GpuBitonic : public ::testing::Test {
 protected:
  void SetUp() override { GPUSORT_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(GpuBitonic, key_types);

template <class K>
void check_keys(std::vector<K> keys, bool descending, gpusort::algorithm algo) {
  const std::vector<K> expect = reference_sort(keys, descending);
  guarded_buffer<K> d(keys);
  ASSERT_TRUE(d.data() || keys.empty());
  gpusort::options opt{.algo = algo,
                       .direction = descending ? gpusort::order::descending
                                               : gpusort::order::ascending};
  std::size_t bytes = 1;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), opt), cudaSuccess);
  ASSERT_EQ(bytes, 0u) << "bitonic is in place";
  ASSERT_EQ(gpusort::sort_keys(d.data(), bytes, d.data(), keys.size(), opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

TYPED_TEST(GpuBitonic, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      for (bool descending : {false, true}) {
        const std::uint64_t seed = 1000 + n * 7 + static_cast<int>(d);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " desc=" << descending << " seed=" << seed);
        std::vector<K> keys = tools::generate<K>(d, n, seed);
        scatter_special_values(keys, seed);
        check_keys(keys, descending, gpusort::algorithm::bitonic);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuBitonic, LargeSizes) {
  using K = TypeParam;
  for (std::size_t n : {(std::size_t{1} << 20) + 1, (std::size_t{1} << 22) - 1,
                        std::size_t{1} << 23, std::size_t{10000019}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::few_unique}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d));
      check_keys(tools::generate<K>(d, n, n), d == tools::distribution::few_unique,
                 gpusort::algorithm::bitonic);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(GpuBitonic, ReducedEntropyKeys) {
  using K = TypeParam;
  if constexpr (std::is_integral_v<K>) {
    for (int ands : {1, 2, 3, 4, 6}) {
      SCOPED_TRACE(::testing::Message() << "and of " << ands + 1 << " arrays");
      check_keys(tools::generate<K>(tools::distribution::uniform, 300007, ands,
                                    {.entropy_and = ands}),
                 false, gpusort::algorithm::bitonic);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// value = original index: every value must stay with its key.
template <class K, class V, class MakeValue>
void check_pairs(std::size_t n, tools::distribution dist, bool descending, MakeValue make) {
  const std::uint64_t seed = 77 + n;
  SCOPED_TRACE(::testing::Message() << "n=" << n << " value bytes=" << sizeof(V) << " dist="
                                    << tools::to_string(dist) << " desc=" << descending);
  const std::vector<K> input = tools::generate<K>(dist, n, seed);
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = make(i);
  guarded_buffer<K> dk(input);
  guarded_buffer<V> dv(values);
  gpusort::options opt{.algo = gpusort::algorithm::bitonic,
                       .direction = descending ? gpusort::order::descending
                                               : gpusort::order::ascending};
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(dk.data(), bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> keys = dk.to_host();
  const std::vector<V> out = dv.to_host();
  ASSERT_TRUE(same_bits(keys, reference_sort(input, descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, out, make));
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

struct value16 {
  std::uint64_t index;
  std::uint32_t check, pad;
};

TYPED_TEST(GpuBitonic, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{4097},
                        std::size_t{65537}, std::size_t{1000003}}) {
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
      for (bool desc : {false, true}) {
        check_pairs<K, std::uint32_t>(n, dist, desc, [](std::size_t i) { return std::uint32_t(i); });
        check_pairs<K, std::uint64_t>(n, dist, desc, [](std::size_t i) { return std::uint64_t(i); });
        check_pairs<K, value16>(n, dist, desc, [](std::size_t i) {
          return value16{i, static_cast<std::uint32_t>(i * 2654435761u), 7};
        });
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(GpuBitonicHuge, MoreThan2To31KeysOnTheDevice) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * 4 + (1u << 30)) GTEST_SKIP() << "needs " << n * 4 << " bytes";
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  fill_shuffled<<<4096, 256>>>(keys, n);
  CUDA_OK(cudaGetLastError());
  // the input is a permutation of 0..n-1: after sorting, keys[i] == i
  const auto misplaced = [&] { return count_misplaced(keys, n); };
  ASSERT_GT(misplaced(), 0);
  std::size_t no_bytes = 0;
  CUDA_OK(gpusort::sort_keys(keys, no_bytes, keys, n,
                             gpusort::options{.algo = gpusort::algorithm::bitonic}));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(misplaced(), 0);
  cudaFree(keys);
}
