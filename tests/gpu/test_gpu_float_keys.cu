// Float keys in every algorithm on the device: NaNs of both signs and many payloads, -0.0 and
// +0.0, infinities, denormals; both orders, keys and pairs; bit for bit against
// std::stable_sort in gpusort's order (tests/float_keys.hpp). Workspaces are poisoned and
// the guard zone past n must stay untouched. Stable algorithms must keep NaNs (and every tie)
// in input order.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "device_buffer.hpp"
#include "float_keys.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"

using namespace gpusort::testing;

GPUSORT_TYPED_SUITE(GpuFloatKeys, GpuTest, float_types);

TYPED_TEST(GpuFloatKeys, EveryAlgorithmBothOrdersKeysAndPairs) {
  using F = TypeParam;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                              std::size_t{97}, std::size_t{4096}, std::size_t{65537},
                              std::size_t{(1 << 20) + 3}}) {
    const std::vector<F> input = special_float_input<F>(n, 500 + n);
    // 4-byte values: the baselines are built for those.
    std::vector<std::uint32_t> index(n);
    std::iota(index.begin(), index.end(), std::uint32_t{0});
    for_each_method_both_orders(sort_methods(false), n, [&](const sort_method& m, bool desc) {
      {
        guarded_buffer<F> keys(input);
        ASSERT_EQ((sort_on_device<F, std::uint64_t>(keys, nullptr, m.opt)), cudaSuccess);
        EXPECT_TRUE(sorted_like_reference(input, keys.to_host(), desc, m.stable));
        EXPECT_TRUE(keys.guard_intact());
      }
      guarded_buffer<F> keys(input);
      guarded_buffer<std::uint32_t> values(index);
      ASSERT_EQ((sort_on_device<F, std::uint32_t>(keys, &values, m.opt)), cudaSuccess);
      const std::vector<std::uint32_t> got_values = values.to_host();
      const std::vector<std::uint64_t> origins(got_values.begin(), got_values.end());
      EXPECT_TRUE(sorted_like_reference(input, keys.to_host(), desc, m.stable, &origins));
      EXPECT_TRUE(keys.guard_intact());
      EXPECT_TRUE(values.guard_intact());
    });
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Device and CPU backends agree bit for bit where the order is fixed (bitonic's network is
// deterministic, and both run it on the same codes).
TYPED_TEST(GpuFloatKeys, BitonicMatchesTheCpuBackendExactly) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(300007, 41);
  for (const auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
    const gpusort::options opt{.algo = gpusort::algorithm::bitonic, .direction = dir};
    guarded_buffer<F> keys(input);
    ASSERT_EQ((sort_on_device<F, std::uint64_t>(keys, nullptr, opt)), cudaSuccess);
    std::vector<F> cpu = input;
    gpusort::detail::cpu_sort_keys(cpu.data(), cpu.size(), opt);
    const std::vector<F> gpu = keys.to_host();
    for (std::size_t i = 0; i < cpu.size(); ++i)
      ASSERT_EQ(bits_of(gpu[i]), bits_of(cpu[i])) << i;
  }
}

// Segmented and batched sorts (short segments map floats as they load them, long ones in a
// pass of their own): each segment like the reference; keys outside every segment
// (the tail) and a single segment inside a long buffer (the top_k case) keep their bits.
TYPED_TEST(GpuFloatKeys, SegmentedAndBatched) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(100000, 77);
  const std::vector<std::uint64_t> offsets = {0, 1, 3, 40, 40, 1000, 1100, 5000, 70000, 90000};
  const auto check = [&](const std::vector<F>& got, const std::vector<std::uint64_t>& offs,
                         bool desc) {
    for (std::size_t s = 0; s + 1 < offs.size(); ++s) {
      const std::vector<F> in(input.begin() + offs[s], input.begin() + offs[s + 1]);
      const std::vector<F> out(got.begin() + offs[s], got.begin() + offs[s + 1]);
      EXPECT_TRUE(sorted_like_reference(in, out, desc, false)) << "segment " << s;
    }
    for (std::size_t i = 0; i < offs.front(); ++i) ASSERT_EQ(bits_of(got[i]), bits_of(input[i]));
    for (std::size_t i = offs.back(); i < input.size(); ++i)
      ASSERT_EQ(bits_of(got[i]), bits_of(input[i])) << i;
  };
  for (const auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
    const bool desc = dir == gpusort::order::descending;
    SCOPED_TRACE(desc ? "descending" : "ascending");
    const gpusort::options opt{.algo = gpusort::algorithm::bitonic, .direction = dir};
    for (const auto& offs : {offsets, std::vector<std::uint64_t>{123, 45678}}) {
      guarded_buffer<F> keys(input);
      guarded_buffer<std::uint64_t> d_offsets(offs);
      std::size_t bytes = 0;
      const auto segs = offs.size() - 1;
      CUDA_OK(gpusort::sort_segmented_keys(nullptr, bytes, keys.data(), input.size(),
                                           d_offsets.data(), d_offsets.data() + 1, segs, opt));
      poisoned_workspace temp(bytes);
      CUDA_OK(gpusort::sort_segmented_keys(bytes ? temp.ptr : keys.data(), bytes, keys.data(),
                                           input.size(), d_offsets.data(), d_offsets.data() + 1,
                                           segs, opt));
      CUDA_OK(cudaDeviceSynchronize());
      check(keys.to_host(), offs, desc);
      EXPECT_TRUE(keys.guard_intact());
    }
    for (const std::uint64_t row :
         {std::uint64_t{4}, std::uint64_t{250}, std::uint64_t{5000}, std::uint64_t{20000}}) {
      const std::uint64_t rows = input.size() / row;
      guarded_buffer<F> keys(input);
      std::vector<std::uint64_t> index(input.size());
      std::iota(index.begin(), index.end(), std::uint64_t{0});
      guarded_buffer<std::uint64_t> values(index);
      std::size_t bytes = 0;
      CUDA_OK(gpusort::sort_batched_pairs(keys.data(), bytes, keys.data(), values.data(), rows,
                                          row, opt));
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<F> got = keys.to_host();
      const std::vector<std::uint64_t> origins = values.to_host();
      for (std::uint64_t r = 0; r < rows; ++r) {
        const std::vector<F> in(input.begin() + r * row, input.begin() + (r + 1) * row);
        const std::vector<F> out(got.begin() + r * row, got.begin() + (r + 1) * row);
        std::vector<std::uint64_t> o(origins.begin() + r * row, origins.begin() + (r + 1) * row);
        for (auto& x : o) x -= r * row;
        ASSERT_TRUE(sorted_like_reference(in, out, desc, false, &o)) << "row " << r;
      }
      EXPECT_TRUE(keys.guard_intact());
    }
  }
}

