// `gpusort sort` out of core, a sequential first version: plan runs under the device and host
// budgets (run_plan.hpp), read one run at a time, sort it with gpusort::sort (on the GPU if
// there is one, else the CPU backend), write it to the scratch directory, then merge the runs
// stably into the pending output file and commit it (run_merge.hpp). No stream overlap yet.
//
// Stability: keys alone come out as the in-memory sort's (equal keys have equal bits, but for
// NaNs of different payloads, which leave in input order here); pairs come out as a stable
// sort by key, whatever the algorithm: each run is sorted as (key, in-run index) pairs, the
// indices of equal keys are put back in order, and the records are gathered by index
// (sort_with_index, which record_sort.hpp's records with a byte key share).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/error.hpp"
#include "gpu_pipeline.hpp"
#include "record_host.hpp"
#include "run_merge.hpp"
#include "run_plan.hpp"
#include "gpusort/sort.hpp"
#include "progress_sink.hpp"
#include "record_pipeline.hpp"
#include "records.hpp"
#include "sort_request.hpp"
#include "stats.hpp"

namespace gpusort::detail::external {

namespace impl {

// The order-independent checksum of records.hpp, of packed records.
template <class K>
checksum checksum_of_packed(std::span<const unsigned char> data, bool pairs) {
  const std::size_t bytes = record_bytes<K>(pairs);
  checksum c;
  for (std::size_t at = 0; at < data.size(); at += bytes) {
    std::uint64_t key_bits = 0;
    std::uint32_t value = 0;
    std::memcpy(&key_bits, &data[at], sizeof(K));
    if (pairs) std::memcpy(&value, &data[at + sizeof(K)], sizeof value);
    c.add(record_hash_of(key_bits, pairs, value));
  }
  return c;
}

// The stable order of records by key, with gpusort::sort (on the GPU if there is one, else
// the CPU backend, neither of them stable by itself): `index` becomes 0..n-1, is sorted along
// with `keys`, and then every group of equal keys gets its indices in order by `tie_less`, a
// strict order on indices that must end with the index itself (equal records keep their input
// order). For keys that are a whole record's key, tie_less is the indices' `<`; for a key's
// prefix, the rest of the key and then the index. keys are left sorted.
template <class K, class Index, class TieLess>
void sort_with_index(std::vector<K>& keys, std::vector<Index>& index, const gpusort::options& opt,
                     TieLess tie_less) {
  const std::size_t n = keys.size();
  index.resize(n);
  std::iota(index.begin(), index.end(), Index{0});
  if (n < 2) return;
  gpusort::sort(keys, index, opt);
  order_tie_groups(n, index.data(), [&](std::size_t a, std::size_t b) {
    return key_code(keys[a], false) == key_code(keys[b], false);
  }, tie_less);
}

// Sorts one run of packed records in place with gpusort::sort; pairs stably (see the top).
template <class K, class Index>
void sort_pairs_run(std::span<unsigned char> data, const gpusort::options& opt) {
  constexpr std::size_t bytes = record_bytes<K>(true);
  const std::size_t n = data.size() / bytes;
  std::vector<K> keys(n);
  std::vector<Index> index;
  for (std::size_t i = 0; i < n; ++i) std::memcpy(&keys[i], &data[i * bytes], sizeof(K));
  sort_with_index(keys, index, opt, std::less<Index>());
  keys = {};
  std::vector<unsigned char> sorted(data.size());
  gather_records(data.data(), index.data(), index.size(), bytes, sorted.data());
  std::copy(sorted.begin(), sorted.end(), data.begin());
}

template <class K>
void sort_run(std::span<unsigned char> data, bool pairs, const gpusort::options& opt) {
  if (pairs) {
    if (data.size() / record_bytes<K>(true) <= std::numeric_limits<std::uint32_t>::max())
      sort_pairs_run<K, std::uint32_t>(data, opt);
    else
      sort_pairs_run<K, std::uint64_t>(data, opt);
    return;
  }
  std::vector<K> keys(data.size() / sizeof(K));
  std::memcpy(keys.data(), data.data(), data.size());
  gpusort::sort(keys, opt);
  std::memcpy(data.data(), keys.data(), data.size());
}

}  // namespace impl

// The plan of sorting `request` out of core, or none when it sorts in memory as before:
// without budgets on a host without a GPU when the run buffers fit default_host_budget (half
// the memory this process may use: its control group's limit counts), without budgets when the
// records and the sort's workspace fit the free device memory, and when the plan has a single
// run. Budgets too small are invalid_request (the planner's words). Without a GPU the device
// budget must hold each record twice: the record and one record of workspace.
template <class K>
std::optional<run_plan> plan_out_of_core(const sort_request& request) {
  const bool budgets = request.device_budget_given || request.host_budget_bytes > 0;
  const bool gpu = impl::gpu_present();
  const std::uint64_t size = input_file_size(request.input);
  const std::uint64_t bytes = record_bytes<K>(request.pairs);
  if (size % bytes != 0) {
    if (!budgets) return std::nullopt;  // the in-memory path says so, as before
    throw invalid_request(request.input + ": " + std::to_string(size) +
                      " bytes is not a whole number of " + describe_records<K>(request.pairs));
  }
  if (size / bytes < 2) return std::nullopt;  // nothing to sort: no budget needed
  plan_request plan{.records = size / bytes,
                    .record_bytes = bytes,
                    // keys: the run and the copy sorted; pairs: the run, keys and indices,
                    // and the gathered copy
                    .host_run_buffers = request.pairs ? 3u : 2u};
  plan.host_budget_bytes = request.host_budget_bytes;
  if (!budgets && !gpu) {
    // Without a GPU in memory takes the run buffers' worth of the file: past the default
    // budget the OOM killer would end the sort with no word, so it goes out of core.
    const std::uint64_t host = default_host_budget();
    if (size <= host / plan.host_run_buffers) return std::nullopt;
    plan.host_budget_bytes = host;
  }
  if (plan.host_budget_bytes > 0)  // a fan-in of 8 at least while buffers stay over 1 record
    plan.merge_buffer_bytes =
        std::clamp<std::uint64_t>(plan.host_budget_bytes / 9, bytes, mebibyte);
  if (gpu) {
    std::uint64_t budget = request.device_budget_bytes;
    if (!request.device_budget_given) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
        throw io_failure("cannot read the device's free memory");
      if (!budgets && plan.records * bytes <= free_bytes &&
          impl::device_workspace_bytes<K>(plan.records, request.pairs, request.opt) <=
              free_bytes - plan.records * bytes)
        return std::nullopt;  // it fits: in memory, as before
      budget = free_bytes / 10 * 9;  // room for the CUDA context's own allocations
    }
    impl::fit_device_budget<K>(plan, budget, request.pairs, request.opt);
  } else if (request.device_budget_given) {
    plan.device_budget_bytes = request.device_budget_bytes;
    plan.workspace_bytes_per_record = bytes;
  } else {
    plan.device_budget_bytes = std::numeric_limits<std::uint64_t>::max();
  }
  const run_plan planned = plan_runs_or_throw(plan);
  if (planned.run_count <= 1) return std::nullopt;
  return planned;
}

