// The plan of an out-of-core sort: how many records one run holds (what fits the device
// budget with the sort's workspace, and the host budget), how many runs the input makes,
// and how the runs are merged (fan-in per pass and the number of passes). Pure arithmetic,
// constexpr, so that the tests can check it exhaustively and the tool can print it; and the
// host memory the default budget is taken from.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/error.hpp"

namespace gpusort::detail::external {

inline constexpr std::uint64_t mebibyte = std::uint64_t{1} << 20;

struct plan_request {
  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  std::uint64_t device_budget_bytes = 0;
  // Device bytes the sort needs per record beside the record itself, e.g. record_bytes for
  // an algorithm with a second buffer, 0 for the in-place bitonic sort.
  std::uint64_t workspace_bytes_per_record = 0;
  std::uint64_t host_budget_bytes = 0;  // 0: unlimited
  // Host buffers of one run while runs are formed: one filled from the input while the
  // other is sorted and written out.
  std::uint64_t host_run_buffers = 2;
  // Read buffer of each run being merged (the output gets one more); rounded up to records.
  std::uint64_t merge_buffer_bytes = mebibyte;
  // Runs open at once, kept well under the usual limit of 1024 open files.
  std::uint64_t max_fan_in = 512;
};

enum class plan_problem {
  none,
  no_record_bytes,
  device_budget_below_one_record,  // one record and its workspace exceed the device budget
  host_budget_below_one_record,    // host_run_buffers records exceed the host budget
  host_budget_below_merge,         // fewer than 2 input buffers + 1 output buffer fit
};

struct run_plan {
  plan_problem problem = plan_problem::none;
  std::uint64_t run_records = 0;       // records of every run but the last
  std::uint64_t run_count = 0;         // 0 for no records, 1 when no merge is needed
  std::uint64_t last_run_records = 0;  // 1..run_records when run_count > 0
  std::uint64_t merge_buffer_bytes = 0;  // of each merge input and the output; whole records
  std::uint64_t fan_in = 0;              // runs merged at once; 0 without a merge
  std::uint64_t merge_passes = 0;        // 0 without a merge

