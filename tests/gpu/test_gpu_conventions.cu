// Issue 26's conventions through the device API: the core calls with poisoned workspaces and
// guarded arrays (NaN placement, options::stable, argsort, sort_with_indices), the allocator
// hook of the convenience layer, and top_k's device result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "device_buffer.hpp"
#include "float_keys.hpp"
#include "gpusort/approx.hpp"
#include "gpusort/segmented.hpp"
#include "gpusort/sort.hpp"
#include "reference.hpp"

namespace {

using gpusort::nan_order;
using gpusort::order;
using namespace gpusort::testing;

GPUSORT_TYPED_SUITE(GpuConventions, ::testing::Test, key_types);

// Every algorithm through the core calls, pairs with u32 positions: the reference's order,
// NaNs where asked, the exact stable permutation with options::stable; guards intact.
TYPED_TEST(GpuConventions, CoreCallsPlaceNansAndKeepTies) {
  GPUSORT_REQUIRE_GPU();
  using K = TypeParam;
  for (const std::size_t n : {std::size_t{2}, std::size_t{1000}, std::size_t{70001}}) {
    const std::vector<K> input = tied_keys<K>(n, 11 + n);
    std::vector<std::uint32_t> positions(n);
    std::iota(positions.begin(), positions.end(), 0u);
    for (const gpusort::algorithm a : gpusort::all_algorithms) {
      // cub_radix is CUB's own float order (the baseline; automatic adds the fix-up).
      if (std::is_floating_point_v<K> && a == gpusort::algorithm::cub_radix) continue;
      for (const order dir : {order::ascending, order::descending}) {
        for (const nan_order nans : {nan_order::last, nan_order::first}) {
          for (const bool stable : {false, true}) {
            if (!std::is_floating_point_v<K> && nans == nan_order::first) continue;
            const bool desc = dir == order::descending;
            SCOPED_TRACE(::testing::Message()
                         << gpusort::to_string(a) << " n=" << n << (desc ? " desc" : " asc")
                         << " nans " << gpusort::to_string(nans) << (stable ? " stable" : ""));
            guarded_buffer<K> keys(input);
            guarded_buffer<std::uint32_t> values(positions);
            const gpusort::options opt{.algo = a, .direction = dir, .nans = nans, .stable = stable};
            ASSERT_EQ(sort_on_device(keys, &values, opt), cudaSuccess);
            ASSERT_TRUE(keys.guard_intact());
            ASSERT_TRUE(values.guard_intact());
            const std::vector<K> got = keys.to_host();
            const std::vector<std::uint32_t> origin = values.to_host();
            ASSERT_TRUE(pairs_like_reference(input, got, origin, desc, stable, nans));
          }
        }
      }
    }
  }
}

// argsort (keys kept) and sort_with_indices (keys sorted), 32- and 64-bit indices, through
// the core calls with a poisoned workspace.
TYPED_TEST(GpuConventions, GeneratedIndicesSortTheKeys) {
  GPUSORT_REQUIRE_GPU();
  using K = TypeParam;
  const std::size_t n = 50001;
  const std::vector<K> input = tied_keys<K>(n, 5);
  for (const order dir : {order::ascending, order::descending}) {
    const bool desc = dir == order::descending;
    const gpusort::options opt{.direction = dir, .stable = true};
    const std::vector<std::uint64_t> want = stable_positions(input, desc, nan_order::last);
    auto check = [&](auto index_tag) {
      using I = decltype(index_tag);
      guarded_buffer<K> keys(input);
      guarded_buffer<I> indices(std::vector<I>(n, I(~I{0})));
      std::size_t bytes = 0;
      ASSERT_EQ(gpusort::argsort(nullptr, bytes, keys.data(), indices.data(), n, opt), cudaSuccess);
      poisoned_workspace temp(bytes);
      ASSERT_EQ(gpusort::argsort(temp.ptr, bytes, keys.data(), indices.data(), n, opt), cudaSuccess);
      CUDA_OK(cudaDeviceSynchronize());
      EXPECT_TRUE(same_bits(keys.to_host(), input)) << "argsort changed the keys";
      std::vector<I> idx = indices.to_host();
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(idx[i], want[i]) << "at " << i;
      EXPECT_TRUE(indices.guard_intact());
      // sort_with_indices: the same indices, the keys sorted.
      guarded_buffer<I> more(std::vector<I>(n, I(~I{0})));
      bytes = 0;
      ASSERT_EQ(gpusort::sort_with_indices(nullptr, bytes, keys.data(), more.data(), n, opt),
                cudaSuccess);
      poisoned_workspace temp2(bytes);
      void* t = bytes ? temp2.ptr : static_cast<void*>(keys.data());
      ASSERT_EQ(gpusort::sort_with_indices(t, bytes, keys.data(), more.data(), n, opt), cudaSuccess);
      CUDA_OK(cudaDeviceSynchronize());
      idx = more.to_host();
      const std::vector<K> sorted = keys.to_host();
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(idx[i], want[i]) << "at " << i;
        ASSERT_EQ(gpusort::key_traits<K>::ordered(sorted[i]),
                  gpusort::key_traits<K>::ordered(input[want[i]])) << "at " << i;
      }
    };
    check(std::uint32_t{});
    check(std::uint64_t{});
  }
}