// automatic on an array past the merge sort's range runs CUB's radix sort, which reads -0.0 as
// +0.0 and orders NaNs by sign: the fix-up partitions a long run of zeros of both signs
// (spread over every block) stably, and moves the negative NaNs among the others.
TYPED_TEST(GpuFloatKeys, AutomaticRadixPutsZerosAndNegativeNansInPlace) {
  using F = TypeParam;
  const std::size_t n = (std::size_t{3} << 20) + 5;
  ASSERT_EQ((gpusort::automatic_algorithm<F, std::uint32_t>(n)), gpusort::algorithm::cub_radix);
  std::vector<F> input = special_float_input<F>(n, 91);
  for (std::size_t i = 0; i < n; i += 3) input[i] = (i / 3) % 2 ? F(-0.0) : F(0.0);
  std::vector<std::uint32_t> index(n);
  std::iota(index.begin(), index.end(), std::uint32_t{0});
  for (const auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
    const bool desc = dir == gpusort::order::descending;
    SCOPED_TRACE(desc ? "descending" : "ascending");
    guarded_buffer<F> keys(input);
    guarded_buffer<std::uint32_t> values(index);
    ASSERT_EQ((sort_on_device<F, std::uint32_t>(keys, &values, {.direction = dir})),
              cudaSuccess);
    const std::vector<F> got = keys.to_host();
    const std::vector<std::uint32_t> got_values = values.to_host();
    const std::vector<std::uint64_t> origins(got_values.begin(), got_values.end());
    EXPECT_TRUE(sorted_like_reference(input, got, desc, false, &origins));
    // Each sign of zero keeps input order (radix and the partition are both stable).
    std::uint32_t last_negative = 0, last_positive = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (got[i] != F(0)) continue;
      std::uint32_t& last = std::signbit(got[i]) ? last_negative : last_positive;
      ASSERT_LE(last, got_values[i]) << "zeros out of input order at " << i;
      last = got_values[i];
    }
  }
}