// Whether `request` sorts in the GPU pipeline of gpu_pipeline.hpp: keys alone (pairs take
// record_pipeline.hpp's), on a machine with a GPU.
inline bool sorts_keys_on_gpu(const sort_request& request) {
  return !request.pairs && impl::gpu_present();
}

// Keys a run of the keys pipeline holds: what fits the device budget (by default 90% of the
// free device memory of the GPU with the least) with the sort's workspace; all `count` when
// they fit; shorter where that would leave a GPU of the request without a run
// (run_keys_on_gpus). invalid_request when the budget holds not one key.
template <class K>
std::uint64_t keys_run_records(const sort_request& request, std::uint64_t count) {
  if (count <= 1) return std::max<std::uint64_t>(count, 1);
  std::uint64_t fewest = count;
  const std::vector<int> devices = impl::request_devices(request);
  for (const int device : devices) {
    const device_scope on(device);
    plan_request plan{.records = count, .record_bytes = sizeof(K), .host_run_buffers = 0};
    impl::fit_device_budget<K>(plan, impl::device_budget(request), false, request.opt);
    fewest = std::min(fewest, plan_runs_or_throw(plan).run_records);
    if (request.device_budget_given) break;  // the same on every GPU
  }
  return run_keys_on_gpus(count, fewest, devices.size());
}

