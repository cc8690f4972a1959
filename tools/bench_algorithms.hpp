// Which algorithms bench runs where: the names it knows with and without a GPU, for single
// arrays and for --segments (bench_algorithms, in bench.hpp), the host sorts any run may add,
// the methods that sort only partly, and the references every row is compared with.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpusort::tools {

// The methods of approx.hpp that do not sort the whole array (GPU, single arrays only).
inline constexpr std::string_view partial_methods[] = {"approx", "approx_sampled", "top_k",
                                                        "select_k"};
// The baselines that sort on the host, with or without a GPU, single arrays or segments.
inline constexpr std::string_view host_sorts[] = {"std_sort", "cpu_parallel"};

bool is_host_sort(std::string_view name);
// The methods that leave the keys only partly sorted.
bool is_partial(std::string_view name);

struct algorithm_selection {
  std::vector<std::string> run;       // in the order asked
  std::vector<std::string> gpu_only;  // asked, but they need a CUDA device this machine lacks
};

// The algorithms of --algos (`asked`; empty: bench_algorithms' default) that run here.
// Throws usage_error for a name unknown, or known only in the other mode (--segments or not).
algorithm_selection select_algorithms(const std::vector<std::string>& asked, bool gpu,
                                      bool segmented);

// The algorithms whose speed every row is compared with ("vs X"): CUB's sorts on a GPU,
// std_sort without one.
std::vector<std::string> reference_algorithms(bool gpu, bool segmented);

}  // namespace gpusort::tools
