// The device sample sort's own properties: bucket counts at larger sizes, both samplings
// with pairs, the bucket bound checked on the device on adversarial inputs, a user
// comparator on records, workspace errors. Sizes, distributions, orders, pairs, graph capture
// and n >= 2^31: test_gpu_conformance.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "shuffled_keys.cuh"

using namespace gpusort::testing;
namespace tools = gpusort::tools;
namespace net = gpusort::detail::index_math;

GPUSORT_TYPED_SUITE(GpuSampleSort, GpuTest, key_types);

gpusort::options sample_options(bool random, bool descending, unsigned buckets = 0) {
  return {.algo = gpusort::algorithm::sample_sort,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending,
          .sampler = random ? gpusort::sampling::random : gpusort::sampling::regular,
          .buckets = buckets};
}

template <class K>
void check_keys(const std::vector<K>& keys, const gpusort::options& opt) {
  check_device_sort(keys, opt, [](std::size_t) {});
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

// Values through the levels (the network takes arrays up to 2^22 under the default plan, so
// the conformance suite's pairs do not reach them): both samplings, both orders, 4- and
// 8-byte values, level counts odd (s = 1024: one level, the randomized sampling's copy back)
// and even (s = 4: six, whose final buckets pass a block; the default at 10^7, randomized,
// 4-byte values).
template <class K, class V>
void check_level_pairs(const std::vector<K>& input, const gpusort::options& opt) {
  const std::size_t n = input.size();
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<V>(i);
  guarded_buffer<K> dk(input);
  guarded_buffer<V> dv(values);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_pairs(nullptr, bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  poisoned_workspace temp(bytes);
  ASSERT_EQ(gpusort::sort_pairs(temp.ptr, bytes, dk.data(), dv.data(), n, opt), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> keys = dk.to_host();
  ASSERT_TRUE(same_bits(keys, reference_sort(input, opt.direction == gpusort::order::descending)));
  ASSERT_TRUE(values_follow_keys(input, keys, dv.to_host(), [](std::size_t i) { return static_cast<V>(i); }));
  ASSERT_TRUE(dk.guard_intact());
  ASSERT_TRUE(dv.guard_intact());
}

TYPED_TEST(GpuSampleSort, PairsThroughTheLevels) {
  using K = TypeParam;
  for (unsigned buckets : {4u, 1024u, 0u}) {
    const std::size_t n = buckets == 0 ? 10000019 : (std::size_t{1} << 20) + 1;
    const std::vector<K> input = tools::generate<K>(tools::distribution::few_unique, n, n + buckets);
    for (bool random : {false, true}) {
      for (bool descending : {false, true}) {
        if (buckets == 0 && !random) continue;  // 10^7 regular: test_gpu_conformance's keys
        SCOPED_TRACE(::testing::Message() << "n=" << n << " buckets=" << buckets
                                          << " random=" << random << " descending=" << descending);
        const gpusort::options opt = sample_options(random, descending, buckets);
        check_level_pairs<K, std::uint32_t>(input, opt);
        if (buckets != 0) check_level_pairs<K, std::uint64_t>(input, opt);
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
  // A null workspace asks for its size: with none needed, any non-null address.
  poisoned_workspace temp(bytes);
  void* t = bytes ? temp.ptr : static_cast<void*>(d.data());
  CUDA_OK(device::sample_sort(t, bytes, d.data(), static_cast<no_value*>(nullptr), n,
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

// Above the keys that the default plan hands whole to the bitonic network, so that buckets 0
// (the default) runs its levels too.
TEST(GpuSampleSortBound, HoldsOnAdversarialInputs) {
  GPUSORT_REQUIRE_GPU();
  using policy = gpusort::detail::device::sample_sort_policy<std::uint32_t, gpusort::detail::no_value>;
  const std::size_t n = policy::whole_bitonic_max + 17;
  for (unsigned buckets : {0u, 8u, 256u}) {
    const unsigned stride = (1u << 14) / (buckets ? buckets : 256u);
    std::vector<std::vector<std::uint32_t>> inputs =
        against_regular_sampling(n, stride, 1u << 14, 5u);
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

// Records take the merge-sorted tiles and final buckets; 4 buckets per level leave final
// buckets above a tile, which go on to the segmented sort.
TEST(GpuSampleSortComparator, SixteenByteRecordsByTwoFields) {
  GPUSORT_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{40000}, std::size_t{2000003}})
    for (bool random : {false, true})
      for (bool descending : {false, true})
        for (unsigned buckets : {0u, 4u}) {
          if (buckets && n < 40000) continue;
          SCOPED_TRACE(::testing::Message() << "n=" << n << " random=" << random
                                            << " descending=" << descending << " buckets=" << buckets);
          std::vector<record> recs(n);
          for (std::size_t i = 0; i < n; ++i)
            recs[i] = {static_cast<std::uint32_t>(tools::random_bits(1, i) % 100),
                       static_cast<std::uint32_t>(tools::random_bits(2, i) % 5000), i};
          std::vector<record> expect = recs;
          std::stable_sort(expect.begin(), expect.end(), by_major_then_minor{});
          if (descending) std::reverse(expect.begin(), expect.end());
          guarded_buffer<record> d(recs);
          const gpusort::options opt = sample_options(random, descending, buckets);
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

// Records' final buckets by size, through the sorts of sample_sort's last step
// (sort_record_buckets): up to a tile sorted by its block, up to twice a tile by the twice-tile
// kernel (listed), larger ones left untouched to the segmented sort (their segment the bucket,
// every other segment empty). Mirrored too (a descending sort's buckets, reversed order).
TEST(GpuSampleSortBuckets, RecordBucketsOfEverySizeAroundTheTile) {
  GPUSORT_REQUIRE_GPU();
  namespace dev = gpusort::detail::device;
  using gpusort::detail::no_value;
  using policy = dev::sample_sort_policy<record, no_value>;
  const std::uint64_t tile = policy::final_cap;
  ASSERT_EQ((dev::twice_tile_cap<policy, record, no_value>), 2 * tile);
  const std::vector<std::uint64_t> sizes{0, 1, 2, tile - 1, tile, tile + 1, 5, 2 * tile - 1,
                                         2 * tile, 2 * tile + 1, 3 * tile + 7, tile + 2};
  std::vector<std::uint64_t> offsets(sizes.size());
  std::uint64_t n = 0;
  for (std::size_t q = 0; q < sizes.size(); ++q) {
    offsets[q] = n;
    n += sizes[q];
  }
  std::vector<record> recs(n);
  for (std::uint64_t i = 0; i < n; ++i)
    recs[i] = {static_cast<std::uint32_t>(tools::random_bits(3, i) % 50),
               static_cast<std::uint32_t>(tools::random_bits(4, i) % 700), i};
  for (bool mirror : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "mirror=" << mirror);
    guarded_buffer<record> keys(recs);
    guarded_buffer<std::uint64_t> device_offsets(offsets);
    net::sample_plan plan;
    plan.final_problems = sizes.size();
    dev::sample_workspace<record, no_value> ws(nullptr, plan, n, true, 0, 0);
    poisoned_workspace temp(ws.total);
    ws = dev::sample_workspace<record, no_value>(temp.ptr, plan, n, true, 0, 0);
    const net::problem_list buckets{device_offsets.data(), 1, sizes.size(), n};
    const cudaError_t e =
        mirror ? dev::sort_record_buckets<policy>(keys.data(), static_cast<no_value*>(nullptr),
                                                  buckets, true, ws, true,
                                                  net::reversed<by_major_then_minor>{{}}, nullptr)
               : dev::sort_record_buckets<policy>(keys.data(), static_cast<no_value*>(nullptr),
                                                  buckets, false, ws, true, by_major_then_minor{},
                                                  nullptr);
    ASSERT_EQ(e, cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<record> got = keys.to_host();
    std::vector<std::uint64_t> begin(sizes.size()), end(sizes.size());
    unsigned listed = 0;
    CUDA_OK(cudaMemcpy(begin.data(), ws.segment_begin, 8 * sizes.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(end.data(), ws.segment_end, 8 * sizes.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&listed, ws.twice_listed, sizeof listed, cudaMemcpyDeviceToHost));
    const net::problem_list host_buckets{offsets.data(), 1, sizes.size(), n};
    unsigned twice = 0;
    for (std::size_t q = 0; q < sizes.size(); ++q) {
      SCOPED_TRACE(::testing::Message() << "bucket " << q << " of " << sizes[q] << " records");
      const net::key_range r = net::final_bucket_range(host_buckets, q, mirror);
      ASSERT_EQ(r.end - r.begin, sizes[q]);
      const bool segmented = sizes[q] > 2 * tile;
      twice += sizes[q] > tile && !segmented;
      EXPECT_EQ(begin[q], r.begin);
      EXPECT_EQ(end[q], segmented ? r.end : r.begin);
      std::vector<record> expect(recs.begin() + r.begin, recs.begin() + r.end);
      if (!segmented) {
        std::stable_sort(expect.begin(), expect.end(), by_major_then_minor{});
        if (mirror) std::reverse(expect.begin(), expect.end());
      }
      std::vector<bool> seen(n, false);
      for (std::uint64_t i = r.begin; i < r.end; ++i) {
        const record& x = got[i];
        const record& y = expect[i - r.begin];
        ASSERT_EQ(x.major, y.major) << i;
        ASSERT_EQ(x.minor, y.minor) << i;
        ASSERT_TRUE(x.payload >= r.begin && x.payload < r.end && !seen[x.payload]) << i;
        seen[x.payload] = true;
        if (segmented) ASSERT_EQ(x.payload, i) << "left to the segmented sort untouched";
      }
    }
    EXPECT_EQ(listed, twice);
    EXPECT_TRUE(keys.guard_intact());
  }
}

// The plans (host code, no GPU needed): records' short tiles still take at most one sample
// per 16 records by default, every level makes progress, and the final buckets fit the block
// that sorts them; randomized sampling's plans fit the classifying kernels.
template <class K, class V>
void check_default_plans() {
  using namespace gpusort::detail;
  using policy = device::sample_sort_policy<K, V>;
  static_assert(policy::default_bucket_bits <= policy::finish_bucket_bits);
  static_assert(policy::finish_bucket_bits <= policy::max_bucket_bits);
  for (std::uint64_t n : {std::uint64_t{1} << 16, std::uint64_t{3000017}, std::uint64_t{1} << 24,
                          std::uint64_t{1} << 28, std::uint64_t{5} << 30}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " slot=" << policy::slot_bytes);
    const net::sample_plan plan = device::plan_for<K, V>(n, 0);
    for (int l = 0; l < plan.count; ++l) {
      const net::sample_level& lv = plan.levels[l];
      if (policy::merge_tiles) EXPECT_GE(lv.stride(), 16) << "level " << l;
      EXPECT_LT(lv.bucket_bound(lv.cap), lv.cap) << "level " << l;
    }
    EXPECT_LE(plan.final_cap, policy::final_cap);
    // Randomized sampling's: every level within the classifying kernels' tables; a level of
    // many problems sorts them by blocks (one of few, CUB's device merge sort: cap 0), and
    // where a problem has more samples than its block sorts, the kept ones still 16 a bucket.
    const net::sample_plan random =
        device::with_random_samples<K, V>(device::random_plan_for<K, V>(n));
    for (int l = 0; l < random.count; ++l) {
      const net::sample_level& lv = random.levels[l];
      EXPECT_LE(lv.bucket_bits, policy::max_bucket_bits) << "random level " << l;
      EXPECT_EQ(lv.sorted_cap == 0, lv.problems < net::block_sorted_min_problems)
          << "random level " << l;
      if (lv.sorted_cap != 0 && lv.samples(lv.cap) > lv.sorted_cap)
        EXPECT_GE(lv.sorted_cap / lv.buckets(), 16u) << "random level " << l;
      // Records: 32 samples a bucket from few tiles too, where a sample every 16 records
      // gives them (a bucket above twice its mean overflows its tile).
      if (policy::merge_tiles) {
        EXPECT_GE(lv.stride(), 16u) << "random level " << l;
        EXPECT_TRUE(lv.samples(lv.cap) / lv.buckets() >= net::random_samples_per_bucket ||
                    lv.stride() == 16u)
            << "random level " << l << ": " << lv.samples(lv.cap) << " samples";
      }
    }
  }
}

TEST(SampleSortPlan, RecordsKeepFewSamplesAndFinalBucketsFit) {
  struct rec32 {
    std::uint64_t a, b, c, d;
  };
  using namespace gpusort::detail;
  check_default_plans<std::uint32_t, no_value>();
  check_default_plans<std::uint64_t, no_value>();
  check_default_plans<std::uint32_t, payload<4>>();
  check_default_plans<std::uint32_t, payload<8>>();
  check_default_plans<record, no_value>();
  check_default_plans<rec32, no_value>();
  static_assert(device::sample_sort_policy<record, no_value>::merge_tiles);
  static_assert(!device::sample_sort_policy<std::uint64_t, no_value>::merge_tiles);
}

// Above the keys that the sample sort hands whole to the bitonic network.
TEST(GpuSampleSortApi, WorkspaceAndBadInput) {
  GPUSORT_REQUIRE_GPU();
  using policy = gpusort::detail::device::sample_sort_policy<std::uint32_t, gpusort::detail::no_value>;
  const auto input = tools::generate<std::uint32_t>(tools::distribution::uniform,
                                                    policy::whole_bitonic_max + 1, 5);
  guarded_buffer<std::uint32_t> d(input);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), input.size(), sample_options(false, false)),
            cudaSuccess);
  EXPECT_GE(bytes, input.size() * 4) << "a second buffer of keys";
  // Plus the samples, the count matrices and CUB's scratch: 30.4 MB in all for 2^22 keys
  // (H200, 7568649), under twice the keys' bytes.
  EXPECT_LT(bytes, input.size() * 4 * 2) << "plus the samples and counts";
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


// Up to whole_bitonic_max keys the default plan is the bitonic network on the whole array: no
// workspace beyond the query's byte; an explicit bucket count keeps the levels (and their
// workspace). Both sort, in both orders.
TEST(GpuSampleSortApi, FewKeysTakeTheBitonicNetwork) {
  GPUSORT_REQUIRE_GPU();
  using policy = gpusort::detail::device::sample_sort_policy<std::uint64_t, gpusort::detail::no_value>;
  for (const std::size_t n : {std::size_t{65537}, std::size_t{policy::whole_bitonic_max}})
    for (const unsigned buckets : {0u, 64u})
      for (const bool descending : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " buckets=" << buckets << " desc=" << descending);
        const auto input = tools::generate<std::uint64_t>(tools::distribution::zipf, n, n + buckets);
        guarded_buffer<std::uint64_t> d(input);
        const gpusort::options opt = sample_options(false, descending, buckets);
        std::size_t bytes = 0;
        ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), n, opt), cudaSuccess);
        if (buckets == 0)
          EXPECT_LE(bytes, 1u);
        else
          EXPECT_GE(bytes, n * sizeof(std::uint64_t)) << "the levels' buffer";
        poisoned_workspace temp(bytes);
        ASSERT_EQ(gpusort::sort_keys(temp.ptr, bytes, d.data(), n, opt), cudaSuccess);
        EXPECT_TRUE(same_bits(d.to_host(), reference_sort(input, descending)));
        EXPECT_TRUE(d.guard_intact());
      }
}
