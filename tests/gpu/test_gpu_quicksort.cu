// The GPU quicksort (algorithm::quicksort) against std::stable_sort: every key type, awkward
// sizes, every distribution, both orders, inputs that need the most rounds, pairs (not
// stable: every value must stay with its key), a poisoned workspace, graph capture, bad
// input, and n >= 2^31.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/detail/network/quicksort.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace qs = gpusort::detail::network::quicksort;

template <class K>
class GpuQuicksort : public ::testing::Test {
 protected:
  void SetUp() override { GPUSORT_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(GpuQuicksort, key_types);

gpusort::options quick(bool descending, cudaStream_t stream = nullptr) {
  return {.algo = gpusort::algorithm::quicksort,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .stream = stream};
}

template <class K>
void check_keys(const std::vector<K>& keys, bool descending) {
  const std::vector<K> expect = reference_sort(keys, descending);
  guarded_buffer<K> d(keys);
  ASSERT_TRUE(d.data() || keys.empty());
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), quick(descending)),
            cudaSuccess);
  if (keys.size() > qs::finish_size) ASSERT_GT(bytes, keys.size() * sizeof(K));
  poisoned_workspace temp(bytes);
  ASSERT_TRUE(temp.ptr || bytes == 0);
  ASSERT_EQ(gpusort::sort_keys(bytes ? temp.ptr : d.data(), bytes, d.data(), keys.size(),
                               quick(descending)),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

TYPED_TEST(GpuQuicksort, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      for (bool descending : {false, true}) {
        const std::uint64_t seed = 5000 + n * 7 + static_cast<int>(d);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " desc=" << descending << " seed=" << seed);
        std::vector<K> keys = tools::generate<K>(d, n, seed);
        scatter_special_values(keys, seed);
        check_keys(keys, descending);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
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

TYPED_TEST(GpuQuicksort, LargeSizes) {
  using K = TypeParam;
  for (std::size_t n : {(std::size_t{1} << 22) + 1, std::size_t{10000019}}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::zipf,
                                  tools::distribution::all_equal}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d));
      check_keys(tools::generate<K>(d, n, n), d == tools::distribution::zipf);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

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
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), dv.data(), n, quick(descending)),
            cudaSuccess);
  poisoned_workspace temp(bytes);
  ASSERT_EQ(gpusort::sort_pairs(bytes ? temp.ptr : dk.data(), bytes, dk.data(), dv.data(), n,
                                quick(descending)),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> keys = dk.to_host();
  ASSERT_TRUE(same_bits(keys, reference_sort(input, descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, dv.to_host(), make));
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

struct value16 {
  std::uint64_t index;
  std::uint32_t check, pad;
};

TYPED_TEST(GpuQuicksort, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{2049},
                        std::size_t{65537}, std::size_t{1000003}}) {
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique,
                      tools::distribution::all_equal}) {
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

// The rounds are queued without waiting on the host: the sort can be captured into a graph.
TEST(GpuQuicksortApi, WorksInsideGraphCapture) {
  GPUSORT_REQUIRE_GPU();
  const auto input = tools::generate<float>(tools::distribution::gaussian, 500009, 4);
  guarded_buffer<float> d(input);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), quick(false, stream)));
  poisoned_workspace temp(bytes);
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t sorted =
      gpusort::sort_keys(temp.ptr, bytes, d.data(), input.size(), quick(false, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  ASSERT_EQ(sorted, cudaSuccess);
  EXPECT_EQ(d.to_host(), input) << "capture must not run anything";
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input)));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(GpuQuicksortApi, VectorsAndBadInput) {
  GPUSORT_REQUIRE_GPU();
  std::vector<double> v = tools::generate<double>(tools::distribution::zipf, 100003, 5);
  const std::vector<double> expect = reference_sort(v, true);
  gpusort::sort(v, quick(true));
  EXPECT_TRUE(same_bits(v, expect));

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

TEST(GpuQuicksortHuge, MoreThan2To31KeysOnTheDevice) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, quick(false)));
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
  ASSERT_GT(count_misplaced(keys, n), 0);
  CUDA_OK(gpusort::sort_keys(temp, bytes, keys, n, quick(false)));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(count_misplaced(keys, n), 0);
  cudaFree(temp);
  cudaFree(keys);
}
