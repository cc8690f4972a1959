// What a sort reports with --stats (the tool) or in its statistics: the algorithm as named
// for the user, and the seconds of each stage.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

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

// --stats of a sort done in memory: the plan and the three stages, one line each.
inline void print_in_memory_stats(double read_s, double sort_s, double write_s) {
  std::printf("plan: in memory\nread: %.3f s\nsort: %.3f s\nwrite: %.3f s\n", read_s, sort_s,
              write_s);
}

}  // namespace gpusort::detail::external
