// A struct and a user comparator on it, shared by the comparator tests (test_gpu_comparator.cu,
// test_gpu_comparator_refusals.cu).
#pragma once

#include <cstdint>

namespace gpusort::testing {

struct point {
  std::int32_t x, y;
};
struct by_y_then_x {
  __host__ __device__ bool operator()(const point& a, const point& b) const {
    return a.y != b.y ? a.y < b.y : a.x < b.x;
  }
};

}  // namespace gpusort::testing
