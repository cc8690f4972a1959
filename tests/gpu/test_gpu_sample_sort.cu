// The device sample sort against std::stable_sort: every key type, awkward sizes, every
// distribution, both orders, both samplings, pairs, a user comparator, the bucket bound
// checked on the device on adversarial inputs, graph capture, and n >= 2^31.
#include <gtest/gtest.h>

#include <cstring>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace net = gpusort::detail::network;

template <class K>
class GpuSampleSort : public ::testing::Test {
 protected:
  void SetUp() override { GPUSORT_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(GpuSampleSort, key_types);

gpusort::options sample_options(bool random, bool descending, unsigned buckets = 0) {
  return {.algo = gpusort::algorithm::sample_sort,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .sampler = random ? gpusort::sampling::random : gpusort::sampling::regular,
          .buckets = buckets};
}

template <class K>
void check_keys(std::vector<K> keys, const gpusort::options& opt) {
  const std::vector<K> expect = reference_sort(keys, opt.direction == gpusort::order::descending);
  guarded_buffer<K> d(keys);
  ASSERT_TRUE(d.data() || keys.empty());
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), keys.size(), opt), cudaSuccess);
  poisoned_workspace temp(bytes);
  ASSERT_TRUE(temp.ptr || bytes == 0);
  void* t = bytes ? temp.ptr : static_cast<void*>(&bytes);  // 0 bytes: any non-null pointer
  ASSERT_EQ(gpusort::sort_keys(t, bytes, d.data(), keys.size(), opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

TYPED_TEST(GpuSampleSort, KeysOnEveryDistributionAndSize) {
  using K = TypeParam;
  for (std::size_t n : awkward_sizes(1 << 17)) {
    for (tools::distribution d : tools::all_distributions) {
      for (bool random : {false, true}) {
        for (bool descending : {false, true}) {
          const std::uint64_t seed = 3000 + n * 7 + static_cast<int>(d);
          SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                            << " random=" << random << " desc=" << descending
                                            << " seed=" << seed);
          std::vector<K> keys = tools::generate<K>(d, n, seed);
          scatter_special_values(keys, seed);
          check_keys(keys, sample_options(random, descending));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TYPED_TEST(GpuSampleSort, LargeSizesAndBucketCounts) {
  using K = TypeParam;
  // s = 4 takes several levels and leaves final buckets larger than a block (the segmented
  // sort's long path); 1024 is the largest s.
  for (unsigned buckets : {0u, 4u, 1024u}) {
    for (tools::distribution d : {tools::distribution::uniform, tools::distribution::all_equal}) {
      for (bool random : {false, true}) {
        const std::size_t n = (std::size_t{1} << 20) + 1;
        SCOPED_TRACE(::testing::Message() << "n=" << n << " dist=" << tools::to_string(d)
                                          << " buckets=" << buckets << " random=" << random);
        check_keys(tools::generate<K>(d, n, n + buckets), sample_options(random, buckets == 4, buckets));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  for (bool random : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "n=10000019 zipf random=" << random);
    check_keys(tools::generate<K>(tools::distribution::zipf, 10000019, 9), sample_options(random, true));
  }
}

TYPED_TEST(GpuSampleSort, ReducedEntropyKeys) {
  using K = TypeParam;
  if constexpr (std::is_integral_v<K>) {
    for (int ands : {1, 3, 6}) {
      SCOPED_TRACE(::testing::Message() << "and of " << ands + 1 << " arrays");
      check_keys(tools::generate<K>(tools::distribution::uniform, 3000017, ands, {.entropy_and = ands}),
                 sample_options(false, false));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// value = original index: every value must stay with its key.
template <class K, class V>
void check_pairs(std::size_t n, tools::distribution dist, bool random, bool descending) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << " value bytes=" << sizeof(V) << " dist="
                                    << tools::to_string(dist) << " random=" << random
                                    << " desc=" << descending);
  const std::vector<K> input = tools::generate<K>(dist, n, 91 + n);
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::memset(&values[i], 0x3C, sizeof(V));
    std::memcpy(&values[i], &i, std::min(sizeof(V), sizeof(i)));
  }
  guarded_buffer<K> dk(input);
  guarded_buffer<V> dv(values);
  const gpusort::options opt = sample_options(random, descending);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  poisoned_workspace temp(bytes);
  void* t = bytes ? temp.ptr : static_cast<void*>(&bytes);
  ASSERT_EQ(gpusort::sort_pairs(t, bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> keys = dk.to_host();
  const std::vector<V> out = dv.to_host();
  ASSERT_TRUE(same_bits(keys, reference_sort(input, descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, out, [&](std::size_t i) { return values[i]; }));
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

struct value16 {
  std::uint64_t index;
  std::uint32_t a, b;
};

TYPED_TEST(GpuSampleSort, PairsKeepTheirValues) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, std::size_t{65537},
                        std::size_t{1000003}}) {
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
      for (bool random : {false, true}) {
        check_pairs<K, std::uint32_t>(n, dist, random, n % 2);
        check_pairs<K, std::uint64_t>(n, dist, random, false);
        check_pairs<K, value16>(n, dist, random, true);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The bound, on the device: every level's largest bucket, for inputs made against regular
// sampling (the final buckets are what the segmented sort gets).
template <class K>
void check_bound(const std::vector<K>& input, unsigned buckets) {
  using namespace gpusort::detail;
  const std::uint64_t n = input.size();
  guarded_buffer<K> d(input);
  unsigned long long* largest = nullptr;
  CUDA_OK(cudaMalloc(&largest, sizeof(unsigned long long) * net::sample_plan::max_levels));
  CUDA_OK(cudaMemset(largest, 0, sizeof(unsigned long long) * net::sample_plan::max_levels));
  device::sample_sort_knobs knobs{net::bucket_bits_of(buckets), false};
  knobs.largest_bucket = largest;
  auto sort_buckets = [](void* t, std::size_t& b, K* k, no_value* v, std::uint64_t count,
                         const segment_list& segs, bool desc, cudaStream_t stream) {
    return sort_segments<K, no_value>(t, b, k, v, count, segs,
                                      {.direction = desc ? gpusort::order::descending
                                                         : gpusort::order::ascending,
                                       .stream = stream});
  };
  std::size_t bytes = 0;
  CUDA_OK(device::sample_sort(nullptr, bytes, d.data(), static_cast<no_value*>(nullptr), n,
                              gpusort::less<K>{}, false, knobs, sort_buckets, nullptr));
  poisoned_workspace temp(bytes);
  CUDA_OK(device::sample_sort(temp.ptr, bytes, d.data(), static_cast<no_value*>(nullptr), n,
                              gpusort::less<K>{}, false, knobs, sort_buckets, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(same_bits(d.to_host(), reference_sort(input)));
  using policy = device::sample_sort_policy<K, no_value>;
  const net::sample_plan plan = device::plan_for<K, no_value>(n, net::bucket_bits_of(buckets));
  ASSERT_GE(plan.count, 1);
  unsigned long long got[net::sample_plan::max_levels] = {};
  CUDA_OK(cudaMemcpy(got, largest, sizeof(got), cudaMemcpyDeviceToHost));
  for (int l = 0; l < plan.count; ++l) {
    const net::sample_level& lv = plan.levels[l];
    EXPECT_GT(got[l], 0u) << "level " << l;
    EXPECT_LE(got[l], lv.bucket_bound(lv.cap)) << "level " << l << " s=" << lv.buckets();
  }
  EXPECT_LE(got[plan.count - 1], policy::final_cap) << "final buckets fit one block";
  cudaFree(largest);
}

TEST(GpuSampleSortBound, HoldsOnAdversarialInputs) {
  GPUSORT_REQUIRE_GPU();
  const std::size_t n = 3000017;
  for (unsigned buckets : {0u, 8u, 256u}) {
    const unsigned stride = (1u << 14) / (buckets ? buckets : 256u);
    std::vector<std::vector<std::uint32_t>> inputs;
    inputs.emplace_back(n, 5u);
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = i % 2;
    inputs.push_back(v);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(i / stride);
    inputs.push_back(v);
    for (std::size_t i = 0; i < n; ++i) v[i] = (i % (1 << 14)) % stride == stride - 1 ? 1 : 1000;
    inputs.push_back(v);
    inputs.push_back(tools::generate<std::uint32_t>(tools::distribution::organ_pipe, n, 1));
    inputs.push_back(tools::generate<std::uint32_t>(tools::distribution::zipf, n, 2));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      SCOPED_TRACE(::testing::Message() << "buckets=" << buckets << " input " << k);
      check_bound(inputs[k], buckets);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  check_bound(std::vector<std::uint32_t>(n, 0u), 64);
}

struct record {
  std::uint32_t major, minor;
  std::uint64_t payload;
};
struct by_major_then_minor {
  __host__ __device__ bool operator()(const record& a, const record& b) const {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
};

TEST(GpuSampleSortComparator, SixteenByteRecordsByTwoFields) {
  GPUSORT_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{40000}, std::size_t{2000003}}) {
    for (bool random : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " random=" << random);
      std::vector<record> recs(n);
      for (std::size_t i = 0; i < n; ++i)
        recs[i] = {static_cast<std::uint32_t>(tools::random_bits(1, i) % 100),
                   static_cast<std::uint32_t>(tools::random_bits(2, i) % 5000), i};
      std::vector<record> expect = recs;
      std::stable_sort(expect.begin(), expect.end(), by_major_then_minor{});
      guarded_buffer<record> d(recs);
      const gpusort::options opt = sample_options(random, false);
      std::size_t bytes = 0;
      ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), n, by_major_then_minor{}, opt), cudaSuccess);
      poisoned_workspace temp(bytes);
      void* t = bytes ? temp.ptr : static_cast<void*>(&bytes);
      ASSERT_EQ(gpusort::sort_keys(t, bytes, d.data(), n, by_major_then_minor{}, opt), cudaSuccess);
      const auto got = d.to_host();
      std::vector<bool> seen(n, false);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].major, expect[i].major) << i;
        ASSERT_EQ(got[i].minor, expect[i].minor) << i;
        ASSERT_LT(got[i].payload, n);
        ASSERT_FALSE(seen[got[i].payload]);
        seen[got[i].payload] = true;
      }
      ASSERT_TRUE(d.guard_intact());
    }
  }
}

TEST(GpuSampleSortApi, WorkspaceAndBadInput) {
  GPUSORT_REQUIRE_GPU();
  const auto input = tools::generate<std::uint32_t>(tools::distribution::uniform, 1 << 20, 5);
  guarded_buffer<std::uint32_t> d(input);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), sample_options(false, false)),
            cudaSuccess);
  EXPECT_GE(bytes, input.size() * 4) << "a second buffer of keys";
  EXPECT_LT(bytes, input.size() * 4 * 5 / 4) << "plus O(n / stride)";
  std::size_t too_few = bytes - 1;
  poisoned_workspace temp(bytes);
  EXPECT_EQ(gpusort::sort_keys(temp.ptr, too_few, d.data(), input.size(), sample_options(false, false)),
            cudaErrorInvalidValue);
  std::size_t any = bytes;
  EXPECT_EQ(gpusort::sort_keys(temp.ptr, any, d.data(), input.size(), sample_options(false, false, 48)),
            cudaErrorInvalidValue);
  EXPECT_EQ(d.to_host(), input) << "rejected calls leave the keys alone";
  // The convenience layer allocates, sorts and frees.
  gpusort::sort(std::span<std::uint32_t>(d.data(), input.size()), sample_options(true, true));
  EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, true)));
}

TEST(GpuSampleSortApi, WorksInsideGraphCapture) {
  GPUSORT_REQUIRE_GPU();
  const auto input = tools::generate<std::int64_t>(tools::distribution::gaussian, 2000001, 12);
  guarded_buffer<std::int64_t> d(input);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  gpusort::options opt = sample_options(false, false);
  opt.stream = stream;
  std::size_t bytes = 0;
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), opt));
  poisoned_workspace temp(bytes);
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t sorted = gpusort::sort_keys(temp.ptr, bytes, d.data(), input.size(), opt);
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

TEST(GpuSampleSortHuge, MoreThan2To31KeysOnTheDevice) {
  GPUSORT_REQUIRE_GPU();
  const std::uint64_t n = (std::uint64_t{1} << 31) + 11;
  std::size_t bytes = 0;
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * 4 * 2 + (std::size_t{3} << 30)) GTEST_SKIP() << "needs 2 x " << n * 4 << " bytes";
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  fill_shuffled<<<4096, 256>>>(keys, n);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys, n, sample_options(false, false)));
  poisoned_workspace temp(bytes);
  ASSERT_NE(temp.ptr, nullptr);
  CUDA_OK(gpusort::sort_keys(temp.ptr, bytes, keys, n, sample_options(false, false)));
  EXPECT_EQ(count_misplaced(keys, n), 0u);
  cudaFree(keys);
}
