// `gpusort largest --all` (bench.hpp's print_largest_sizes): for every device algorithm of
// bench that sorts whole arrays, the largest n that fits in the free device memory, found by
// workspace queries alone.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <memory>

#include "bench.hpp"
#include "bench/classic_bitonic.hpp"
#include "bench_algorithms.hpp"
#include "bench_input.hpp"  // cuda_check, device_properties
#include "cli.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::tools {
namespace {

// One row of `largest --all`.
struct largest_size {
  std::uint64_t n = 0, workspace_bytes = 0;
  std::string note;
};

// The largest n whose records (keys, and values unless null) and the workspace that `name`
// asks for fit in free_bytes, n at most `most`. The arrays must span `most` records, since
// a query validates both ends of them.
template <class K>
largest_size largest_fitting(const std::string& name, K* keys, std::uint32_t* values,
                             std::uint64_t most, std::uint64_t free_bytes) {
  const std::uint64_t record = record_bytes<K>(values != nullptr);
  largest_size result;
  if (name == "classic_bitonic") {
    if (values)
      result.note = "keys only";
    else if (!bench::classic_bitonic_built<K>)
      result.note = "built for u32, u64 and f32 keys only";
    else
      result = {std::bit_floor(most), 0, "power-of-two n only, in place"};
    return result;
  }
  options opt;
  parse_method(name, opt);
  const bool thrust = opt.algo == algorithm::thrust;
  cudaError_t refused = cudaSuccess;  // the last failing query's error
  // Whether n records and their workspace (into `bytes`) fit.
  const auto fits = [&](std::uint64_t n, std::uint64_t& bytes) {
    std::size_t asked = 0;
    const cudaError_t e = values ? sort_pairs(nullptr, asked, keys, values, n, opt)
                                 : sort_keys(nullptr, asked, keys, n, opt);
    if (e != cudaSuccess) {
      cudaGetLastError();
      refused = e;
      return false;
    }
    // thrust allocates its own: count a second copy of the records, as the CUB sorts beneath
    // it need.
    bytes = thrust ? n * record : asked;
    return bytes <= free_bytes - n * record;
  };
  // Binary search, the workspace growing with n: fits(low), and nothing above high fits.
  std::uint64_t low = 0, high = most, bytes = 0;
  while (low < high) {
    const std::uint64_t mid = high - (high - low) / 2;
    if (fits(mid, bytes))
      low = mid;
    else
      high = mid - 1;
  }
  result.n = low;
  if (low > 0) fits(low, result.workspace_bytes);
  if (thrust) result.note = "allocates its own workspace: estimated as one more copy";
  // Say so when the algorithm, not the memory, stops at n.
  refused = cudaSuccess;
  if (low < most && !fits(low + 1, bytes) && refused != cudaSuccess)
    result.note = (refused == cudaErrorNotSupported ? std::string("not built for this type")
                                                    : cudaGetErrorString(refused)) +
                  (low > 0 ? " above this n" : "");
  return result;
}

}  // namespace

int print_largest_sizes(const std::string& key_type, bool pairs) {
  return with_key_type(key_type, [&]<class K>() {
    const cudaDeviceProp prop = device_properties();
    std::size_t free_bytes = 0, total_bytes = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const std::uint64_t record = record_bytes<K>(pairs);
    const std::uint64_t most = free_bytes / record;  // no sort holds more records than fit
    // The queries' arrays: one managed allocation of `most` records. Nothing touches it, so
    // where the GPU pages managed memory on demand it takes no device memory.
    void* span = nullptr;
    cuda_check(cudaMallocManaged(&span, std::max<std::uint64_t>(most * record, 1)),
               "allocating managed memory for the queries");
    const std::unique_ptr<void, decltype(&cudaFree)> owner(span, &cudaFree);
    K* keys = static_cast<K*>(span);
    std::uint32_t* values = pairs ? reinterpret_cast<std::uint32_t*>(keys + most) : nullptr;

    constexpr double gib = 1024.0 * 1024.0 * 1024.0;
    std::printf("the largest n each algorithm sorts on %s: %s keys%s, %.2f GiB free of %.2f "
                "GiB\n(the records plus the workspace the algorithm asks for; found by workspace "
                "queries, nothing sorted)\n",
                prop.name, std::string(key_traits<K>::name).c_str(),
                pairs ? " with u32 values" : "", static_cast<double>(free_bytes) / gib,
                static_cast<double>(total_bytes) / gib);
    std::printf("%-18s %14s %7s %12s %14s  %s\n", "algorithm", "largest n", "log2 n",
                "records GiB", "workspace GiB", "note");
    for (const std::string& name : bench_algorithms(true, false)) {
      if (is_host_sort(name) || is_partial(name)) continue;
      const largest_size size = largest_fitting(name, keys, values, most, free_bytes);
      char log2_n[16] = "-";
      if (size.n > 0)
        std::snprintf(log2_n, sizeof log2_n, "%.2f", std::log2(static_cast<double>(size.n)));
      std::printf("%-18s %14llu %7s %12.2f %14.2f  %s\n", name.c_str(),
                  static_cast<unsigned long long>(size.n), log2_n,
                  static_cast<double>(size.n * record) / gib,
                  static_cast<double>(size.workspace_bytes) / gib, size.note.c_str());
    }
    return 0;
  });
}

}  // namespace gpusort::tools
