// The GPU quicksort's own properties: the inputs that need the most rounds, the host-vector
// layer and its bad input (the key count limit). Sizes, distributions, orders, pairs, graph
// capture and n >= 2^31: test_gpu_conformance.cu.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/detail/index_math/quicksort.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace qs = gpusort::detail::index_math::quicksort;

GPUSORT_TYPED_SUITE(GpuQuicksort, GpuTest, key_types);

gpusort::options quick(bool descending, cudaStream_t stream = nullptr) {
  return {.algo = gpusort::algorithm::quicksort,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .stream = stream};
}

template <class K>
void check_keys(const std::vector<K>& keys, bool descending) {
  check_device_sort(keys, quick(descending), [&](std::size_t bytes) {
    if (keys.size() > qs::finish_size) ASSERT_GT(bytes, keys.size() * sizeof(K));
  });
}

// Keys whose ordered bits are powers of two (and their neighbours) halve the midpoint's range
// one bit at a time: the most rounds any input needs. Also two keys only, far apart, and a
// large block of equal keys that lands in the spare buffer.
TYPED_TEST(GpuQuicksort, InputsThatNeedTheMostRounds) {
  using K = TypeParam;
  using U = typename gpusort::key_traits<K>::ordered_type;
  constexpr int bits = 8 * sizeof(U);
  const std::size_t n = 300007;
  std::vector<U> patterns[3];
  for (std::size_t i = 0; i < n; ++i) {
    const U bit = U{1} << (tools::random_bits(7, i) % bits);
    patterns[0].push_back(i % 3 == 0 ? bit : static_cast<U>(bit - 1));
    patterns[1].push_back(i % 2 ? U{0} : static_cast<U>(~U{0} >> 1));
    patterns[2].push_back(i % 10 ? U{12345} : static_cast<U>(tools::random_bits(3, i)));
  }
  for (const std::vector<U>& pattern : patterns) {
    std::vector<K> keys(n);
    std::memcpy(keys.data(), pattern.data(), n * sizeof(K));
    for (bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "pattern " << (&pattern - patterns) << " desc="
                                        << descending);
      check_keys(keys, descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(GpuQuicksortApi, VectorsAndBadInput) {
  GPUSORT_REQUIRE_GPU();
  EXPECT_TRUE(sorts_a_vector(tools::distribution::zipf, quick(true)));

  const std::vector<std::uint32_t> keys = tools::generate<std::uint32_t>(
      tools::distribution::uniform, 10000, 9);
  guarded_buffer<std::uint32_t> d(keys);
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), quick(false)));
  poisoned_workspace temp(bytes);
  std::size_t too_few = bytes - 1;
  EXPECT_EQ(gpusort::sort_keys(temp.ptr, too_few, d.data(), keys.size(), quick(false)),
            cudaErrorInvalidValue);
  EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), qs::max_keys, quick(false)),
            cudaErrorInvalidValue);
  EXPECT_EQ(d.to_host(), keys);
}