// Sorts the keys file request.input into `out` in the GPU pipeline, with runs as long as the
// device budget holds with the sort's workspace (keys_run_records): one run when the file
// fits. 0, or 3 when the output failed its checks (nothing written).
template <class K>
int sort_keys_file_on_gpu(const sort_request& request, pending_file& out) {
  const std::uint64_t size = input_file_size(request.input);
  if (size % sizeof(K) != 0)
    throw invalid_request(request.input + ": " + std::to_string(size) +
                      " bytes is not a whole number of " + describe_records<K>(false));
  const std::uint64_t count = size / sizeof(K);
  return sort_keys_on_gpu<K>(request.input, count, keys_run_records<pipeline_key<K>>(request, count),
                             request.opt, request.host_budget_bytes,
                             impl::request_devices(request), request.stats, out,
                             request.meter ? *request.meter : silent_progress());
}

// The sequential run path of records of `layout`: reads request.input one run of `plan` at a
// time, sorts it in place stably with sort_run(std::span<unsigned char>), checks it (the order
// of `layout`, and checksum_of_run(std::span<const unsigned char>) before and after), writes
// it to the scratch directory, then merges the runs into `out` (request.output's pending
// file, created before any work) and commits it. 0, or 3 when a run sort returned a wrong result
// (nothing written). The plan and stage times go into request.stats.
template <class SortRun, class ChecksumOf>
int sort_runs_and_merge(const sort_request& request, const run_plan& plan,
                        const record_layout& layout, pending_file& out, SortRun&& sort_run,
                        ChecksumOf&& checksum_of_run) {
  const std::uint64_t total = (plan.run_count - 1) * plan.run_records + plan.last_run_records;

  scratch_directory scratch(out.scratch_anchor());
  progress_sink& meter = request.meter ? *request.meter : silent_progress();
  stage_clock clock;
  double read_s = 0, sort_s = 0, write_s = 0;

  if (input_file_size(request.input) != total * layout.record_bytes)
    throw io_failure(request.input + ": the file changed size while it was sorted");
  const file_handle in = open_input(request.input);
  std::vector<unsigned char> run(plan.run_records * layout.record_bytes);
  std::vector<std::filesystem::path> runs;
  meter.phase("runs", true);
  std::uint64_t done = 0;
  for (std::uint64_t r = 0; r < plan.run_count; ++r) {
    const std::span<unsigned char> records(run.data(),
                                           plan.records_of_run(r) * layout.record_bytes);
    clock.lap();
    read_bytes(in.get(), records.data(), records.size(), request.input);
    read_s += clock.lap();
    const checksum before = checksum_of_run(std::span<const unsigned char>(records));
    sort_run(records);
    // A wrong run must never reach OUT; both scans cost little next to the file I/O.
    const std::uint64_t out_of_order = scan_record_order(records, layout).out_of_order;
    const bool kept = checksum_of_run(std::span<const unsigned char>(records)) == before;
    sort_s += clock.lap();
    if (out_of_order > 0 || !kept)
      throw_wrong_result(gpusort::method_name(request.opt), " for run " + std::to_string(r + 1),
                         out_of_order, "records", kept, request.output);
    runs.push_back(write_run(scratch, records));
    write_s += clock.lap();
    done += plan.records_of_run(r);
    meter.advance(done, total);
    meter.run_written(runs.size());
  }
  run = {};

  std::string shown_phase = "runs";
  merge_runs(std::move(runs), layout, plan.fan_in, plan.merge_buffer_bytes, scratch, out.get(),
             out.path(), [&](std::string_view phase, std::uint64_t merged, std::uint64_t of) {
               if (phase != shown_phase) {
                 shown_phase = phase;
                 meter.phase(phase, true);
               }
               meter.advance(merged, of);
             });
  out.commit();
  const double merge_s = clock.lap();
  meter.finish();
  if (request.stats) {
    request.stats->add("plan", std::to_string(plan.run_count) + " runs of " +
                                   std::to_string(plan.run_records) + " records (the last " +
                                   std::to_string(plan.last_run_records) + "), merged " +
                                   std::to_string(plan.fan_in) + " at a time in " +
                                   std::to_string(plan.merge_passes) + " pass(es)");
    request.stats->add_seconds("read", read_s);
    request.stats->add_seconds("sort", sort_s);
    request.stats->add_seconds("write runs", write_s);
    request.stats->add_seconds("merge", merge_s);
  }
  return 0;
}

