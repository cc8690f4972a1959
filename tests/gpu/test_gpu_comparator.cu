// User comparators (gpusort/sort.cuh) on the device: a struct sorted by its fields through
// automatic, and options::stable refused on every entry point. A file of its own: each
// comparator type instantiates the sample sort, the bitonic sort and the segmented sort, and
// compiles apart from the rest of the API's tests.
#include <gtest/gtest.h>

#include <algorithm>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

using GpuApi = GpuTest;

struct point {
  std::int32_t x, y;
};
struct by_y_then_x {
  __host__ __device__ bool operator()(const point& a, const point& b) const {
    return a.y != b.y ? a.y < b.y : a.x < b.x;
  }
};

TEST_F(GpuApi, UserComparatorOnAStruct) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{65537},
                        std::size_t{1} << 20}) {
    SCOPED_TRACE(n);
    std::vector<point> pts(n);
    for (std::size_t i = 0; i < n; ++i)
      pts[i] = {int(tools::random_bits(1, i) % 1000), int(tools::random_bits(2, i) % 1000)};
    std::vector<point> expect = pts;
    std::stable_sort(expect.begin(), expect.end(), by_y_then_x{});
    std::size_t bytes = 7;
    {
      guarded_buffer<point> d(pts);
      ASSERT_EQ(gpusort::sort_keys(nullptr, bytes, d.data(), n, by_y_then_x{}), cudaSuccess);
    }
    ASSERT_GE(bytes, 1u) << "never 0";
    // The workspace asked for (CUB's merge sort, 8-byte keys), then 1 byte (in place).
    for (std::size_t given : {bytes, std::size_t{1}}) {
      SCOPED_TRACE(::testing::Message() << "bytes given=" << given);
      guarded_buffer<point> d(pts);
      poisoned_workspace temp(given);
      std::size_t temp_bytes = given;
      ASSERT_EQ(gpusort::sort_keys(temp.ptr, temp_bytes, d.data(), n, by_y_then_x{}), cudaSuccess);
      const auto got = d.to_host();
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].x, expect[i].x) << i;
        ASSERT_EQ(got[i].y, expect[i].y) << i;
      }
      ASSERT_TRUE(d.guard_intact());
    }
  }
}

// None of the user-comparator sorts is stable: options::stable is refused before anything is
// read or launched (no GPU needed: the refusal comes before the pointers are checked), on
// every entry point and for every algorithm that takes a comparator, and the query's bytes
// are left as they were.
TEST(UserComparatorApi, StableIsRefusedNotIgnored) {
  point* keys = nullptr;
  std::uint32_t* values = nullptr;
  const std::uint64_t offsets[] = {0, 16};
  for (auto algo : {gpusort::algorithm::automatic, gpusort::algorithm::bitonic,
                    gpusort::algorithm::sample_sort}) {
    SCOPED_TRACE(gpusort::to_string(algo));
    const gpusort::options opt{.algo = algo, .stable = true};
    std::size_t bytes = 7;
    EXPECT_EQ(gpusort::sort_keys(nullptr, bytes, keys, 16, by_y_then_x{}, opt),
              cudaErrorNotSupported);
    EXPECT_EQ(gpusort::sort_pairs(nullptr, bytes, keys, values, 16, by_y_then_x{}, opt),
              cudaErrorNotSupported);
    if (algo != gpusort::algorithm::sample_sort) {  // the batched sorts take no sample sort
      EXPECT_EQ(gpusort::sort_segmented_keys(nullptr, bytes, keys, 16, offsets, offsets + 1, 1,
                                             by_y_then_x{}, opt),
                cudaErrorNotSupported);
      EXPECT_EQ(gpusort::sort_segmented_pairs(nullptr, bytes, keys, values, 16, offsets,
                                              offsets + 1, 1, by_y_then_x{}, opt),
                cudaErrorNotSupported);
      EXPECT_EQ(gpusort::sort_batched_keys(nullptr, bytes, keys, 2, 8, by_y_then_x{}, opt),
                cudaErrorNotSupported);
      EXPECT_EQ(gpusort::sort_batched_pairs(nullptr, bytes, keys, values, 2, 8, by_y_then_x{}, opt),
                cudaErrorNotSupported);
    }
    EXPECT_EQ(bytes, 7u);
  }
}

