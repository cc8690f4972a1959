// options::stable refused by every user-comparator entry point (gpusort/sort.cuh). A file of
// its own beside test_gpu_comparator.cu: these calls instantiate the pairs, segmented and
// batched sorts for the comparator, and the two files compile side by side.
#include <gtest/gtest.h>

#include "gpusort/sort.cuh"
#include "point_comparator.cuh"

using namespace gpusort::testing;

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

