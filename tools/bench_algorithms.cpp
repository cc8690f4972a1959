// Which algorithms bench runs where (bench_algorithms.hpp).
#include "bench_algorithms.hpp"

#include <algorithm>

#include "bench.hpp"
#include "cli.hpp"  // usage_error
#include "gpusort/sort.hpp"

namespace gpusort::tools {

bool is_host_sort(std::string_view name) {
  return std::ranges::find(host_sorts, name) != std::end(host_sorts);
}

bool is_partial(std::string_view name) {
  return std::ranges::find(partial_methods, name) != std::end(partial_methods);
}

std::vector<std::string> bench_algorithms(bool gpu, bool segmented) {
  if (segmented) {
    if (!gpu) return {"sort_segmented", "std_sort"};
    return {"sort_segmented", "sort_segmented_offsets", "sort_segmented_indices",
            "cub_segmented_radix", "cub_segmented_sort", "top_k_rows"};
  }
  if (!gpu) return {"bitonic", "std_sort", "cpu_parallel"};
  std::vector<std::string> names;
  for (algorithm a : all_algorithms) names.emplace_back(to_string(a));
  names.emplace_back("sample_sort_random");
  names.insert(names.end(), std::begin(partial_methods), std::end(partial_methods));
  names.insert(names.end(), {"classic_bitonic", "std_sort", "cpu_parallel"});
  return names;
}

algorithm_selection select_algorithms(const std::vector<std::string>& asked, bool gpu,
                                      bool segmented) {
  // The host sorts: --algos may name them with or without a GPU, in either mode.
  const auto with_host_sorts = [](std::vector<std::string> names) {
    for (std::string_view host : host_sorts)
      if (std::ranges::find(names, host) == names.end()) names.emplace_back(host);
    return names;
  };
  const std::vector<std::string> here = with_host_sorts(bench_algorithms(gpu, segmented));
  const std::vector<std::string> anywhere = with_host_sorts(bench_algorithms(true, segmented));
  const std::vector<std::string> other_mode = bench_algorithms(true, !segmented);
  algorithm_selection selected;
  for (const std::string& name : asked.empty() ? bench_algorithms(gpu, segmented) : asked) {
    if (std::ranges::find(here, name) != here.end()) {
      selected.run.push_back(name);
    } else if (std::ranges::find(anywhere, name) != anywhere.end()) {
      selected.gpu_only.push_back(name);
    } else {
      std::string known;
      for (const std::string& a : anywhere) known += " " + a;
      const bool wrong_mode = std::ranges::find(other_mode, name) != other_mode.end();
      throw usage_error("--algos: " +
                        (!wrong_mode  ? "unknown algorithm '" + name + "'"
                         : segmented ? "'" + name + "' sorts single arrays, not --segments"
                                     : "'" + name + "' needs --segments") +
                        " (" + known.substr(1) + ")");
    }
  }
  return selected;
}

std::vector<std::string> reference_algorithms(bool gpu, bool segmented) {
  if (!gpu) return {"std_sort"};
  if (segmented) return {"cub_segmented_radix", "cub_segmented_sort"};
  return {"cub_radix", "cub_merge"};
}

}  // namespace gpusort::tools