// Sorts the keys or pairs of request.input out of core by `plan` (sort_runs_and_merge).
template <class K>
int sort_out_of_core(const sort_request& request, const run_plan& plan, pending_file& out) {
  const bool pairs = request.pairs;
  const bool descending = request.opt.direction == gpusort::order::descending;
  // The runs' order: narrow floats' NaNs where request.opt puts them (narrow_file_request);
  // other floats' NaNs sort as the largest keys and move on commit (nan_move.hpp).
  const bool nans_lowest = gpusort::nans_lowest(request.opt.direction, request.opt.nans);
  return sort_runs_and_merge(
      request, plan,
      record_layout::keys<K>(pairs ? sizeof(std::uint32_t) : 0, descending,
                             narrow_key<K> && nans_lowest),
      out,
      [&](std::span<unsigned char> records) { impl::sort_run<K>(records, pairs, request.opt); },
      [&](std::span<const unsigned char> records) {
        return impl::checksum_of_packed<K>(records, pairs);
      });
}

// The in-memory paths sort with the library (no_host_sort), or with a sort in host memory in
// its place, the tool's CPU baselines (tools/host_sort.hpp): a type with
//   std::string name;
//   void sort(records<K>&, bool descending) const;                 keys, pairs stably
//   template <class Index> std::vector<Index> order(bytes, layout) const;   byte-key records
struct no_host_sort {};
template <class H>
inline constexpr bool replaces_sort = !std::is_same_v<H, no_host_sort>;

// The name a sort goes by in --stats and errors: the host sort's, else "".
template <class H>
std::string host_sort_name(const H& host) {
  if constexpr (replaces_sort<H>) return host.name;
  else return "";
}

// A sort whose output failed the checks: throw_wrong_result, with the sort's name.
[[noreturn]] inline void report_wrong_result(const sort_request& request,
                                             const std::string& host_sort,
                                             std::uint64_t out_of_order, bool kept) {
  throw_wrong_result(host_sort.empty() ? gpusort::method_name(request.opt) : host_sort, "",
                     out_of_order, "records", kept, request.output);
}

