// automatic with a user comparator on records (gpusort/sort.cuh), the check shared by
// test_gpu_automatic_comparator_r{12,16,48}.cu: one record type a file, since each type
// instantiates CUB's merge sort, the sample sort, the bitonic sort and the segmented sort, and
// the three compile side by side (together they were the longest step of gpu-check's build).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "reference.hpp"

namespace gpusort::testing {

// automatic with a user comparator: CUB's merge sort up to 2^22 records, the randomized
// sample sort above, where its workspace is given (the query asks for exactly that), else
// the in-place bitonic sort; all sort, in both orders. Records of 12, 16 and 48 bytes (none
// takes the whole-array bitonic shortcut; 48 reads its splitters from global memory, above
// the shared table's 32 bytes), many equal keys, a total order (key, a, b).
template <int PAD>
struct keyed_record {
  std::uint32_t key, a, b;
  std::uint32_t pad[PAD];
};
struct by_key_a_b {
  template <int PAD>
  __host__ __device__ bool operator()(const keyed_record<PAD>& x,
                                      const keyed_record<PAD>& y) const {
    if (x.key != y.key) return x.key < y.key;
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  }
};

template <class R>
void check_automatic_comparator_sort(std::size_t n) {
  std::vector<R> input(n);
  for (std::size_t i = 0; i < n; ++i) {
    input[i] = R{};
    input[i].key = static_cast<std::uint32_t>(tools::random_bits(5, i) % 1000);
    input[i].a = static_cast<std::uint32_t>(tools::random_bits(6, i));
    input[i].b = static_cast<std::uint32_t>(i);
  }
  for (bool desc : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "record bytes=" << sizeof(R) << " n=" << n
                                      << " desc=" << desc);
    const gpusort::options opt{.direction = desc ? gpusort::order::descending
                                                 : gpusort::order::ascending};
    std::vector<R> expect = input;
    std::sort(expect.begin(), expect.end(), by_key_a_b{});
    if (desc) std::reverse(expect.begin(), expect.end());
    gpusort::options sampled = opt;
    sampled.algo = gpusort::algorithm::sample_sort;
    sampled.sampler = gpusort::sampling::random;
    guarded_buffer<R> queried(input);
    std::size_t pick_bytes = 0, bytes = 0;
    namespace dev = gpusort::detail::device;
    const bool merge = n <= dev::sample_sort_policy<R, gpusort::detail::no_value>::automatic_merge_max;
    if (merge)
      ASSERT_EQ(dev::merge_sort(nullptr, pick_bytes, queried.data(),
                                static_cast<gpusort::detail::no_value*>(nullptr), n, by_key_a_b{},
                                desc, nullptr),
                cudaSuccess);
    else
      ASSERT_EQ(gpusort::sort_keys(nullptr, pick_bytes, queried.data(), n, by_key_a_b{}, sampled),
                cudaSuccess);
    ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, queried.data(), n, by_key_a_b{}, opt),
              cudaSuccess);
    ASSERT_GT(pick_bytes, 1u);
    EXPECT_EQ(bytes, pick_bytes) << "the query asks for the " << (merge ? "merge" : "sample")
                                 << " sort's workspace";
    for (std::size_t given : {bytes, std::size_t{1}}) {  // the pick, then in place
      SCOPED_TRACE(::testing::Message() << "bytes given=" << given);
      guarded_buffer<R> d(input);
      guarded_buffer<unsigned char> temp(std::vector<unsigned char>(given, 0xab));
      std::size_t temp_bytes = given;
      ASSERT_EQ(gpusort::sort_keys(temp.data(), temp_bytes, d.data(), n, by_key_a_b{}, opt),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto got = d.to_host();
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].key, expect[i].key) << i;
        ASSERT_EQ(got[i].b, expect[i].b) << i;
      }
      EXPECT_TRUE(d.guard_intact());
      EXPECT_TRUE(temp.guard_intact());
    }
  }
}

// The sizes each record type is sorted at: CUB's merge sort up to 2^22 records (three sizes;
// the 12-byte records only there), the sample sort above.
template <class R>
void check_automatic_comparator_sizes(bool sample_sort_sizes) {
  for (std::size_t n : {std::size_t{3001}, std::size_t{100003}, std::size_t{1} << 20})
    check_automatic_comparator_sort<R>(n);
  if (sample_sort_sizes)
    for (std::size_t n : {(std::size_t{1} << 22) + 3, std::size_t{5000011}})
      check_automatic_comparator_sort<R>(n);
}

}  // namespace gpusort::testing
