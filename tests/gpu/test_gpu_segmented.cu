// Batched and segmented sorts on the device against std::stable_sort per segment: every key
// type, every size class (0, 1, 2, 31, 32, 33, ..., 1023, 4097, long segments), mixed
// power-law sizes, gaps between segments (never written), shuffled segment lists, pairs,
// both orders, indices made by the sort, a user comparator, the CUB baselines, bad offsets,
// graph capture, n >= 2^31.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/tabulate.h>

#include "device_buffer.hpp"
#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/detail/index_math/segments.hpp"
#include "gpusort/sort.cuh"
#include "gpusort/sort.hpp"
#include "reference.hpp"
#include "segments_reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

namespace {

GPUSORT_TYPED_SUITE(GpuSegmented, GpuTest, key_types);

using GpuSegmentedApi = GpuTest;

gpusort::options make_options(bool descending,
                              gpusort::algorithm algo = gpusort::algorithm::automatic) {
  return {.algo = algo,
          .direction = descending ? gpusort::order::descending : gpusort::order::ascending};
}

// Sorts `keys` in the segments of `l` through the core layer (offsets of type O), with the
// workspace the query asks for, and compares with the reference.
template <class K, class O>
void check_segmented(const std::vector<K>& keys, const layout& l, bool descending,
                     gpusort::algorithm algo = gpusort::algorithm::automatic) {
  const std::vector<K> expect = reference_segmented(keys, l, descending);
  guarded_buffer<K> d(keys);
  guarded_buffer<O> begin(narrow<O>(l.begin)), end(narrow<O>(l.end));
  const auto opt = make_options(descending, algo);
  const std::uint64_t count = l.begin.size();
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, d.data(), keys.size(), begin.data(),
                                         end.data(), count, opt),
            cudaSuccess);
  if (algo == gpusort::algorithm::automatic) {
    // index_math::segment_workspace: up to 8 lists of 4-byte entries, each with room for every
    // segment but never more in all than n / 32 entries; 8 bytes per possible long segment
    // (over 2^10 keys at any slot size); 128 bytes of counters.
    const std::uint64_t n = keys.size();
    const std::uint64_t list_entries = std::min<std::uint64_t>(8 * count, n / 32 + 8);
    const std::uint64_t long_entries = std::min<std::uint64_t>(count, n >> 10) + 1;
    EXPECT_LE(bytes, 128 + 4 * list_entries + 8 + 8 * long_entries)
        << "lists of tile and long segments, their work offsets and a few counters";
  }
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes ? bytes : 1));
  // Poison the workspace: the sort must not rely on it starting zeroed.
  CUDA_OK(cudaMemset(temp, 0xA5, bytes ? bytes : 1));
  const cudaError_t e = gpusort::sort_segmented_keys(temp, bytes, d.data(), keys.size(),
                                                     begin.data(), end.data(), count, opt);
  CUDA_OK(cudaDeviceSynchronize());
  cudaFree(temp);
  ASSERT_EQ(e, cudaSuccess);
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact()) << "wrote past n";
}