  constexpr bool ok() const { return problem == plan_problem::none; }
  constexpr std::uint64_t records_of_run(std::uint64_t run) const {
    return run + 1 == run_count ? last_run_records : run_records;
  }
};

// Passes of a merge that joins `fan_in` consecutive runs at a time until one remains.
constexpr std::uint64_t merge_pass_count(std::uint64_t runs, std::uint64_t fan_in) {
  std::uint64_t passes = 0;
  for (; runs > 1; ++passes) runs = (runs + fan_in - 1) / fan_in;
  return passes;
}

// Keys a run of the keys pipeline holds on `gpus` GPUs when `fit` keys fit one GPU's budget:
// where the keys need two runs or more but fewer than one a GPU, shorter runs (count / gpus,
// rounded up) so that every GPU sorts one; otherwise `fit` (one run holds them all, or each GPU
// already has a run).
constexpr std::uint64_t run_keys_on_gpus(std::uint64_t count, std::uint64_t fit, std::uint64_t gpus) {
  if (fit == 0 || count <= fit || gpus <= 1 || (count + fit - 1) / fit >= gpus) return fit;
  return (count + gpus - 1) / gpus;
}

constexpr run_plan plan_runs(const plan_request& request) {
  run_plan plan;
  if (request.record_bytes == 0) return {.problem = plan_problem::no_record_bytes};
  const std::uint64_t device_capacity =
      request.device_budget_bytes / (request.record_bytes + request.workspace_bytes_per_record);
  if (device_capacity == 0) return {.problem = plan_problem::device_budget_below_one_record};
  const std::uint64_t host_capacity =
      request.host_budget_bytes == 0
          ? device_capacity
          : request.host_budget_bytes /
                (std::max<std::uint64_t>(1, request.host_run_buffers) * request.record_bytes);
  if (host_capacity == 0) return {.problem = plan_problem::host_budget_below_one_record};

  const std::uint64_t buffer_records =
      std::max<std::uint64_t>(1, (request.merge_buffer_bytes + request.record_bytes - 1) /
                                     request.record_bytes);
  plan.merge_buffer_bytes = buffer_records * request.record_bytes;
  plan.run_records = std::min({device_capacity, host_capacity, request.records});
  if (request.records == 0) return plan;
  plan.run_count = (request.records + plan.run_records - 1) / plan.run_records;
  plan.last_run_records = request.records - (plan.run_count - 1) * plan.run_records;
  if (plan.run_count == 1) return plan;

  const std::uint64_t buffers_in_budget =
      request.host_budget_bytes == 0 ? plan.run_count + 1
                                     : request.host_budget_bytes / plan.merge_buffer_bytes;
  if (buffers_in_budget < 3) return {.problem = plan_problem::host_budget_below_merge};
  plan.fan_in = std::min({buffers_in_budget - 1, request.max_fan_in, plan.run_count});
  plan.merge_passes = merge_pass_count(plan.run_count, plan.fan_in);
  return plan;
}

// What is wrong with a plan, in the words of the budgets it was given.
inline std::string describe(plan_problem problem, const plan_request& request) {
  const std::string record = std::to_string(request.record_bytes) + "-byte record";
  switch (problem) {
    case plan_problem::none: return "";
    case plan_problem::no_record_bytes: return "records of 0 bytes cannot be sorted";
    case plan_problem::device_budget_below_one_record:
      return "the device memory budget of " + std::to_string(request.device_budget_bytes) +
             " bytes cannot hold one " + record + " and its " +
             std::to_string(request.workspace_bytes_per_record) + " bytes of workspace";
    case plan_problem::host_budget_below_one_record:
      return "the host memory budget of " + std::to_string(request.host_budget_bytes) +
             " bytes cannot hold " + std::to_string(request.host_run_buffers) +
             " run buffers of one " + record;
    case plan_problem::host_budget_below_merge:
      return "the host memory budget of " + std::to_string(request.host_budget_bytes) +
             " bytes cannot hold the 3 merge buffers of " +
             std::to_string(std::max(request.merge_buffer_bytes, request.record_bytes)) +
             " bytes that merging two runs needs";
  }
  return "";
}

// ---- the host memory a process may use -----------------------------------------------

// A control group that may limit memory: its directory and the file that holds the limit.
struct memory_cgroup {
  std::filesystem::path dir;
  std::string limit_file;
};

// The control groups of the text of /proc/self/cgroup whose limits count, under the cgroup file
// systems mounted at `cgroup_root`: v2's ("0::/path", memory.max) and v1's memory controller
// ("N:memory:/path", mounted at root/memory, memory.limit_in_bytes).
inline std::vector<memory_cgroup> memory_cgroups(std::string_view proc_self_cgroup,
                                                 const std::filesystem::path& cgroup_root) {
  std::vector<memory_cgroup> groups;
  for (std::size_t start = 0; start < proc_self_cgroup.size();) {
    const std::size_t end = std::min(proc_self_cgroup.find('\n', start), proc_self_cgroup.size());
    const std::string_view line = proc_self_cgroup.substr(start, end - start);
    start = end + 1;
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) continue;
    const std::string controllers = "," + std::string(line.substr(first + 1, second - first - 1)) + ",";
    const std::filesystem::path group = std::filesystem::path(std::string(line.substr(second + 1))).relative_path();
    if (controllers == ",,")
      groups.push_back({cgroup_root / group, "memory.max"});
    else if (controllers.find(",memory,") != std::string::npos)
      groups.push_back({cgroup_root / "memory" / group, "memory.limit_in_bytes"});
  }
  return groups;
}

// The lowest memory limit of memory_cgroups, read in each group and its parents up to the
// mount's root (a container sees its own group as the root); UINT64_MAX where none limits it.
inline std::uint64_t cgroup_memory_limit(std::string_view proc_self_cgroup,
                                         const std::filesystem::path& cgroup_root) {
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  for (const memory_cgroup& group : memory_cgroups(proc_self_cgroup, cgroup_root)) {
    const std::filesystem::path mount = group.limit_file == "memory.max" ? cgroup_root : cgroup_root / "memory";
    for (std::filesystem::path dir = group.dir;; dir = dir.parent_path()) {
      std::ifstream in(dir / group.limit_file);
      std::string text;
      std::uint64_t value = 0;
      if (in >> text && std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc{})
        limit = std::min(limit, value);  // "max": none
      if (dir == mount || !dir.has_relative_path() || dir.parent_path() == dir) break;
    }
  }
  return limit;
}

// The memory this process may use: the machine's, or less where its control group limits it
// (a container, a systemd slice); UINT64_MAX where neither can be read.
inline std::uint64_t host_memory_bytes() {
  std::uint64_t bytes = std::numeric_limits<std::uint64_t>::max();
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  std::ifstream in("/proc/self/cgroup");
  const std::string groups((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::min(bytes, cgroup_memory_limit(groups, "/sys/fs/cgroup"));
}

// The default host budget where none is given: half of host_memory_bytes, room for the page
// cache and everyone else.
inline std::uint64_t default_host_budget() { return host_memory_bytes() / 2; }

// The plan, or invalid_request (the budgets are the caller's) saying why there is none.
inline run_plan plan_runs_or_throw(const plan_request& request) {
  const run_plan plan = plan_runs(request);
  if (!plan.ok()) throw invalid_request(describe(plan.problem, request));
  return plan;
}

}  // namespace gpusort::detail::external
