// The in-place bitonic sort's own property: it asks for no workspace, for keys and for pairs
// of every value size, and sorts with the keys given as the workspace, writing nothing past
// n. Sizes, distributions, orders, pairs and n >= 2^31: test_gpu_conformance.cu.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

GPUSORT_TYPED_SUITE(GpuBitonic, GpuTest, key_types);

template <class K, class V>
void check_in_place(std::size_t n) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << " value bytes=" << sizeof(V));
  const std::vector<K> input = tools::generate<K>(tools::distribution::uniform, n, n);
  guarded_buffer<K> keys(input);
  guarded_buffer<V> values{std::vector<V>(n)};
  const gpusort::options opt{.algo = gpusort::algorithm::bitonic};
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(nullptr, bytes, keys.data(), values.data(), n, opt), cudaSuccess);
  EXPECT_EQ(bytes, 1u) << "pairs: in place, but never 0 (query, allocate, call must sort)";
  bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, keys.data(), n, opt), cudaSuccess);
  ASSERT_EQ(bytes, 1u) << "keys";
  guarded_buffer<unsigned char> temp(std::vector<unsigned char>{0x5a});
  ASSERT_EQ(gpusort::sort_keys(temp.data(), bytes, keys.data(), n, opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_bits(keys.to_host(), reference_sort(input)));
  EXPECT_TRUE(keys.guard_intact()) << "wrote past n";
  EXPECT_EQ(temp.to_host(), std::vector<unsigned char>{0x5a}) << "the byte it asked for, touched";
  EXPECT_TRUE(temp.guard_intact());
}

TYPED_TEST(GpuBitonic, AsksForOneByteItNeverTouches) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1000003}}) {
    check_in_place<K, std::uint32_t>(n);
    check_in_place<K, std::uint64_t>(n);
  }
}