// top_k of floats: the k smallest (largest) keys in order; a NaN only where the reference
// has one, and only NaN patterns of the input.
TYPED_TEST(GpuFloatKeys, TopK) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(200003, 13);
  for (const auto dir : {gpusort::order::ascending, gpusort::order::descending}) {
    const bool desc = dir == gpusort::order::descending;
    const std::vector<std::size_t> ref = stable_order(input, desc, nans_largest(desc));  // top_k's
    std::vector<float_bits<F>> input_nans;
    for (F x : input)
      if (is_nan_bits<F>(bits_of(x))) input_nans.push_back(bits_of(x));
    std::sort(input_nans.begin(), input_nans.end());
    for (const std::uint64_t k : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{150000}}) {
      SCOPED_TRACE(::testing::Message() << "k=" << k << (desc ? " descending" : ""));
      guarded_buffer<F> keys(input);
      guarded_buffer<F> out(std::vector<F>(k, F(0)));
      CUDA_OK(cudaMemset(out.data(), poison, k * sizeof(F)));
      std::size_t bytes = 0;
      const gpusort::options opt{.direction = dir};
      CUDA_OK(gpusort::top_k_keys(nullptr, bytes, keys.data(), input.size(), out.data(), k, opt));
      poisoned_workspace temp(bytes);
      CUDA_OK(gpusort::top_k_keys(temp.ptr, bytes, keys.data(), input.size(), out.data(), k, opt));
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<F> got = out.to_host();
      for (std::uint64_t i = 0; i < k; ++i) {
        const auto want = bits_of(input[ref[i]]), have = bits_of(got[i]);
        if (is_nan_bits<F>(want)) {
          ASSERT_TRUE(std::binary_search(input_nans.begin(), input_nans.end(), have)) << i;
        } else {
          ASSERT_EQ(have, want) << i;
        }
      }
      const std::vector<F> after = keys.to_host();
      for (std::size_t i = 0; i < input.size(); ++i)
        ASSERT_EQ(bits_of(after[i]), bits_of(input[i])) << "top_k changed its input";
    }
  }
}

// An error after the keys became codes still gives them back: too small a workspace, or
// options the sort rejects. The sample sort with explicit buckets: its default plan hands
// this many keys whole to the bitonic network, which takes no workspace.
TYPED_TEST(GpuFloatKeys, KeysUntouchedOnError) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(1100003, 3);
  for (const auto algo : {gpusort::algorithm::sample_sort, gpusort::algorithm::quicksort}) {
    guarded_buffer<F> keys(input);
    std::size_t bytes = 0;
    gpusort::options opt{.algo = algo};
    if (algo == gpusort::algorithm::sample_sort) opt.buckets = 256;
    CUDA_OK(gpusort::sort_keys(nullptr, bytes, keys.data(), input.size(), opt));
    ASSERT_GT(bytes, 1u);
    poisoned_workspace temp(bytes);
    std::size_t too_few = bytes / 2;
    EXPECT_NE(gpusort::sort_keys(temp.ptr, too_few, keys.data(), input.size(), opt), cudaSuccess);
    if (algo == gpusort::algorithm::sample_sort) {
      std::size_t enough = bytes;
      EXPECT_EQ(gpusort::sort_keys(temp.ptr, enough, keys.data(), input.size(),
                                   {.algo = algo, .buckets = 3}),
                cudaErrorInvalidValue);
    }
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<F> after = keys.to_host();
    for (std::size_t i = 0; i < input.size(); ++i) ASSERT_EQ(bits_of(after[i]), bits_of(input[i]));
  }
}

// The two passes around the sort are plain kernels on the caller's stream: a float sort can
// be captured into a graph and runs only when launched.
TYPED_TEST(GpuFloatKeys, WorksInsideGraphCapture) {
  using F = TypeParam;
  const std::vector<F> input = special_float_input<F>(300001, 12);
  guarded_buffer<F> d(input);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  captured_graph graph;
  std::size_t bytes = 0;
  cudaError_t sorted = cudaSuccess;
  ASSERT_NO_FATAL_FAILURE(graph.capture(stream, [&] {
    sorted = gpusort::sort_keys(d.data(), bytes, d.data(), input.size(),
                                {.algo = gpusort::algorithm::bitonic,
                                 .direction = gpusort::order::descending,
                                 .stream = stream});
  }));
  ASSERT_EQ(sorted, cudaSuccess);
  const std::vector<F> untouched = d.to_host();
  for (std::size_t i = 0; i < input.size(); ++i)
    ASSERT_EQ(bits_of(untouched[i]), bits_of(input[i])) << "capture must not run anything";
  ASSERT_NO_FATAL_FAILURE(graph.launch(stream));
  EXPECT_TRUE(sorted_like_reference(input, d.to_host(), true, false));
  cudaStreamDestroy(stream);
}