// Sorts the keys or pairs of request.input (in `format`: raw binary, binary_records, or the
// tool's text) in memory into `out`: read, sorted (by gpusort::sort, or the host sort `host`),
// checked (in order, the same records), written and committed. 0, or 3 when the sort returned
// a wrong result (nothing written).
template <class K, class H, class F>
int sort_keys_file_in_memory(const sort_request& request, const H& host, const F& format,
                             pending_file& out) {
  const std::string host_sort = host_sort_name(host);
  progress_sink& meter = request.meter ? *request.meter : silent_progress();
  const bool descending = request.opt.direction == gpusort::order::descending;
  stage_clock clock;
  records<K> r = format.template read<K>(request.input, request.pairs, meter);
  const double read_s = clock.lap();
  meter.phase("checking", false);
  const checksum input_sum = checksum_of(r);
  const std::string algorithm_used =
      host_sort.empty() ? describe_algorithm<K>(request.opt, r.keys.size(), request.pairs)
                        : host_sort;
  meter.phase("sorting", false);
  if constexpr (replaces_sort<H>) {
    if constexpr (!narrow_key<K>)  // narrow keys have none (narrow_file_request)
      host.sort(r, descending);
  } else if (request.pairs)
    gpusort::sort(r.keys, r.values, request.opt);
  else
    gpusort::sort(r.keys, request.opt);
  // A wrong result must never replace OUT; both scans cost little next to the file I/O.
  meter.phase("checking", false);
  // Float NaNs are sorted as the largest keys and moved on commit (place_nans_on_commit);
  // narrow floats' NaNs are where options::nans asks already.
  const order_report order =
      scan_order(r.keys, descending, gpusort::nans_lowest(request.opt.direction, request.opt.nans));
  const bool records_kept = checksum_of(r) == input_sum;
  if (order.out_of_order > 0 || !records_kept) {
    report_wrong_result(request, host_sort, order.out_of_order, records_kept);
  }
  const double sort_s = clock.lap();  // with both checks
  format.write(out, r, meter);
  const double write_s = clock.lap();
  meter.finish();
  if (request.stats) {
    request.stats->add("algorithm", algorithm_used);
    add_in_memory_stats(*request.stats, read_s, sort_s, write_s);
  }
  return 0;
}

// A request for a file of keys K, checked before any file opens: narrow keys sort with the
// library's algorithms (no host sort: invalid_request); and the library places their NaNs as
// `asked` (not as largest, moved on commit). A device list serves keys alone, as for every
// key type: pairs sort on one GPU (or the CPU backend) whatever it names.
template <class K>
void narrow_file_request(sort_request& request, const gpusort::options& asked,
                         const std::string& host_sort) {
  if constexpr (narrow_key<K>) {
    const std::string type(key_name<K>);
    if (!host_sort.empty())
      throw invalid_request(host_sort + " sorts 32- and 64-bit keys, not " + type);
    request.opt = asked;
  }
}

// Sorts the keys or pairs of request.input into `out` (request.output's pending file, created
// before any work) by the first path that applies: the GPU pipelines (raw keys, or pairs in at
// most max_pipeline_runs runs, on a GPU), the run path (out of core by plan_out_of_core), else
// in memory. 0, or 3 for a wrong result.
// Narrow keys (i8 ... bf16) take the keys pipeline, as codes, where a device list asks for it
// (several GPUs); otherwise, and for their pairs, the run path out of core, else memory
// (narrow_file_request checks the request first).
template <class K, class H = no_host_sort, class F = binary_records>
int sort_keys_file(const sort_request& request, pending_file& out, const H& host = {},
                   const F& format = {}) {
  constexpr bool library_sort = !replaces_sort<H>;
  constexpr bool text = !F::binary;
  if constexpr (narrow_key<K>) {
    if (!text && library_sort) {
      if (!request.devices.empty() && sorts_keys_on_gpu(request))
        return sort_keys_file_on_gpu<K>(request, out);
      if (const auto plan = plan_out_of_core<K>(request))
        return sort_out_of_core<K>(request, *plan, out);
    }
  } else if (!text && library_sort) {
    if (sorts_keys_on_gpu(request)) return sort_keys_file_on_gpu<K>(request, out);
    const bool descending = request.opt.direction == gpusort::order::descending;
    if (request.pairs && impl::gpu_present() &&
        input_file_size(request.input) % record_bytes<K>(true) == 0)
      if (const auto status = sort_records_file_on_gpu<K>(
              request, record_layout::keys<K>(sizeof(std::uint32_t), descending), out))
        return *status;
    if (const auto plan = plan_out_of_core<K>(request))
      return sort_out_of_core<K>(request, *plan, out);
  }
  return sort_keys_file_in_memory<K>(request, host, format, out);
}

}  // namespace gpusort::detail::external