// A counting allocator over cudaMalloc: the hook must see every device allocation of the
// convenience layer, and nothing may come from the stream-ordered pool.
struct counting_allocator {
  int allocations = 0, frees = 0;
  std::size_t bytes = 0;
  static void* allocate(std::size_t bytes, cudaStream_t, void* self) {
    auto* c = static_cast<counting_allocator*>(self);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
    ++c->allocations;
    c->bytes += bytes;
    return p;
  }
  static void deallocate(void* p, std::size_t, cudaStream_t, void* self) {
    ++static_cast<counting_allocator*>(self)->frees;
    cudaFree(p);
  }
};

TEST(GpuAllocatorHook, EveryConvenienceAllocationGoesThroughIt) {
  GPUSORT_REQUIRE_GPU();
  int device = 0;
  CUDA_OK(cudaGetDevice(&device));
  cudaMemPool_t pool;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, device));
  CUDA_OK(cudaDeviceSynchronize());
  std::uint64_t zero = 0;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  std::uint64_t used_before = 0;
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_before));

  counting_allocator counter;
  gpusort::options opt{.direction = order::descending};
  opt.allocator = {&counting_allocator::allocate, &counting_allocator::deallocate, &counter};
  const std::size_t n = 1 << 20;
  const std::vector<float> input = special_float_input<float>(n, 1);
  guarded_buffer<float> keys(input);
  gpusort::sort(std::span<float>(keys.data(), n), opt);  // automatic: CUB's radix workspace
  guarded_buffer<std::uint32_t> indices{std::vector<std::uint32_t>(n)};
  gpusort::argsort(std::span<const float>(keys.data(), n), std::span<std::uint32_t>(indices.data(), n), opt);
  std::vector<float> host = input;
  gpusort::sort(host, opt);  // host copies on the device
  gpusort::sort_batched(std::span<float>(keys.data(), n), 1024, 1024, opt);
  guarded_buffer<float> best{std::vector<float>(100)};
  gpusort::top_k(std::span<const float>(keys.data(), n), std::span<float>(best.data(), 100), opt);
  CUDA_OK(cudaDeviceSynchronize());

  EXPECT_GE(counter.allocations, 5);
  EXPECT_EQ(counter.allocations, counter.frees);
  EXPECT_GT(counter.bytes, std::size_t{4} * n);
  std::uint64_t high = 0;
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  EXPECT_LE(high, used_before) << "something allocated from the stream-ordered pool";
  EXPECT_TRUE(sorted_like_reference(input, host, true, false));

  // A hook that fails: a gpusort::error naming the workspace, the keys as they were.
  auto refuse = [](std::size_t, cudaStream_t, void*) -> void* { return nullptr; };
  auto unused = [](void*, std::size_t, cudaStream_t, void*) {};
  gpusort::options failing{.algo = gpusort::algorithm::cub_radix};
  failing.allocator = {+refuse, +unused, nullptr};
  guarded_buffer<float> again(input);
  EXPECT_THROW(gpusort::sort(std::span<float>(again.data(), n), failing), gpusort::error);
  EXPECT_TRUE(same_bits(again.to_host(), input));
}

// top_k on device data writes device data (sorted) and returns the k-th key.
TEST(GpuTopK, DeviceOverloadWritesDeviceResults) {
  GPUSORT_REQUIRE_GPU();
  const std::size_t n = 100000, k = 777;
  std::vector<std::int64_t> input(n);
  std::mt19937_64 rng(4);
  for (auto& x : input) x = static_cast<std::int64_t>(rng() % 1000000) - 500000;
  guarded_buffer<std::int64_t> keys(input);
  for (const order dir : {order::ascending, order::descending}) {
    guarded_buffer<std::int64_t> out(std::vector<std::int64_t>(k, 0x5a5a5a5a));
    const std::int64_t kth = gpusort::top_k(std::span<const std::int64_t>(keys.data(), n),
                                            std::span<std::int64_t>(out.data(), k),
                                            {.direction = dir});
    const std::vector<std::int64_t> want =
        reference_sort(input, dir == order::descending);
    const std::vector<std::int64_t> got = out.to_host();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
    EXPECT_EQ(kth, want[k - 1]);
    EXPECT_TRUE(out.guard_intact());
  }
}

}  // namespace
