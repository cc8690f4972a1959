// The pieces of what a file sort reports (gpusort sort --stats, the library's file_sort_stats,
// declared in gpusort/external.hpp): stage clocks, the algorithm as named for the user.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/external.hpp"  // file_sort_stats
#include "gpusort/sort.hpp"


namespace gpusort::detail::external {

// Seconds of each stage, for the statistics of a sort.
struct stage_clock {
  using clock = std::chrono::steady_clock;
  clock::time_point start = clock::now();
  double lap() {
    const clock::time_point now = clock::now();
    const double seconds = std::chrono::duration<double>(now - start).count();
    start = now;
    return seconds;
  }
};

// The algorithm as --stats names it: its name, and for automatic the sort it picks for n
// records here ("automatic (cub_radix)"). Taken before the sort, whose workspace changes the
// free memory that the choice depends on.
template <class K>
std::string describe_algorithm(const gpusort::options& opt, std::uint64_t n, bool pairs) {
  const std::string name(gpusort::method_name(opt));
  if (opt.algo != gpusort::algorithm::automatic) return name;
  const gpusort::algorithm pick = pairs ? gpusort::automatic_algorithm<K, std::uint32_t>(n, opt)
                                        : gpusort::automatic_algorithm<K>(n, opt);
  return name + " (" + std::string(gpusort::to_string(pick)) + ")";
}

// The statistics of a sort done in memory: the plan and the three stages.
inline void add_in_memory_stats(file_sort_stats& stats, double read_s, double sort_s,
                                double write_s) {
  stats.add("plan", "in memory");
  stats.add_seconds("read", read_s);
  stats.add_seconds("sort", sort_s);
  stats.add_seconds("write", write_s);
}

}  // namespace gpusort::detail::external
