// The block and warp bitonic primitives (keys in registers): sort and merge of one segment per
// block (or warp) for every key type, every valid count around the edges, both orders, with
// values; registers past `valid` must come back untouched.
#include <gtest/gtest.h>

#include "device_buffer.hpp"
#include "gpusort/detail/block/block_bitonic_sort.cuh"
#include "gpusort/detail/block/warp_bitonic_sort.cuh"
#include "reference.hpp"

using namespace gpusort::testing;
namespace block = gpusort::detail::block;
namespace tools = gpusort::tools;

enum class primitive { block_sort, block_merge, warp_sort };

// One segment of THREADS * ITEMS positions per block; values are the original positions.
template <primitive P, class K, int THREADS, int ITEMS>
__global__ void run_primitive(K* keys, std::uint32_t* values, const unsigned* valid,
                              bool descending) {
  constexpr unsigned n = THREADS * ITEMS;
  K* seg = keys + blockIdx.x * n;
  std::uint32_t* seg_values = values + blockIdx.x * n;
  K k[ITEMS];
  std::uint32_t v[ITEMS];
  for (int i = 0; i < ITEMS; ++i) {
    k[i] = seg[threadIdx.x * ITEMS + i];  // positions >= valid hold poison and must stay
    v[i] = seg_values[threadIdx.x * ITEMS + i];
  }
  if constexpr (P == primitive::warp_sort) {
    block::warp_bitonic_sort<K, std::uint32_t, ITEMS, gpusort::less<K>>{}.sort(
        k, v, valid[blockIdx.x], descending, gpusort::less<K>{});
  } else {
    using sorter = block::block_bitonic_sort<K, std::uint32_t, THREADS, ITEMS, gpusort::less<K>>;
    __shared__ typename sorter::temp_storage temp;
    if constexpr (P == primitive::block_sort)
      sorter{temp}.sort(k, v, valid[blockIdx.x], descending, gpusort::less<K>{});
    else
      sorter{temp}.merge(k, v, valid[blockIdx.x], descending, gpusort::less<K>{});
  }
  for (int i = 0; i < ITEMS; ++i) {
    seg[threadIdx.x * ITEMS + i] = k[i];
    seg_values[threadIdx.x * ITEMS + i] = v[i];
  }
}

GPUSORT_TYPED_SUITE(GpuBlockPrimitives, GpuTest, key_types);

template <primitive P, class K, int THREADS, int ITEMS>
void check_primitive() {
  constexpr unsigned n = THREADS * ITEMS;
  std::vector<unsigned> valid = {0, 1, 2, 3, 31, 32, 33, n / 2 - 1, n / 2, n / 2 + 1, n - 1, n};
  std::erase_if(valid, [](unsigned v) { return v > n; });
  std::sort(valid.begin(), valid.end());
  valid.erase(std::unique(valid.begin(), valid.end()), valid.end());
  const K poison = static_cast<K>(123);
  for (bool descending : {false, true}) {
    for (auto dist : {tools::distribution::uniform, tools::distribution::few_unique}) {
      const std::uint64_t seed = n * 3 + descending + static_cast<int>(dist);
      SCOPED_TRACE(::testing::Message() << "segment " << n << " desc=" << descending << " dist="
                                        << tools::to_string(dist) << " seed=" << seed);
      std::vector<K> keys = tools::generate<K>(dist, n * valid.size(), seed);
      scatter_special_values(keys, seed);
      std::vector<std::uint32_t> values(keys.size());
      for (std::size_t s = 0; s < valid.size(); ++s) {
        for (unsigned i = 0; i < n; ++i) {
          values[s * n + i] = i;
          if (i >= valid[s]) keys[s * n + i] = poison;
        }
        if (P == primitive::block_merge) {  // two sorted halves: [0, n/2) and [n/2, valid)
          auto begin = keys.begin() + s * n;
          auto middle = begin + std::min(valid[s], n / 2);
          auto order = [&](const K& a, const K& b) {
            return descending ? gpusort::less<K>{}(b, a) : gpusort::less<K>{}(a, b);
          };
          std::stable_sort(begin, middle, order);
          std::stable_sort(middle, begin + valid[s], order);
        }
      }
      guarded_buffer<K> dk(keys);
      guarded_buffer<std::uint32_t> dv(values);
      guarded_buffer<unsigned> dvalid(valid);
      run_primitive<P, K, THREADS, ITEMS>
          <<<valid.size(), P == primitive::warp_sort ? 32 : THREADS>>>(dk.data(), dv.data(),
                                                                       dvalid.data(), descending);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<K> got = dk.to_host();
      const std::vector<std::uint32_t> got_values = dv.to_host();
      for (std::size_t s = 0; s < valid.size(); ++s) {
        SCOPED_TRACE(::testing::Message() << "valid=" << valid[s]);
        const std::vector<K> segment(keys.begin() + s * n, keys.begin() + s * n + valid[s]);
        std::vector<K> out(got.begin() + s * n, got.begin() + s * n + valid[s]);
        ASSERT_TRUE(same_bits(out, reference_sort(segment, descending, nans_largest(descending))));
        for (unsigned i = 0; i < n; ++i) {
          const std::uint32_t from = got_values[s * n + i];
          if (i >= valid[s]) {
            ASSERT_EQ(from, i) << "padding value moved";
            ASSERT_EQ(gpusort::key_traits<K>::ordered(got[s * n + i]),
                      gpusort::key_traits<K>::ordered(poison)) << "padding key touched";
            continue;
          }
          ASSERT_LT(from, valid[s]);
          ASSERT_EQ(gpusort::key_traits<K>::ordered(keys[s * n + from]),
                    gpusort::key_traits<K>::ordered(got[s * n + i]))
              << "value left its key at " << i;
        }
      }
    }
  }
}

TYPED_TEST(GpuBlockPrimitives, BlockSort) {
  check_primitive<primitive::block_sort, TypeParam, 64, 4>();
  check_primitive<primitive::block_sort, TypeParam, 128, 8>();
}

TYPED_TEST(GpuBlockPrimitives, BlockMerge) {
  check_primitive<primitive::block_merge, TypeParam, 64, 4>();
  check_primitive<primitive::block_merge, TypeParam, 256, 8>();
}

TYPED_TEST(GpuBlockPrimitives, WarpSort) {
  check_primitive<primitive::warp_sort, TypeParam, 32, 1>();
  check_primitive<primitive::warp_sort, TypeParam, 32, 4>();
  check_primitive<primitive::warp_sort, TypeParam, 32, 8>();
}
