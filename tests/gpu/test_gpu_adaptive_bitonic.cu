// GPU-ABiSort (algorithm::adaptive_bitonic) against std::stable_sort: every key type,
// awkward sizes, every distribution, both orders, pairs (it is stable, so values must come
// out in exactly the stable order), a poisoned workspace, the comparison counter, bad input,
// and n >= 2^31.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/detail/network/adaptive_bitonic.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace abisort = gpusort::detail::network::abisort;

template <class K>
class GpuAdaptiveBitonic : public ::testing::Test {
 protected:
  void SetUp() override { GPUSORT_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(GpuAdaptiveBitonic, key_types);

gpusort::options adaptive(bool descending, unsigned block_bits = 0) {
  return {.algo = gpusort::algorithm::adaptive_bitonic,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .block_bits = block_bits};
}

template <class K>
void check_keys(const std::vector<K>& keys, const gpusort::options& opt) {
  const std::vector<K> expect = reference_sort(keys, opt.direction == gpusort::order::descending);
  guarded_buffer<K> d(keys);
  ASSERT_TRUE(d.data() || keys.empty());
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), opt), cudaSuccess);
  if (keys.size() >= 2) ASSERT_GT(bytes, 0u);
  poisoned_workspace temp(bytes);
  ASSERT_TRUE(temp.ptr || bytes == 0);
  ASSERT_EQ(gpusort::sort_keys(bytes ? temp.ptr : d.data(), bytes, d.data(), keys.size(), opt),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

TYPED_TEST(GpuAdaptiveBitonic, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      for (bool descending : {false, true}) {
        const std::uint64_t seed = 3000 + n * 7 + static_cast<int>(d);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " desc=" << descending << " seed=" << seed);
        std::vector<K> keys = tools::generate<K>(d, n, seed);
        scatter_special_values(keys, seed);
        check_keys(keys, adaptive(descending));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(GpuAdaptiveBitonic, PlainAlgorithmWithoutBlockSteps) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{2}, std::size_t{3}, std::size_t{1000}, std::size_t{65537}}) {
    for (bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " desc=" << descending);
      std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, n, n);
      scatter_special_values(keys, n);
      check_keys(keys, adaptive(descending, 1));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(GpuAdaptiveBitonic, LargeSizes) {
  using K = TypeParam;
  for (std::size_t n : {(std::size_t{1} << 22) + 1, std::size_t{1} << 23, std::size_t{10000019}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::few_unique}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d));
      check_keys(tools::generate<K>(d, n, n), adaptive(d == tools::distribution::few_unique));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// value = original index: a stable sort puts the values in exactly the reference's order.
