// Records sorted with a user comparator, for `gpusort bench --types rec16,rec32,u64pair`: the
// case a comparison sort exists for. The library's sorts (through gpusort/sort.cuh) run next
// to thrust::sort and cub::DeviceMergeSort given the same comparator, in one process on one
// GPU, every result checked.
//   rec16    {u32 major, u32 minor, u64 payload}, by (major, minor); major in [0, 1000)
//   rec32    {u64 major, u64 minor, u64 payload, u64 spare}, by (major, minor); same spread
//   u64pair  {u64 key, u64 tie_break}, by (key, tie_break); key in [0, 2^20): many ties
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace gpusort::bench {

inline const std::vector<std::string>& record_type_names() {
  static const std::vector<std::string> names{"rec16", "rec32", "u64pair"};
  return names;
}
inline bool is_record_type(const std::string& name) {
  for (const std::string& r : record_type_names())
    if (r == name) return true;
  return false;
}
// The algorithms a record type can be sorted with here.
inline const std::vector<std::string>& record_algorithms() {
  static const std::vector<std::string> names{"automatic", "sample_sort", "sample_sort_random",
                                              "bitonic", "thrust", "cub_merge"};
  return names;
}

struct record_timing {
  std::string algorithm;
  std::vector<double> ms;       // ascending; empty if it failed or was wrong
  std::int64_t extra_bytes = 0;  // -1: unknown (thrust allocates its own)
  std::string problem;          // non-empty: a CUDA error or a wrong result
};

// Times each of `algorithms` (names of record_algorithms()) on n records of `type` made from
// `seed`: 2 warm-ups and `reps` timed runs, each on a fresh copy of the input, on `stream`
// (CUDA events), with `before_run(run)` queued between the copy and the start event (the
// bench's L2 flush). Every result is checked: sorted by the comparator, payloads a
// permutation.
// Throws std::bad_alloc when the input does not fit on the device.
std::vector<record_timing> time_record_sorts(const std::string& type, std::uint64_t n, int reps,
                                             std::uint64_t seed,
                                             const std::vector<std::string>& algorithms,
                                             cudaStream_t stream,
                                             const std::function<void(int)>& before_run);

}  // namespace gpusort::bench
