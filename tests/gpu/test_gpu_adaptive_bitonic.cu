// GPU-ABiSort's own properties: the plain algorithm without block steps, the comparison count
// against the paper's formula, bad options, the host-vector and span layer. Sizes,
// distributions, orders, stable pairs and n >= 2^31: test_gpu_conformance.cu.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/detail/index_math/adaptive_bitonic.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace abisort = gpusort::detail::index_math::abisort;

GPUSORT_TYPED_SUITE(GpuAdaptiveBitonic, GpuTest, key_types);

gpusort::options adaptive(bool descending, unsigned block_bits = 0) {
  return {.algo = gpusort::algorithm::adaptive_bitonic,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .block_bits = block_bits};
}

template <class K>
void check_keys(const std::vector<K>& keys, const gpusort::options& opt) {
  check_device_sort(keys, opt, [&](std::size_t bytes) {
    if (keys.size() >= 2) ASSERT_GT(bytes, 1u);
  });
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

// The counter sees every comparison: the formula of index_math/adaptive_bitonic.hpp, which for
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
  EXPECT_TRUE(sorts_a_vector(tools::distribution::gaussian, adaptive(true)));
}

