// `gpusort bench` and `gpusort demo`: algorithms timed side by side in one process, each
// result verified, printed as a table and optionally written as CSV (DESIGN.md, Benchmarks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/distributions.hpp"

namespace gpusort::tools {

struct bench_config {
  std::vector<std::string> algorithms;  // empty: every one bench_algorithms() lists
  std::vector<std::string> key_types{"u32"};
  std::vector<distribution> distributions{distribution::uniform};
  std::vector<std::uint64_t> sizes;
  bool pairs = false;  // u32 values (the original index) with the keys
  int reps = 20;
  std::uint64_t seed = 1;
  std::string csv_path;  // empty: no CSV
  std::string gpu_name;  // empty: the device's own name
};

// Whether a CUDA device is usable (without the library's CPU-fallback notice).
bool cuda_device_present();

// What bench can time here. With a GPU: every gpusort::algorithm but automatic, then
// classic_bitonic and std_sort. Without: the CPU backend (named bitonic) and std_sort.
std::vector<std::string> bench_algorithms(bool gpu);

// Runs every (key type, distribution, size) point and prints the table on stdout. Returns
// the exit code: 0, 1 if a sort gave a wrong result, 3 if a CUDA call failed. Throws
// usage_error for unknown names, io_error if the CSV file cannot be written.
int run_bench(const bench_config& config);

}  // namespace gpusort::tools
