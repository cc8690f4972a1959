// User comparators (gpusort/sort.cuh) on the device: a struct sorted by its fields through
// automatic. A file of its own: each comparator type instantiates the sample sort, the bitonic
// sort and the segmented sort, and compiles apart from the rest of the API's tests (the
// refusals of options::stable in test_gpu_comparator_refusals.cu, side by side).
#include <gtest/gtest.h>

#include <algorithm>

#include "device_buffer.hpp"
#include "gpusort/sort.cuh"
#include "point_comparator.cuh"
#include "reference.hpp"

using namespace gpusort::testing;
namespace tools = gpusort::tools;

using GpuApi = GpuTest;

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
