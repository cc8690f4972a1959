// The largest sort: n u32 keys made on the device (a shuffled counting sequence, each value
// n / 2^32 times when n > 2^32), sorted through the library's core API, and checked on the
// device (keys[i] == i >> shift), so no host copy of the array is needed.
#pragma once

#include <cstdint>
#include <string>

#include "gpusort/options.hpp"

namespace gpusort::bench {

struct largest_result {
  cudaError_t status = cudaSuccess;  // the first failure (allocation, sort or check)
  std::string failed_step;           // where it failed
  std::size_t workspace_bytes = 0;   // extra device memory the algorithm asked for
  double sort_ms = 0;
  std::uint64_t misplaced = 0;       // keys not where the sorted order puts them
};

largest_result sort_counting_sequence(std::uint64_t n, algorithm algo);

}  // namespace gpusort::bench
