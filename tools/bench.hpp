// `gpusort bench` and `gpusort demo`: algorithms timed side by side in one process, each
// result verified, printed as a table and optionally written as CSV, JSON and figures
// (docs/design.md, Benchmarks and results); and `gpusort largest --all`, the largest n each algorithm fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/distributions.hpp"
#include "common/segments.hpp"

namespace gpusort::tools {

struct bench_config {
  std::vector<std::string> algorithms;  // empty: every one bench_algorithms() lists
  std::vector<std::string> key_types{"u32"};
  std::vector<distribution> distributions{distribution::uniform};
  std::vector<std::uint64_t> sizes;
  std::vector<segment_spec> segments;  // empty: single arrays; else each size in each layout
  bool pairs = false;  // u32 values (the original index) with the keys
  int reps = 20;     // timed runs per input array
  // Device runs start with a cold L2 cache (NVBench's default): after the input is restored,
  // a buffer twice the L2's size is written. Off: inputs that fit in L2 start warm.
  bool flush_l2 = true;
  int arrays = 1;    // fresh input arrays per point (Capannini et al. use 20)
  std::uint64_t seed = 1;
  unsigned buckets = 0;  // sample_sort's s; 0: its default
  std::uint32_t intervals = 0;  // approx*, approx_refine, top_k: options::intervals; 0: default
  std::uint64_t k = 1000;       // top_k's k (at most n)
  unsigned block_bits = 0;      // adaptive_bitonic: options::block_bits; 0: default
  std::string csv_path;   // empty: no CSV (unless plot_dir asks for one)
  std::string json_path;  // empty: no JSON
  std::string plot_dir;   // empty: no figures; else PNGs there, from csv_path or dir/bench.csv
  std::string gpu_name;  // empty: the device's own name
};

// Whether a CUDA device is usable (without the library's CPU-fallback notice).
bool cuda_device_present();

// What bench times here by default. Single arrays, with a GPU: every gpusort::algorithm
// (automatic too, so that its choice is measured against the others), sample_sort_random, the approximate sorts approx (linear splitters) and
// approx_sampled, top_k, then classic_bitonic, std_sort and cpu_parallel; without: the CPU
// backend (named bitonic), std_sort and cpu_parallel. Segments, with a GPU: sort_segmented,
// sort_segmented_offsets (the same through begin/end offsets even where the segments are
// batches), sort_segmented_indices (the argsort form: indices made by the sort, with --pairs
// u32 only), cub_segmented_radix, cub_segmented_sort and top_k_rows (the --k first keys of
// every segment, for layouts of equal segments); without: the CPU backend (named sort_segmented)
// and std_sort. --algos may name the host sorts std_sort and cpu_parallel in every case.
std::vector<std::string> bench_algorithms(bool gpu, bool segmented);

// Runs every (key type, distribution, size[, segment layout]) point and prints the table on
// stdout. Returns the exit code: 0, 1 if a sort gave a wrong result, 3 if a CUDA call failed.
// Throws usage_error for unknown names, bad counts and outputs that cannot be created (all
// checked before any timing), io_error if writing one fails.
int run_bench(const bench_config& config);

// Prints, for every device algorithm of bench_algorithms that sorts whole arrays, the largest
// n whose records (keys of `key_type`, u32 values if `pairs`) and workspace fit in the free
// device memory, found by workspace queries alone. Needs a CUDA device; returns the exit code.
int print_largest_sizes(const std::string& key_type, bool pairs);

}  // namespace gpusort::tools
