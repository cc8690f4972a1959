// What a file sort is asked (sort_request), and the device side of planning it: whether there
// is a GPU, and how many records fit a device budget with the sort's workspace.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/detail/core/cuda_resources.hpp"
#include "progress_sink.hpp"
#include "run_plan.hpp"
#include "stats.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::detail::external {

// What `gpusort sort` asks of an out-of-core sort.
struct sort_request {
  std::string input, output;
  bool pairs = false;
  gpusort::options opt;
  bool device_budget_given = false;
  std::uint64_t device_budget_bytes = 0;
  std::uint64_t host_budget_bytes = 0;  // 0: unlimited
  std::vector<int> devices;  // the keys pipeline's GPUs; empty: every visible one
  file_sort_stats* stats = nullptr;  // filled when not null
  progress_sink* meter = nullptr;  // where progress goes (none: nowhere)
};

namespace impl {

// Whether there is a CUDA device, asked without the library's notice that it sorts on the
// CPU (which would add a line to the usage errors of budgets too small).
inline bool gpu_present() {
  static const bool present = [] {
    int count = 0;
    const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();  // a machine without a driver leaves an error behind
    return ok;
  }();
  return present;
}

// Device workspace of sorting n records of the request's kind with its algorithm: the
// library's workspace query (temp == nullptr), on arrays that must lie in device memory, so
// on a managed allocation of n records, which the query does not touch. Only with a GPU.
template <class K, class V = std::uint32_t>
std::uint64_t device_workspace_bytes(std::uint64_t n, bool pairs, const gpusort::options& opt) {
  if (n == 0) return 0;
  device_array<K> keys;
  device_array<V> values;
  // A failure here is the GPU's (out of memory, a lost device): the library's CUDA error.
  cudaError_t e = allocate(keys, n, memory_kind::managed);
  if (e == cudaSuccess && pairs) e = allocate(values, n, memory_kind::managed);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw gpusort::error(e, "cannot query the sort's device workspace for " + std::to_string(n) +
                                " records");
  }
  std::size_t bytes = 0;
  e = pairs ? gpusort::sort_pairs(nullptr, bytes, keys.get(), values.get(), n, opt)
            : gpusort::sort_keys(nullptr, bytes, keys.get(), n, opt);
  if (e != cudaSuccess) throw gpusort::error(e, "the sort's workspace query failed");
  return bytes;
}

// The plan request's device side on a GPU: the most records n (up to `records`) whose
// records and workspace fit `budget`, found by binary search over workspace queries, put as
// a budget of exactly n records and their workspace (or, when not even one fits, the
// user's budget with one record's workspace, for the planner's message).
template <class K>
void fit_device_budget(plan_request& request, std::uint64_t budget, bool pairs,
                       const gpusort::options& opt) {
  const std::uint64_t bytes = request.record_bytes;
  const auto fits = [&](std::uint64_t n) {
    return n * bytes <= budget && device_workspace_bytes<K>(n, pairs, opt) <= budget - n * bytes;
  };
  std::uint64_t low = 0, high = std::min(request.records, budget / bytes);
  if (high > 0 && fits(high)) {
    low = high;
  } else {
    while (low + 1 < high) {  // fits(low), !fits(high)
      const std::uint64_t mid = low + (high - low) / 2;
      (fits(mid) ? low : high) = mid;
    }
  }
  if (low == 0) {
    request.device_budget_bytes = budget;
    request.workspace_bytes_per_record = device_workspace_bytes<K>(1, pairs, opt);
    return;
  }
  const std::uint64_t workspace = device_workspace_bytes<K>(low, pairs, opt);
  request.workspace_bytes_per_record = (workspace + low - 1) / low;
  request.device_budget_bytes = low * (bytes + request.workspace_bytes_per_record);
}

// The device budget of `request`: as given, else 90% of the free device memory (room for the
// CUDA context's own allocations).
inline std::uint64_t device_budget(const sort_request& request) {
  if (request.device_budget_given) return request.device_budget_bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
    throw io_failure("cannot read the device's free memory");
  return free_bytes / 10 * 9;
}

// The GPUs of a request's keys pipeline: the ones it names, else every visible GPU, the
// current one first (a sort that fits one GPU runs there). invalid_request for a GPU that does
// not exist or is named twice.
inline std::vector<int> request_devices(const sort_request& request) {
  int visible = 0, current = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || cudaGetDevice(&current) != cudaSuccess)
    visible = 0;
  cudaGetLastError();
  std::vector<int> devices = request.devices;
  if (devices.empty() && visible > 0) {
    devices.push_back(current);
    for (int d = 0; d < visible; ++d)
      if (d != current) devices.push_back(d);
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= visible)
      throw invalid_request("GPU " + std::to_string(devices[i]) + " does not exist (" +
                            std::to_string(visible) + " visible)");
    for (std::size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i])
        throw invalid_request("GPU " + std::to_string(devices[i]) + " is named twice");
  }
  return devices;
}

}  // namespace impl

}  // namespace gpusort::detail::external
