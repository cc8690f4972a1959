// What a sort call can be asked to do.
#pragma once

#include <cstdint>
#include <string_view>

#include <cuda_runtime_api.h>

namespace gpusort {

// Sorting algorithms. Loops in tests and benchmarks run over all_algorithms.
enum class algorithm {
  automatic,  // integer keys: cub_radix if its workspace fits in free memory; else bitonic
  bitonic,    // in-place bitonic network (Peters; Capannini): 0 extra bytes, not stable
  cub_radix,  // baseline: cub::DeviceRadixSort (needs a second buffer), stable
  cub_merge,  // baseline: cub::DeviceMergeSort (needs a second buffer), stable
  thrust,     // baseline: thrust::sort with the comparator
};

inline constexpr algorithm all_algorithms[] = {algorithm::automatic, algorithm::bitonic,
                                               algorithm::cub_radix, algorithm::cub_merge,
                                               algorithm::thrust};

constexpr std::string_view to_string(algorithm a) {
  switch (a) {
    case algorithm::automatic: return "automatic";
    case algorithm::bitonic: return "bitonic";
    case algorithm::cub_radix: return "cub_radix";
    case algorithm::cub_merge: return "cub_merge";
    case algorithm::thrust: return "thrust";
  }
  return "unknown";
}

// Parses a name as printed by to_string; returns false if it names no algorithm.
constexpr bool parse_algorithm(std::string_view name, algorithm& out) {
  for (algorithm a : all_algorithms) {
    if (to_string(a) == name) {
      out = a;
      return true;
    }
  }
  return false;
}

enum class order { ascending, descending };

struct options {
  algorithm algo = algorithm::automatic;
  order direction = order::ascending;
  cudaStream_t stream = nullptr;  // every device call is ordered on this stream
};

}  // namespace gpusort