template <class K>
void check_batched(const std::vector<K>& keys, std::uint64_t batch_count,
                   std::uint64_t batch_size, bool descending) {
  std::vector<std::uint64_t> sizes(batch_count, batch_size);
  const std::vector<K> expect = reference_segmented(keys, make_layout(sizes), descending);
  guarded_buffer<K> d(keys);
  const auto opt = make_options(descending);
  std::size_t bytes = 1;
  ASSERT_EQ(gpusort::sort_batched_keys(nullptr, bytes, d.data(), batch_count, batch_size, opt),
            cudaSuccess);
  ASSERT_EQ(bytes, 1u) << "batched sorts sort in place (the query still says 1 byte)";
  ASSERT_EQ(gpusort::sort_batched_keys(d.data(), bytes, d.data(), batch_count, batch_size, opt),
            cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(same_bits(d.to_host(), expect));
  ASSERT_TRUE(d.guard_intact());
}

// Sizes of every class boundary: tiny, shuffle classes, warp tiles, block tiles, long.
const std::vector<std::uint64_t> class_sizes = {0,    1,    2,    3,    31,   32,   33,
                                                63,   64,   65,   127,  129,  255,  256,
                                                257,  511,  513,  1023, 1024, 1025, 2047,
                                                2049, 4095, 4096, 4097, 8191, 8193, 20011};

// Sorts pairs (value = the key's original index, widened to V) in the segments of `l` and
// checks the keys against the reference and that every value still names its key.
template <class K, class V>
void check_pairs(const std::vector<K>& keys, const layout& l, bool descending) {
  SCOPED_TRACE(::testing::Message() << "value bytes " << sizeof(V) << " desc=" << descending);
  const std::uint64_t count = l.begin.size();
  std::vector<V> values(l.n);
  for (std::size_t i = 0; i < l.n; ++i) {
    std::memset(&values[i], 0, sizeof(V));
    std::memcpy(&values[i], &i, std::min(sizeof(V), sizeof(i)));
  }
  guarded_buffer<K> dk(keys);
  guarded_buffer<V> dv(values);
  guarded_buffer<std::uint32_t> begin(narrow<std::uint32_t>(l.begin)),
      end(narrow<std::uint32_t>(l.end));
  std::size_t bytes = 0;
  const auto opt = make_options(descending);
  ASSERT_EQ(gpusort::sort_segmented_pairs(nullptr, bytes, dk.data(), dv.data(), l.n,
                                          begin.data(), end.data(), count, opt),
            cudaSuccess);
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes));
  ASSERT_EQ(gpusort::sort_segmented_pairs(temp, bytes, dk.data(), dv.data(), l.n, begin.data(),
                                          end.data(), count, opt),
            cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  cudaFree(temp);
  const std::vector<K> out_keys = dk.to_host();
  const std::vector<V> out_values = dv.to_host();
  ASSERT_TRUE(same_bits(out_keys, reference_segmented(keys, l, descending)));
  // Every value is the index of a key of its own segment, equal to the key beside it.
  std::vector<std::uint64_t> segment_of(l.n, ~std::uint64_t{0});
  for (std::size_t s = 0; s < count; ++s)
    for (std::uint64_t i = l.begin[s]; i < l.end[s]; ++i) segment_of[i] = s;
  std::vector<bool> seen(l.n, false);
  for (std::size_t i = 0; i < l.n; ++i) {
    std::uint64_t origin = 0;
    std::memcpy(&origin, &out_values[i], std::min(sizeof(V), sizeof(origin)));
    if (sizeof(V) == 4) origin &= 0xFFFFFFFFull;
    ASSERT_LT(origin, l.n) << "value corrupted at " << i;
    ASSERT_FALSE(seen[origin]) << "value " << origin << " twice";
    seen[origin] = true;
    ASSERT_EQ(segment_of[origin], segment_of[i]) << "value left its segment at " << i;
    ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[origin]),
              gpusort::key_traits<K>::ordered(out_keys[i]))
        << "value " << origin << " left its key";
  }
  ASSERT_TRUE(dv.guard_intact());
}

struct alignas(16) wide_value {
  std::uint64_t a, b;
};

// The argsort forms: sorts `keys` with indices made by the sort (sort_batched_with_indices
// for a layout of equal sizes without gaps when `batched`, else sort_segmented_with_indices)
// into a poisoned index array, and checks the keys against the reference, that every index
// names a key of its own segment once, the key beside it, and that indices outside every
// segment keep the poison.
template <class K, class I>
void check_with_indices(const std::vector<K>& keys, const layout& l, bool descending,
                        gpusort::algorithm algo, bool batched) {
  SCOPED_TRACE(::testing::Message() << "index bytes " << sizeof(I) << " desc=" << descending
                                    << " " << gpusort::to_string(algo)
                                    << (batched ? " batched" : " segmented"));
  const std::uint64_t count = l.begin.size();
  const I poison = static_cast<I>(0xA5A5A5A5A5A5A5A5ull);
  guarded_buffer<K> dk(keys);
  guarded_buffer<I> di(std::vector<I>(l.n, poison));
  guarded_buffer<std::uint64_t> begin(l.begin), end(l.end);
  const auto opt = make_options(descending, algo);
  const std::uint64_t row = batched && count ? l.end[0] - l.begin[0] : 0;
  const auto sort = [&](void* temp, std::size_t& bytes) {
    return batched ? gpusort::sort_batched_with_indices(temp, bytes, dk.data(), di.data(), count,
                                                        row, opt)
                   : gpusort::sort_segmented_with_indices(temp, bytes, dk.data(), di.data(), l.n,
                                                          begin.data(), end.data(), count, opt);
  };
  std::size_t bytes = 0;
  ASSERT_EQ(sort(nullptr, bytes), cudaSuccess);
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes ? bytes : 1));
  CUDA_OK(cudaMemset(temp, 0xA5, bytes ? bytes : 1));
  const cudaError_t e = sort(temp, bytes);
  CUDA_OK(cudaDeviceSynchronize());
  cudaFree(temp);
  ASSERT_EQ(e, cudaSuccess);
  const std::vector<K> out_keys = dk.to_host();
  const std::vector<I> out_indices = di.to_host();
  ASSERT_TRUE(same_bits(out_keys, reference_segmented(keys, l, descending)));
  std::vector<bool> in_segment(l.n, false);
  for (std::size_t s = 0; s < count; ++s) {
    const std::uint64_t b = l.begin[s], m = l.end[s] - b;
    std::vector<bool> seen(m, false);
    for (std::uint64_t j = b; j < b + m; ++j) {
      in_segment[j] = true;
      const std::uint64_t at = out_indices[j];
      ASSERT_LT(at, m) << "index out of its segment at " << j << " (segment " << s << ")";
      ASSERT_FALSE(seen[at]) << "index " << at << " twice in segment " << s;
      seen[at] = true;
      ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[b + at]),
                gpusort::key_traits<K>::ordered(out_keys[j]))
          << "index " << at << " does not name the key at " << j;
    }
  }
  for (std::size_t j = 0; j < l.n; ++j)
    if (!in_segment[j]) ASSERT_EQ(out_indices[j], poison) << "index written outside at " << j;
  ASSERT_TRUE(di.guard_intact()) << "wrote past n";
}

}  // namespace