template <class K, class V, class MakeValue>
void check_pairs(std::size_t n, tools::distribution dist, bool descending, MakeValue make) {
  const std::uint64_t seed = 91 + n;
  SCOPED_TRACE(::testing::Message() << "n=" << n << " value bytes=" << sizeof(V) << " dist="
                                    << tools::to_string(dist) << " desc=" << descending);
  const std::vector<K> input = tools::generate<K>(dist, n, seed);
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = make(i);
  guarded_buffer<K> dk(input);
  guarded_buffer<V> dv(values);
  const gpusort::options opt = adaptive(descending);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  poisoned_workspace temp(bytes);
  ASSERT_EQ(gpusort::sort_pairs(bytes ? temp.ptr : dk.data(), bytes, dk.data(), dv.data(), n, opt),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> keys = dk.to_host();
  const std::vector<V> out = dv.to_host();
  ASSERT_TRUE(same_bits(keys, reference_sort(input, descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, out, make));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return descending ? gpusort::less<K>{}(input[b], input[a]) : gpusort::less<K>{}(input[a], input[b]);
  });
  for (std::size_t i = 0; i < n; ++i) {
    const V expect = make(order[i]);
    ASSERT_EQ(std::memcmp(&expect, &out[i], sizeof(V)), 0) << "not stable at " << i;
  }
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

struct value16 {
  std::uint64_t index;
  std::uint32_t check, pad;
};

TYPED_TEST(GpuAdaptiveBitonic, PairsAreStable) {
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

// The counter sees every comparison: the formula of network/adaptive_bitonic.hpp, which for
// the plain algorithm is under 2 N log2 N (N: n padded to a power of two).
TEST(GpuAdaptiveBitonicCount, ComparisonsMatchTheFormula) {
  GPUSORT_REQUIRE_GPU();
  std::uint64_t* count = nullptr;
  CUDA_OK(cudaMallocManaged(&count, sizeof(std::uint64_t)));
  for (unsigned b : {1u, 10u, 11u, 12u, 13u}) {
    for (std::size_t n : {std::size_t{5}, std::size_t{4096}, std::size_t{70001}, std::size_t{1} << 20}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " block_bits=" << b);
      std::vector<std::uint32_t> keys = tools::generate<std::uint32_t>(tools::distribution::uniform, n, n);
      *count = 0;
      gpusort::options opt = adaptive(false, b);
      opt.comparison_count = count;
      check_keys(keys, opt);
      if (::testing::Test::HasFatalFailure()) break;
      const int L = abisort::padded_log2(n, static_cast<int>(b));
      EXPECT_EQ(*count, abisort::sort_comparisons(L, static_cast<int>(b)));
      if (b == 1) EXPECT_LE(*count, 2 * (std::uint64_t{1} << L) * L);
    }
  }
  cudaFree(count);
}

TEST(GpuAdaptiveBitonicErrors, BadOptionsLeaveTheKeysAlone) {
  GPUSORT_REQUIRE_GPU();
  const std::vector<std::uint32_t> keys = {5, 3, 9, 1};
  guarded_buffer<std::uint32_t> d(keys);
  std::size_t bytes = 0;
  for (unsigned b : {2u, 7u, 9u, 14u})
    EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), adaptive(false, b)),
              cudaErrorInvalidValue);
  std::uint64_t host_counter = 0;
  gpusort::options opt = adaptive(false);
  opt.comparison_count = &host_counter;
  EXPECT_NE(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), opt), cudaSuccess);
  cudaGetLastError();
  // Positions are 32-bit: more than 2^32 keys is refused before anything is touched.
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), adaptive(false)),
            cudaSuccess);
  poisoned_workspace temp(bytes);
  EXPECT_NE(gpusort::sort_keys(temp.ptr, bytes, d.data(), (std::uint64_t{1} << 32) + 1,
                               adaptive(false)),
            cudaSuccess);
  cudaGetLastError();
  std::size_t too_few = bytes - 1;
  EXPECT_EQ(gpusort::sort_keys(temp.ptr, too_few, d.data(), keys.size(), adaptive(false)),
            cudaErrorInvalidValue);
  EXPECT_EQ(d.to_host(), keys);
  // Through the convenience layer: a gpusort::error that says what is wrong.
  std::vector<std::uint32_t> host = keys;
  try {
    gpusort::sort(std::span<std::uint32_t>(d.data(), keys.size()), adaptive(false, 7));
    ADD_FAILURE() << "no error";
  } catch (const gpusort::error& e) {
    EXPECT_NE(std::string(e.what()).find("adaptive_bitonic"), std::string::npos) << e.what();
  }
  EXPECT_EQ(d.to_host(), keys);
}

TEST(GpuAdaptiveBitonicApi, VectorsAndSpans) {
  GPUSORT_REQUIRE_GPU();
  std::vector<double> v = tools::generate<double>(tools::distribution::gaussian, 100003, 5);
  const std::vector<double> expect = reference_sort(v, true);
  gpusort::sort(v, adaptive(true));
  EXPECT_TRUE(same_bits(v, expect));
}

TEST(GpuAdaptiveBitonicHuge, MoreThan2To31KeysOnTheDevice) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, adaptive(false)));
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < bytes + (std::size_t{1} << 29)) {
    cudaFree(keys);
    GTEST_SKIP() << "needs " << bytes << " bytes of workspace, " << free_bytes << " free";
  }
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes));
  fill_shuffled<<<4096, 256>>>(keys, n);
  CUDA_OK(cudaGetLastError());
  const auto misplaced = [&] { return count_misplaced(keys, n); };
  ASSERT_GT(misplaced(), 0);
  CUDA_OK(gpusort::sort_keys(temp, bytes, keys, n, adaptive(false)));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(misplaced(), 0);
  cudaFree(temp);
  cudaFree(keys);
}
