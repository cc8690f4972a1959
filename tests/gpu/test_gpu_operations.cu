// unique_keys and searchsorted of the core layer (include/gpusort/operations.hpp) on the
// device: hostile inputs of every built-in key type, poisoned outputs and workspaces, guard
// zones, the queries' sorted path and the unsorted one, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "device_buffer.hpp"
#include "gpusort/operations.hpp"
#include "operations_reference.hpp"
#include "reference.hpp"

namespace gpusort::testing {
namespace {

GPUSORT_TYPED_SUITE(GpuOperations, GpuTest, key_types);

// unique_keys through its two calls, outputs poisoned: the distinct keys and their counts (or
// none when counts are not asked for).
template <class K>
void device_unique(const std::vector<K>& keys, bool with_counts, std::vector<K>& unique_out,
                   std::vector<std::uint64_t>& counts, const options& opt = {}) {
  const guarded_buffer<K> d_keys(keys);
  const guarded_buffer<K> d_unique(std::vector<K>(keys.size()));
  const guarded_buffer<std::uint64_t> d_counts(std::vector<std::uint64_t>(keys.size(), ~0ull));
  const guarded_buffer<std::uint64_t> d_num(std::vector<std::uint64_t>{~0ull});
  cudaMemset(d_unique.data(), poison, sizeof(K) * keys.size());
  std::size_t bytes = 0;
  std::uint64_t* counts_ptr = with_counts ? d_counts.data() : nullptr;
  CUDA_OK(unique_keys(nullptr, bytes, d_keys.data(), keys.size(), d_unique.data(), counts_ptr,
                      d_num.data(), opt));
  const poisoned_workspace temp(bytes);
  CUDA_OK(unique_keys(temp.ptr, bytes, d_keys.data(), keys.size(), d_unique.data(), counts_ptr,
                      d_num.data(), opt));
  CUDA_OK(cudaDeviceSynchronize());
  const std::uint64_t num = d_num.to_host()[0];
  ASSERT_LE(num, keys.size());
  unique_out = d_unique.to_host();
  unique_out.resize(num);
  counts = d_counts.to_host();
  if (with_counts) counts.resize(num);
  EXPECT_EQ(codes_of(d_keys.to_host()), codes_of(keys)) << "the input changed";
  EXPECT_TRUE(d_keys.guard_intact() && d_unique.guard_intact() && d_counts.guard_intact() &&
              d_num.guard_intact());
}

TYPED_TEST(GpuOperations, UniqueMatchesATallyOfTheKeys) {
  using K = TypeParam;
  for_each_hostile_input<K>(1 << 18, 17, [](const std::vector<K>& keys, bool descending) {
    std::vector<K> got;
    std::vector<std::uint64_t> counts;
    device_unique(keys, /*with_counts=*/!descending, got, counts);  // both forms, one each pass
    const unique_reference<K> want = reference_unique(keys);
    EXPECT_EQ(codes_of(got), want.codes);
    if (!descending) {
      EXPECT_EQ(counts, want.counts);
    } else {
      EXPECT_TRUE(std::all_of(counts.begin(), counts.end(), [](auto c) { return c == ~0ull; }))
          << "counts written though not asked for";
    }
  });
}

TYPED_TEST(GpuOperations, UniqueTakesEachSortAndRefusesAnotherOrder) {
  using K = TypeParam;
  std::vector<K> keys = tools::generate<K>(tools::distribution::few_unique, 5000, 3);
  scatter_special_values(keys, 3);
  const unique_reference<K> want = reference_unique(keys);
  for (algorithm a : {algorithm::bitonic, algorithm::cub_radix, algorithm::cub_merge,
                      algorithm::sample_sort}) {
    SCOPED_TRACE(to_string(a));
    std::vector<K> got;
    std::vector<std::uint64_t> counts;
    device_unique(keys, true, got, counts, {.algo = a});
    EXPECT_EQ(codes_of(got), want.codes);
    EXPECT_EQ(counts, want.counts);
  }
  std::size_t bytes = 0;
  std::uint64_t* none = nullptr;
  EXPECT_EQ(unique_keys(nullptr, bytes, static_cast<const K*>(nullptr), 10, static_cast<K*>(nullptr),
                        none, none, {.direction = order::descending}),
            cudaErrorInvalidValue);
  // A host array is refused before anything is written.
  const guarded_buffer<std::uint64_t> d_num(std::vector<std::uint64_t>{7});
  const guarded_buffer<K> d_unique(std::vector<K>(keys.size()));
  CUDA_OK(unique_keys(nullptr, bytes, keys.data(), keys.size(), d_unique.data(), none,
                      d_num.data()));
  const poisoned_workspace temp(bytes);
  EXPECT_NE(unique_keys(temp.ptr, bytes, keys.data(), keys.size(), d_unique.data(), none,
                        d_num.data()),
            cudaSuccess);
  EXPECT_EQ(d_num.to_host()[0], 7u);
}

__global__ void thirteen_values(std::uint32_t* keys, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    keys[i] = static_cast<std::uint32_t>(i * 7919 % 13);
}

// Past INT_MAX keys unique_keys marks and scans the runs itself (CUB's encoding counts in
// int): 2^31 + 5 keys of 13 values, made on the device, their counts by arithmetic.
TEST_F(GpuTest, UniqueOfMoreThanIntMaxKeys) {
  const std::uint64_t n = (std::uint64_t{1} << 31) + 5;
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < 76 * (n / 2))  // keys, the output and counts, and the workspace
    GTEST_SKIP() << "needs about " << 38 * n / (1ull << 30) << " GiB of free device memory";
  std::uint32_t *keys = nullptr, *unique_out = nullptr;
  std::uint64_t *counts = nullptr, *num = nullptr;
  CUDA_OK(cudaMalloc(&keys, n * 4));
  CUDA_OK(cudaMalloc(&unique_out, n * 4));
  CUDA_OK(cudaMalloc(&counts, n * 8));
  CUDA_OK(cudaMalloc(&num, 8));
  thirteen_values<<<4096, 256>>>(keys, n);
  std::size_t bytes = 0;
  CUDA_OK(unique_keys(nullptr, bytes, keys, n, unique_out, counts, num));
  const poisoned_workspace temp(bytes);
  ASSERT_NE(temp.ptr, nullptr);
  CUDA_OK(unique_keys(temp.ptr, bytes, keys, n, unique_out, counts, num));
  CUDA_OK(cudaDeviceSynchronize());
  std::uint64_t found = 0;
  std::uint32_t got_keys[13] = {};
  std::uint64_t got_counts[13] = {};
  CUDA_OK(cudaMemcpy(&found, num, 8, cudaMemcpyDeviceToHost));
  ASSERT_EQ(found, 13u);
  CUDA_OK(cudaMemcpy(got_keys, unique_out, sizeof got_keys, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(got_counts, counts, sizeof got_counts, cudaMemcpyDeviceToHost));
  for (std::uint64_t first = 0; first < 13; ++first) {  // value first * 7919 % 13 starts at first
    const std::uint64_t value = first * 7919 % 13;
    EXPECT_EQ(got_keys[value], value);
    EXPECT_EQ(got_counts[value], (n - 1 - first) / 13 + 1) << "value " << value;
  }
  for (void* p : {static_cast<void*>(keys), static_cast<void*>(unique_out),
                  static_cast<void*>(counts), static_cast<void*>(num)})
    cudaFree(p);
}

// sample_candidates on the device draws what the host's loop draws (index_math/sampling.hpp)
// from rows of every shape top-k leaves: numbers in order, NaNs first, +inf ties, all equal,
// a -inf tail; k from 1 to past a block's threads (each block size the launch picks). The
// block sums in another order than the loop, so a row whose target lands within rounding of a
// boundary may differ: under 2% (a wrong draw differs in most rows).
TEST_F(GpuTest, SampleCandidatesDrawsAsTheHost) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::uint64_t rows = 2000;
  for (const std::uint64_t k : {1, 2, 50, 200, 500, 1024, 3001}) {
    std::mt19937 rng(static_cast<unsigned>(k));
    std::normal_distribution<float> logit(0.0f, 3.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<float> values(rows * k), uniforms(rows);
    std::vector<std::int64_t> ids(rows * k);
    for (std::uint64_t r = 0; r < rows; ++r) {
      float* row = values.data() + r * k;
      for (std::uint64_t i = 0; i < k; ++i) row[i] = r % 5 == 3 ? 1.5f : logit(rng);
      std::sort(row, row + k, std::greater<>());
      if (r % 5 == 1) std::fill(row, row + std::min<std::uint64_t>(k, 3), nan);
      if (r % 5 == 2) std::fill(row, row + std::min<std::uint64_t>(k, 2), inf);
      if (r % 5 == 4) std::fill(row + k / 2, row + k, -inf);
      for (std::uint64_t i = 0; i < k; ++i) ids[r * k + i] = static_cast<std::int64_t>(r * 100000 + i);
      uniforms[r] = std::min(unit(rng), 0.99999994f);
    }
    guarded_buffer<float> d_values(values), d_uniforms(uniforms);
    guarded_buffer<std::int64_t> d_ids(ids);
    for (const auto [p, temperature] : {std::pair{1.0f, 1.0f}, std::pair{0.9f, 0.7f},
                                        std::pair{0.3f, 2.0f}, std::pair{1.0f, inf}}) {
      SCOPED_TRACE(::testing::Message() << "k=" << k << " p=" << p << " T=" << temperature);
      std::vector<std::int64_t> want(rows);
      sample_candidates_on_host(values.data(), ids.data(), rows, k, p, temperature, uniforms.data(),
                                want.data());
      guarded_buffer<std::int64_t> d_tokens(std::vector<std::int64_t>(rows, -1));
      CUDA_OK(sample_candidates(d_values.data(), d_ids.data(), rows, k, p, temperature,
                                d_uniforms.data(), d_tokens.data()));
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<std::int64_t> got = d_tokens.to_host();
      std::uint64_t differ = 0;
      for (std::uint64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(static_cast<std::uint64_t>(got[r]) / 100000, r) << "a token of another row";
        differ += got[r] != want[r];
      }
      EXPECT_LE(differ, k == 1 ? 0u : rows / 50) << differ << " rows differ";
      EXPECT_TRUE(d_tokens.guard_intact());
    }
  }
  // float16 and bfloat16 candidates, read as floats: as the host's loop over the same values.
  const auto sixteen_bit = [&]<class T>(T) {
    const std::uint64_t k = 200;
    std::mt19937 rng(5);
    std::normal_distribution<float> logit(0.0f, 3.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<T> values(rows * k);
    std::vector<float> as_float(rows * k), uniforms(rows);
    std::vector<std::int64_t> ids(rows * k);
    for (std::uint64_t r = 0; r < rows; ++r) {
      std::vector<float> row(k);
      for (float& v : row) v = logit(rng);
      std::sort(row.begin(), row.end(), std::greater<>());
      if (r % 4 == 1) std::fill(row.begin(), row.begin() + 3, nan);
      if (r % 4 == 2) std::fill(row.begin() + k / 2, row.end(), -inf);
      for (std::uint64_t i = 0; i < k; ++i) {
        values[r * k + i] = T(row[i]);
        as_float[r * k + i] = static_cast<float>(values[r * k + i]);
        ids[r * k + i] = static_cast<std::int64_t>(r * 100000 + i);
      }
      uniforms[r] = std::min(unit(rng), 0.99999994f);
    }
    std::vector<std::int64_t> want(rows);
    sample_candidates_on_host(as_float.data(), ids.data(), rows, k, 0.9f, 0.7f, uniforms.data(),
                              want.data());
    guarded_buffer<T> d_values(values);
    guarded_buffer<float> d_uniforms(uniforms);
    guarded_buffer<std::int64_t> d_ids(ids), d_tokens(std::vector<std::int64_t>(rows, -1));
    CUDA_OK(sample_candidates(d_values.data(), d_ids.data(), rows, k, 0.9f, 0.7f,
                              d_uniforms.data(), d_tokens.data()));
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<std::int64_t> got = d_tokens.to_host();
    std::uint64_t differ = 0;
    for (std::uint64_t r = 0; r < rows; ++r) differ += got[r] != want[r];
    EXPECT_LE(differ, rows / 50) << differ << " rows differ (" << sizeof(T) << "-byte values)";
  };
  sixteen_bit(__half{});
  sixteen_bit(__nv_bfloat16{});
  guarded_buffer<std::int64_t> tokens(std::vector<std::int64_t>(1, -1));
  guarded_buffer<float> one(std::vector<float>(1, 0.5f));
  guarded_buffer<std::int64_t> id(std::vector<std::int64_t>(1, 4));
  EXPECT_EQ(sample_candidates(one.data(), id.data(), 1, 1, 0.0f, 1.0f, one.data(), tokens.data()),
            cudaErrorInvalidValue);
  EXPECT_EQ(sample_candidates(one.data(), id.data(), 1, 1, 1.0f, 0.0f, one.data(), tokens.data()),
            cudaErrorInvalidValue);
  EXPECT_EQ(tokens.to_host()[0], -1);
}

TYPED_TEST(GpuOperations, SearchsortedMatchesTheHostOnBothPaths) {
  using K = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
    // Below and above the count from which the queries are sorted first.
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, (std::size_t{1} << 16) + 3}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " m=" << m);
      std::vector<K> sorted = tools::generate<K>(tools::distribution::few_unique, n, n + m);
      scatter_special_values(sorted, n + m);
      gpusort::sort(sorted);
      std::vector<K> queries = tools::generate<K>(tools::distribution::uniform, m, n + m + 1);
      scatter_special_values(queries, n + m + 1);
      for (std::size_t j = 0; j < std::min(n, m); j += 3) queries[j] = sorted[j];  // equals
      const guarded_buffer<K> d_sorted(sorted), d_queries(queries);
      for (side where : {side::left, side::right}) {
        const guarded_buffer<std::int64_t> d_places(std::vector<std::int64_t>(m, -1));
        std::size_t bytes = 0;
        CUDA_OK(searchsorted(nullptr, bytes, d_sorted.data(), n, d_queries.data(), m,
                             d_places.data(), where));
        const poisoned_workspace temp(bytes);
        CUDA_OK(searchsorted(temp.ptr, bytes, d_sorted.data(), n, d_queries.data(), m,
                             d_places.data(), where));
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT_EQ(d_places.to_host(), gpusort::searchsorted(sorted, queries, where));
        EXPECT_TRUE(d_places.guard_intact());
        EXPECT_EQ(codes_of(d_queries.to_host()), codes_of(queries)) << "the queries changed";
      }
    }
  }
}

}  // namespace
}  // namespace gpusort::testing