TYPED_TEST(GpuSegmented, BatchesOfEverySize) {
  using K = TypeParam;
  for (std::uint64_t size : class_sizes) {
    const std::uint64_t count = std::max<std::uint64_t>(3, (std::uint64_t{1} << 17) / (size + 1));
    for (bool descending : {false, true}) {
      const tools::distribution dist =
          descending ? tools::distribution::few_unique : tools::distribution::uniform;
      SCOPED_TRACE(::testing::Message() << "batch size " << size << " x " << count
                                        << " desc=" << descending);
      std::vector<K> keys = tools::generate<K>(dist, count * size, size + 17);
      scatter_special_values(keys, size);
      check_batched(keys, count, size, descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(GpuSegmented, SegmentsOfEverySizeWithGapsInAnyOrder) {
  using K = TypeParam;
  for (std::uint64_t size : class_sizes) {
    std::vector<std::uint64_t> sizes(std::max<std::uint64_t>(3, 60000 / (size + 1)), size);
    for (bool wide : {false, true}) {
      const layout l = make_layout(sizes, wide ? 5 : 0, wide, size);
      SCOPED_TRACE(::testing::Message() << "segment size " << size << " x " << sizes.size()
                                        << (wide ? " u64 offsets, gaps, shuffled" : " u32"));
      std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, l.n, size);
      scatter_special_values(keys, size + 1);
      if (wide)
        check_segmented<K, std::uint64_t>(keys, l, size % 2 == 1);
      else
        check_segmented<K, std::uint32_t>(keys, l, size % 2 == 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(GpuSegmented, MixedSizesOnEveryDistribution) {
  using K = TypeParam;
  std::vector<std::uint64_t> sizes = power_law_sizes(1 << 19, 5);
  // Every awkward size too, and long ones among the many short.
  for (std::uint64_t m : {0, 1, 2, 31, 32, 33, 1023, 4097, 40000, 70001, 200003})
    sizes.insert(sizes.begin() + (m * 7919) % sizes.size(), m);
  const layout l = make_layout(sizes, 3, true, 9);
  for (tools::distribution dist : tools::all_distributions) {
    SCOPED_TRACE(::testing::Message() << "dist=" << tools::to_string(dist));
    const std::vector<K> keys = tools::generate<K>(dist, l.n, static_cast<int>(dist) + 3);
    check_segmented<K, std::int64_t>(keys, l, dist == tools::distribution::zipf);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Segments of 64 keys or fewer on average, with larger ones of every class and long ones
// among them: the window worker lists those as it goes rather than a classification pass
// before it (device::segment_launcher::run_all).
TYPED_TEST(GpuSegmented, MostlySmallSegmentsListTheLargerOnesAsTheyGo) {
  using K = TypeParam;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t i = 0; i < 30000; ++i) sizes.push_back(i * 7 % 41);
  for (std::uint64_t m : {65, 100, 128, 129, 300, 1000, 1025, 3000, 5000, 9000, 20011, 70001})
    sizes.insert(sizes.begin() + (m * 7919) % sizes.size(), m);
  const layout l = make_layout(sizes, 0, true, 21);
  ASSERT_LE(l.n, 64 * sizes.size()) << "the test needs segments of 64 keys or fewer on average";
  std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, l.n, 21);
  scatter_special_values(keys, 61);
  check_segmented<K, std::uint64_t>(keys, l, false);
  check_pairs<K, std::uint32_t>(keys, l, true);
  check_with_indices<K, std::uint32_t>(keys, l, false, gpusort::algorithm::automatic, false);
}

TYPED_TEST(GpuSegmented, PairsKeepTheirValues) {
  using K = TypeParam;
  std::vector<std::uint64_t> sizes = power_law_sizes(1 << 16, 11);
  for (std::uint64_t m : {2, 33, 257, 1023, 4097, 9000, 30000})
    sizes.insert(sizes.begin() + (m * 131) % sizes.size(), m);
  const layout l = make_layout(sizes, 2, false, 4);
  const std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, l.n, 8);
  check_pairs<K, std::uint32_t>(keys, l, false);
  check_pairs<K, std::uint64_t>(keys, l, true);
  check_pairs<K, wide_value>(keys, l, false);
}

// Indices made by the sort, not read: every size class (long segments too), both index
// widths, both orders, batches and segments with gaps in any order; CUB's sorts (which read
// their values, written first) for 4-byte indices.
TYPED_TEST(GpuSegmented, IndicesAreMadeByTheSort) {
  using K = TypeParam;
  std::vector<std::uint64_t> sizes = power_law_sizes(1 << 17, 12);
  for (std::uint64_t m : {2, 31, 33, 129, 257, 1023, 2049, 4097, 9000, 20011})
    sizes.insert(sizes.begin() + (m * 257) % sizes.size(), m);
  const layout l = make_layout(sizes, 3, true, 5);
  std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, l.n, 14);
  scatter_special_values(keys, 97);
  for (bool descending : {false, true}) {
    check_with_indices<K, std::uint32_t>(keys, l, descending, gpusort::algorithm::automatic, false);
    check_with_indices<K, std::uint64_t>(keys, l, !descending, gpusort::algorithm::automatic, false);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (auto algo : {gpusort::algorithm::cub_radix, gpusort::algorithm::cub_merge})
    check_with_indices<K, std::uint32_t>(keys, l, true, algo, false);
  // A single key, alone or in a row: sorted already, but owed its index.
  const std::vector<K> one = {keys[0]};
  check_with_indices<K, std::uint32_t>(one, make_layout({1}), false,
                                       gpusort::algorithm::automatic, false);
  check_with_indices<K, std::uint64_t>(one, make_layout({1}), false,
                                       gpusort::algorithm::automatic, true);
  for (std::uint64_t size : {1, 2, 32, 100, 128, 1000, 3000, 9000}) {
    const std::uint64_t count = std::max<std::uint64_t>(3, (std::uint64_t{1} << 16) / size);
    const layout rows = make_layout(std::vector<std::uint64_t>(count, size));
    std::vector<K> row_keys = tools::generate<K>(tools::distribution::uniform, rows.n, size);
    scatter_special_values(row_keys, size + 3);
    check_with_indices<K, std::uint32_t>(row_keys, rows, size % 2 == 1,
                                         gpusort::algorithm::automatic, true);
    check_with_indices<K, std::uint64_t>(row_keys, rows, false, gpusort::algorithm::automatic,
                                         true);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Partial segments are padded with the largest key (the smallest descending) where keys are
// integers or float codes: real keys equal to it, with values beside them, must keep them.
TYPED_TEST(GpuSegmented, PairsWhoseKeysEqualThePaddingKeepTheirValues) {
  using K = TypeParam;
  using bits = std::conditional_t<sizeof(K) == 4, std::uint32_t, std::uint64_t>;
  // Extreme bit patterns: the largest and smallest integers; for floats, the keys whose codes
  // are the padding keys under either NaN placement (infinities, NaNs of payload 1).
  const bits top = ~bits{0}, half = top >> 1;
  std::vector<bits> extremes = {top, half, half + 1, 0};
  if constexpr (std::is_floating_point_v<K>)
    for (bool descending : {false, true})
      for (bool nans_lowest : {false, true})
        extremes.push_back(gpusort::detail::float_order<K>::from_code(
            gpusort::detail::index_math::padding_key<bits>(descending), nans_lowest));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t m : {3, 5, 17, 33, 100, 129, 200, 300, 513, 1000, 2000, 3000, 5000})
    for (int copies = 0; copies < 40; ++copies) sizes.push_back(m);
  const layout l = make_layout(sizes, 0, false, 6);
  std::vector<K> keys = tools::generate<K>(tools::distribution::uniform, l.n, 21);
  std::mt19937_64 rng(21);
  for (K& k : keys)
    if (rng() % 3 == 0) {
      const bits b = extremes[rng() % extremes.size()];
      std::memcpy(&k, &b, sizeof(K));
    }
  check_pairs<K, std::uint32_t>(keys, l, false);
  check_pairs<K, std::uint32_t>(keys, l, true);
  check_pairs<K, std::uint64_t>(keys, l, false);
}

TYPED_TEST(GpuSegmented, ConvenienceLayerOnDeviceAndHostArrays) {
  using K = TypeParam;
  const std::vector<std::uint64_t> sizes = power_law_sizes(20000, 3);
  const layout l = make_layout(sizes);
  const std::vector<K> keys = tools::generate<K>(tools::distribution::gaussian, l.n, 2);
  std::vector<std::uint32_t> offsets = narrow<std::uint32_t>(l.begin);
  offsets.push_back(static_cast<std::uint32_t>(l.n));
  // device spans
  guarded_buffer<K> d(keys);
  guarded_buffer<std::uint32_t> d_offsets(offsets);
  gpusort::sort_segmented(std::span<K>(d.data(), l.n),
                          std::span<const std::uint32_t>(d_offsets.data(), offsets.size()));
  EXPECT_TRUE(same_bits(d.to_host(), reference_segmented(keys, l, false)));
  // host vectors
  std::vector<K> host = keys;
  gpusort::sort_segmented(host, offsets, make_options(true));
  EXPECT_TRUE(same_bits(host, reference_segmented(keys, l, true)));
  std::vector<K> rows = tools::generate<K>(tools::distribution::uniform, 100 * 300, 4);
  const std::vector<K> rows_in = rows;
  gpusort::sort_batched(rows, 100, 300);
  EXPECT_TRUE(same_bits(rows, reference_segmented(rows_in, make_layout(std::vector<std::uint64_t>(100, 300)), false)));
}

namespace {
struct point {
  float x, y, z;
};
struct by_x_then_y {
  __host__ __device__ bool operator()(const point& a, const point& b) const {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
  }
};
}  // namespace

TEST_F(GpuSegmentedApi, UserComparator) {
  const layout l = make_layout(power_law_sizes(50000, 7), 1, true, 3);
  std::vector<point> pts(l.n);
  for (std::size_t i = 0; i < l.n; ++i)
    pts[i] = {float(tools::random_bits(1, i) % 50), float(tools::random_bits(2, i) % 1000),
              float(i)};
  guarded_buffer<point> d(pts);
  guarded_buffer<std::uint64_t> begin(l.begin), end(l.end);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, d.data(), l.n, begin.data(),
                                         end.data(), l.begin.size(), by_x_then_y{}),
            cudaSuccess);
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes));
  ASSERT_EQ(gpusort::sort_segmented_keys(temp, bytes, d.data(), l.n, begin.data(), end.data(),
                                         l.begin.size(), by_x_then_y{},
                                         make_options(true, gpusort::algorithm::bitonic)),
            cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  cudaFree(temp);
  const std::vector<point> out = d.to_host();
  std::vector<bool> in_segment(l.n, false);
  for (std::size_t s = 0; s < l.begin.size(); ++s) {
    for (std::uint64_t i = l.begin[s]; i < l.end[s]; ++i) in_segment[i] = true;
    for (std::uint64_t i = l.begin[s] + 1; i < l.end[s]; ++i)
      ASSERT_FALSE(by_x_then_y{}(out[i - 1], out[i])) << "segment " << s << " at " << i;
    double sum_in = 0, sum_out = 0;
    for (std::uint64_t i = l.begin[s]; i < l.end[s]; ++i) {
      sum_in += pts[i].z;
      sum_out += out[i].z;
    }
    ASSERT_EQ(sum_in, sum_out) << "segment " << s << " lost a point";
  }
  for (std::size_t i = 0; i < l.n; ++i)
    if (!in_segment[i]) ASSERT_EQ(out[i].z, pts[i].z) << "gap written at " << i;
  // Batched with a comparator.
  guarded_buffer<point> rows(std::vector<point>(pts.begin(), pts.begin() + 64 * 700));
  ASSERT_EQ(gpusort::sort_batched_keys(rows.data(), bytes, rows.data(), 64, 700, by_x_then_y{}),
            cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<point> sorted_rows = rows.to_host();
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t i = 1; i < 700; ++i)
      ASSERT_FALSE(by_x_then_y{}(sorted_rows[r * 700 + i], sorted_rows[r * 700 + i - 1]));
}

TEST_F(GpuSegmentedApi, CubBaselines) {
  const layout l = make_layout(power_law_sizes(100000, 13), 4, true, 2);
  const std::vector<std::uint32_t> keys =
      tools::generate<std::uint32_t>(tools::distribution::uniform, l.n, 6);
  for (auto algo : {gpusort::algorithm::cub_radix, gpusort::algorithm::cub_merge}) {
    for (bool descending : {false, true}) {
      SCOPED_TRACE(::testing::Message() << gpusort::to_string(algo) << " desc=" << descending);
      check_segmented<std::uint32_t, std::uint32_t>(keys, l, descending, algo);
      if (HasFatalFailure()) return;
    }
  }
  std::size_t bytes = 0;
  EXPECT_EQ(gpusort::sort_batched_keys(nullptr, bytes, static_cast<std::uint32_t*>(nullptr), 0,
                                       0, make_options(false, gpusort::algorithm::thrust)),
            cudaErrorNotSupported);
}

TEST_F(GpuSegmentedApi, BadOffsetsAreRejectedBeforeAnyKeyMoves) {
  const std::vector<std::uint32_t> keys =
      tools::generate<std::uint32_t>(tools::distribution::uniform, 1000, 1);
  guarded_buffer<std::uint32_t> d(keys);
  for (const std::vector<std::int64_t>& offsets :
       {std::vector<std::int64_t>{0, 500, 1001}, std::vector<std::int64_t>{0, 600, 400, 1000},
        std::vector<std::int64_t>{-1, 10}}) {
    guarded_buffer<std::int64_t> d_offsets(offsets);
    try {
      gpusort::sort_segmented(std::span<std::uint32_t>(d.data(), keys.size()),
                              std::span<std::int64_t>(d_offsets.data(), offsets.size()));
      ADD_FAILURE() << "no exception";
    } catch (const gpusort::error& e) {
      EXPECT_EQ(e.code(), cudaErrorInvalidValue);
      EXPECT_NE(std::string(e.what()).find("segment"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("no key was moved"), std::string::npos) << e.what();
    }
    EXPECT_EQ(d.to_host(), keys);
    std::vector<std::uint32_t> host = keys;
    EXPECT_THROW(gpusort::sort_segmented(host, offsets), gpusort::error);
    EXPECT_EQ(host, keys);
  }
  // Sizes that do not match.
  std::vector<std::uint32_t> host = keys;
  EXPECT_THROW(gpusort::sort_batched(host, 3, 300), gpusort::error);
  EXPECT_THROW(gpusort::sort_segmented(host, std::vector<std::uint32_t>{}), gpusort::error);
  EXPECT_EQ(host, keys);
  // The core rejects host pointers and too many segments without touching anything.
  std::size_t bytes = 0;
  const std::vector<std::uint32_t> host_offsets = {0, 10};
  EXPECT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, d.data(), keys.size(),
                                         host_offsets.data(), host_offsets.data() + 1, 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Issue 44: the core skips invalid segments on every path, CUB's too (it read and wrote out
// of bounds): an end past n, an end before its begin, and int64 offsets of 2^63 and more are
// left as they are, the valid segments sorted, and nothing past the keys is written.
TEST_F(GpuSegmentedApi, CoreSkipsInvalidSegmentsOnEveryAlgorithm) {
  const std::vector<std::uint32_t> keys =
      tools::generate<std::uint32_t>(tools::distribution::uniform, 1000, 4);
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::min();  // 2^63 as unsigned
  const std::vector<std::int64_t> begins = {0, 100, 600, 700, huge, 900};
  const std::vector<std::int64_t> ends = {100, 1001, 500, 1000, 10, huge};
  guarded_buffer<std::int64_t> d_begins(begins), d_ends(ends);
  for (auto algo : {gpusort::algorithm::automatic, gpusort::algorithm::bitonic,
                    gpusort::algorithm::cub_radix, gpusort::algorithm::cub_merge}) {
    for (bool stable : {false, true}) {
      SCOPED_TRACE(::testing::Message() << gpusort::to_string(algo) << " stable=" << stable);
      guarded_buffer<std::uint32_t> d(keys);
      gpusort::options opt = make_options(false, algo);
      opt.stable = stable;
      std::size_t bytes = 0;
      ASSERT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, d.data(), keys.size(), d_begins.data(),
                                             d_ends.data(), begins.size(), opt),
                cudaSuccess);
      guarded_buffer<unsigned char> temp(std::vector<unsigned char>(std::max<std::size_t>(bytes, 1)));
      ASSERT_EQ(gpusort::sort_segmented_keys(temp.data(), bytes, d.data(), keys.size(),
                                             d_begins.data(), d_ends.data(), begins.size(), opt),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::uint32_t> expected = keys;
      std::sort(expected.begin(), expected.begin() + 100);
      std::sort(expected.begin() + 700, expected.end());
      EXPECT_EQ(d.to_host(), expected);
      EXPECT_TRUE(d.guard_intact());
      EXPECT_TRUE(temp.guard_intact());
    }
  }
}

TEST_F(GpuSegmentedApi, IndicesThroughTheConvenienceLayer) {
  const std::vector<std::uint32_t> offsets = {0, 3, 3, 10, 1000};
  const std::vector<float> keys = tools::generate<float>(tools::distribution::uniform, 1000, 5);
  guarded_buffer<float> d(keys);
  guarded_buffer<std::uint32_t> d_offsets(offsets);
  guarded_buffer<std::uint64_t> d_indices(std::vector<std::uint64_t>(1000, 7));
  gpusort::sort_segmented_with_indices(std::span<float>(d.data(), 1000),
                                       std::span<std::uint64_t>(d_indices.data(), 1000),
                                       std::span<const std::uint32_t>(d_offsets.data(), 5));
  const std::vector<float> sorted = d.to_host();
  const std::vector<std::uint64_t> indices = d_indices.to_host();
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (std::uint32_t j = offsets[s]; j < offsets[s + 1]; ++j)
      ASSERT_EQ(sorted[j], keys[offsets[s] + indices[j]]) << "at " << j;
  // Rows: torch.sort(x, dim=-1)'s indices.
  guarded_buffer<float> rows(keys);
  guarded_buffer<std::uint32_t> row_indices(std::vector<std::uint32_t>(1000, 7));
  gpusort::sort_batched_with_indices(std::span<float>(rows.data(), 1000),
                                     std::span<std::uint32_t>(row_indices.data(), 1000), 10, 100,
                                     make_options(true));
  const std::vector<float> sorted_rows = rows.to_host();
  const std::vector<std::uint32_t> row_index = row_indices.to_host();
  for (std::size_t j = 0; j < 1000; ++j) {
    ASSERT_LT(row_index[j], 100u);
    ASSERT_EQ(sorted_rows[j], keys[j / 100 * 100 + row_index[j]]) << "at " << j;
  }
  // Wrong sizes, rows too long for 4-byte indices, bad offsets: rejected, nothing moved.
  const auto unchanged = [&] { EXPECT_TRUE(same_bits(rows.to_host(), sorted_rows)); };
  EXPECT_THROW(gpusort::sort_batched_with_indices(std::span<float>(rows.data(), 1000),
                                                  std::span<std::uint32_t>(row_indices.data(), 999),
                                                  10, 100),
               gpusort::error);
  EXPECT_THROW(gpusort::sort_batched_with_indices(std::span<float>(rows.data(), 0),
                                                  std::span<std::uint32_t>(row_indices.data(), 0),
                                                  0, (std::uint64_t{1} << 32) + 1),
               gpusort::error);
  const std::vector<std::int64_t> bad = {0, 600, 400, 1000};
  guarded_buffer<std::int64_t> d_bad(bad);
  EXPECT_THROW(gpusort::sort_segmented_with_indices(
                   std::span<float>(rows.data(), 1000),
                   std::span<std::uint32_t>(row_indices.data(), 1000),
                   std::span<const std::int64_t>(d_bad.data(), bad.size())),
               gpusort::error);
  unchanged();
  EXPECT_EQ(row_indices.to_host(), row_index);
}

TEST_F(GpuSegmentedApi, EmptyInputs) {
  std::size_t bytes = 7;
  EXPECT_EQ(gpusort::sort_batched_keys(nullptr, bytes, static_cast<float*>(nullptr), 0, 5),
            cudaSuccess);
  EXPECT_EQ(bytes, 1u);
  std::vector<float> none;
  gpusort::sort_batched(none, 0, 0);
  gpusort::sort_segmented(none, std::vector<std::uint32_t>{0});
  std::vector<float> some = {3, 1, 2};
  gpusort::sort_batched(some, 3, 1);
  gpusort::sort_segmented(some, std::vector<std::uint64_t>{0, 0, 0});
  EXPECT_EQ(some, (std::vector<float>{3, 1, 2}));
}

TEST_F(GpuSegmentedApi, WorksInsideGraphCapture) {
  const layout l = make_layout(power_law_sizes(30000, 17));
  const std::vector<std::uint32_t> keys =
      tools::generate<std::uint32_t>(tools::distribution::uniform, l.n, 3);
  guarded_buffer<std::uint32_t> d(keys);
  guarded_buffer<std::uint64_t> begin(l.begin), end(l.end);
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, d.data(), l.n, begin.data(),
                                         end.data(), l.begin.size()),
            cudaSuccess);
  void* temp = nullptr;
  CUDA_OK(cudaMalloc(&temp, bytes));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  captured_graph graph;
  cudaError_t e = cudaSuccess;
  ASSERT_NO_FATAL_FAILURE(graph.capture(stream, [&] {
    e = gpusort::sort_segmented_keys(temp, bytes, d.data(), l.n, begin.data(), end.data(),
                                     l.begin.size(), {.stream = stream});
  }));
  ASSERT_EQ(e, cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(graph.launch(stream));
  EXPECT_TRUE(same_bits(d.to_host(), reference_segmented(keys, l, false)));
  cudaStreamDestroy(stream);
  cudaFree(temp);
}

namespace {
struct scrambled_key {
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    return static_cast<std::uint32_t>(tools::random_bits(42, i));
  }
};
// Out of order: a key greater than its successor within one segment of `size` keys.
struct out_of_order {
  const std::uint32_t* keys;
  std::uint64_t size;
  __host__ __device__ bool operator()(std::uint64_t i) const {
    return (i + 1) % size != 0 && keys[i] > keys[i + 1];
  }
};
struct widen {
  __host__ __device__ std::uint64_t operator()(std::uint32_t k) const { return k; }
};
}  // namespace

// More than 2^31 keys in one call (64-bit positions everywhere), checked on the device.
TEST_F(GpuSegmentedApi, MoreThan2To31Keys) {
  const std::uint64_t size = 1000, count = (std::uint64_t{1} << 31) / size + 3;
  const std::uint64_t n = size * count;
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * 4 + (std::uint64_t{1} << 30)) GTEST_SKIP() << "not enough device memory";
  std::uint32_t* keys = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  auto policy = thrust::cuda::par;
  thrust::tabulate(policy, keys, keys + n, scrambled_key{});
  const std::uint64_t sum_before = thrust::transform_reduce(
      policy, keys, keys + n, widen{}, std::uint64_t{0}, thrust::plus<std::uint64_t>());
  std::size_t bytes = 0;
  ASSERT_EQ(gpusort::sort_batched_keys(keys, bytes, keys, count, size), cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  const auto unsorted = thrust::count_if(policy, thrust::counting_iterator<std::uint64_t>(0),
                                         thrust::counting_iterator<std::uint64_t>(n - 1),
                                         out_of_order{keys, size});
  const std::uint64_t sum_after = thrust::transform_reduce(
      policy, keys, keys + n, widen{}, std::uint64_t{0}, thrust::plus<std::uint64_t>());
  // The last segment, read back, is the sorted scramble of its original keys.
  std::vector<std::uint32_t> last(size), expect(size);
  CUDA_OK(cudaMemcpy(last.data(), keys + n - size, size * 4, cudaMemcpyDeviceToHost));
  for (std::uint64_t i = 0; i < size; ++i) expect[i] = scrambled_key{}(n - size + i);
  std::sort(expect.begin(), expect.end());
  cudaFree(keys);
  EXPECT_EQ(unsorted, 0);
  EXPECT_EQ(sum_before, sum_after);
  EXPECT_EQ(last, expect);
}
