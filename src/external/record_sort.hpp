// Files of fixed-size records sorted by a key of raw bytes (`--record-bytes B --key-bytes K
// [--key-offset O]`), as the Sort Benchmark's 100-byte records with 10-byte keys: keys compare
// as unsigned bytes (memcmp order), equal keys keep their input order, in memory and out of
// core; and gen's and check's records of that kind.
//
// A run (or the whole file) is sorted as (prefix, index) pairs with gpusort::sort, on the GPU
// if there is one: the prefix is the key's first min(8, K) bytes read big-endian into a u64
// (zero-padded), so that u64 order is memcmp order; then every group of equal prefixes gets
// its indices in order by the rest of the key and then the index (external_sort.hpp's
// sort_with_index), and the records are gathered by index. Only prefixes and indices go to
// the device: 12 bytes a record (16 beyond 2^32 - 1 records), whatever B.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "external_sort.hpp"
#include "run_merge.hpp"
#include "run_plan.hpp"
#include "file_io.hpp"
#include "progress_sink.hpp"
#include "records.hpp"
#include "stats.hpp"

namespace gpusort::detail::external {

// "100-byte records (10-byte key at offset 0)"
inline std::string describe_byte_records(const record_layout& layout) {
  return std::to_string(layout.record_bytes) + "-byte records (" +
         std::to_string(layout.key_bytes) + "-byte key at offset " +
         std::to_string(layout.key_offset) + ")";
}

// ---- sorting ------------------------------------------------------------------------

namespace impl {

// The stable order of the records of `data` by the byte key of `layout`, sorted with
// gpusort::sort as (prefix, index) pairs (see the top).
template <class Index>
std::vector<Index> byte_key_sort_order(std::span<const unsigned char> data,
                                       const record_layout& layout, const gpusort::options& opt) {
  const std::size_t bytes = layout.record_bytes, key_bytes = layout.key_bytes;
  const std::int64_t n = static_cast<std::int64_t>(data.size() / bytes);
  const unsigned char* keys = data.data() + layout.key_offset;
  std::vector<std::uint64_t> prefix(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static, 4096)
  for (std::int64_t i = 0; i < n; ++i)
    prefix[i] = key_prefix(keys + static_cast<std::size_t>(i) * bytes, key_bytes);
  std::vector<Index> index;
  if (key_bytes <= 8) {
    sort_with_index(prefix, index, opt, std::less<Index>());
  } else {
    const unsigned char* rest = keys + 8;
    const std::size_t rest_bytes = key_bytes - 8;
    const bool descending = layout.descending;
    sort_with_index(prefix, index, opt, [=](Index a, Index b) {
      const int sign = std::memcmp(rest + static_cast<std::size_t>(a) * bytes,
                                   rest + static_cast<std::size_t>(b) * bytes, rest_bytes);
      if (sign != 0) return descending ? sign > 0 : sign < 0;
      return a < b;
    });
  }
  return index;
}

template <class Index>
void sort_byte_records_run(std::span<unsigned char> data, const record_layout& layout,
                           const gpusort::options& opt) {
  const std::vector<Index> order = byte_key_sort_order<Index>(data, layout, opt);
  const auto sorted = uninitialized_bytes(data.size());
  gather_records(data.data(), order.data(), order.size(), layout.record_bytes, sorted.get());
  copy_in_parallel(data.data(), sorted.get(), data.size());
}

// Sorts one run of records in place, stably by their byte key.
inline void sort_byte_records_run(std::span<unsigned char> data, const record_layout& layout,
                                  const gpusort::options& opt) {
  if (data.size() / layout.record_bytes <= std::numeric_limits<std::uint32_t>::max())
    sort_byte_records_run<std::uint32_t>(data, layout, opt);
  else
    sort_byte_records_run<std::uint64_t>(data, layout, opt);
}

// Bytes a record's sort key takes on the device: the prefix and the index.
constexpr std::uint64_t sort_key_bytes(std::uint64_t records) {
  return records <= std::numeric_limits<std::uint32_t>::max() ? 12 : 16;
}

// The most records (up to `records`) whose prefixes, indices and the sort's workspace fit
// `budget` bytes of device memory, by binary search over the library's workspace queries.
template <class Index>
std::uint64_t records_fitting_device(std::uint64_t records, std::uint64_t budget,
                                     const gpusort::options& opt) {
  constexpr std::uint64_t key_bytes = sizeof(std::uint64_t) + sizeof(Index);
  const auto fits = [&](std::uint64_t n) {
    return n * key_bytes <= budget &&
           device_workspace_bytes<std::uint64_t, Index>(n, true, opt) <= budget - n * key_bytes;
  };
  std::uint64_t low = 0, high = std::min(records, budget / key_bytes);
  if (high > 0 && fits(high)) return high;
  while (low + 1 < high) {  // fits(low), !fits(high)
    const std::uint64_t mid = low + (high - low) / 2;
    (fits(mid) ? low : high) = mid;
  }
  return low;
}

}  // namespace impl

// The plan of sorting the records of request.input out of core, or none when they sort in
// memory: a host sort (--algo std_sort|cpu_parallel), fewer than 2 records, a plan of one run,
// or, without budgets, when the whole file with its prefixes and indices fits half the
// machine's memory and (on a GPU) the prefixes, indices and the sort's workspace fit the free
// device memory. Without budgets beyond that, the host budget is half the machine's memory
// and the device budget 90% of the free device memory. Without a GPU a device budget holds a
// record's sort key twice (the key and one key of workspace). A file that is no whole number
// of records and budgets too small are invalid_request.
inline std::optional<run_plan> plan_byte_records_out_of_core(const sort_request& request,
                                                             const record_layout& layout,
                                                             bool host_sort) {
  const std::uint64_t size = input_file_size(request.input);
  const std::uint64_t bytes = layout.record_bytes;
  if (size % bytes != 0)
    throw invalid_request(request.input + ": " + std::to_string(size) +
                      " bytes is not a whole number of " + describe_byte_records(layout));
  const std::uint64_t records = size / bytes;
  if (records < 2 || host_sort) return std::nullopt;
  const bool budgets = request.device_budget_given || request.host_budget_bytes > 0;
  const bool gpu = impl::gpu_present();
  const bool wide = records > std::numeric_limits<std::uint32_t>::max();
  const std::uint64_t key_bytes = impl::sort_key_bytes(records);
  const auto device_records = [&](std::uint64_t budget) {
    return wide ? impl::records_fitting_device<std::uint64_t>(records, budget, request.opt)
                : impl::records_fitting_device<std::uint32_t>(records, budget, request.opt);
  };

  std::uint64_t host_budget = request.host_budget_bytes;
  std::uint64_t device_budget = request.device_budget_bytes;
  if (!budgets) {
    const bool host_fits = records <= default_host_budget() / (bytes + 16);
    bool device_fits = true;
    if (gpu) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
        throw io_failure("cannot read the device's free memory");
      device_fits = device_records(free_bytes) == records;
      device_budget = free_bytes / 10 * 9;  // room for the CUDA context's own allocations
    }
    if (host_fits && device_fits) return std::nullopt;
    if (!host_fits) host_budget = default_host_budget();
  } else if (gpu && !request.device_budget_given) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
      throw io_failure("cannot read the device's free memory");
    device_budget = free_bytes / 10 * 9;
  }

  // Records a run may hold on the device side; the planner sees them as a device budget of
  // that many whole records without workspace.
  std::uint64_t run_limit = records;
  const std::string sort_key = "one record's " + std::to_string(key_bytes) +
                               "-byte sort key (an 8-byte key prefix and a " +
                               std::to_string(key_bytes - 8) + "-byte index)";
  if (gpu) {
    run_limit = device_records(device_budget);
    if (run_limit == 0) {
      const std::uint64_t workspace =
          wide ? impl::device_workspace_bytes<std::uint64_t, std::uint64_t>(1, true, request.opt)
               : impl::device_workspace_bytes<std::uint64_t, std::uint32_t>(1, true, request.opt);
      throw invalid_request("the device memory budget of " + std::to_string(device_budget) +
                        " bytes cannot hold " + sort_key + " and its " +
                        std::to_string(workspace) + " bytes of workspace");
    }
  } else if (request.device_budget_given) {
    run_limit = std::min(records, device_budget / (2 * key_bytes));
    if (run_limit == 0)
      throw invalid_request("the device memory budget of " + std::to_string(device_budget) +
                        " bytes cannot hold " + sort_key + " and its " +
                        std::to_string(key_bytes) + " bytes of workspace");
  }
  plan_request plan{.records = records,
                    .record_bytes = bytes,
                    .device_budget_bytes = run_limit * bytes,
                    .workspace_bytes_per_record = 0,
                    .host_budget_bytes = host_budget,
                    // the run, its gathered copy, and the prefixes and indices
                    .host_run_buffers = 2 + (16 + bytes - 1) / bytes};
  if (host_budget > 0)  // a fan-in of 8 at least while buffers stay over 1 record
    plan.merge_buffer_bytes = std::clamp<std::uint64_t>(host_budget / 9, bytes, mebibyte);
  const run_plan planned = plan_runs_or_throw(plan);
  if (planned.run_count <= 1) return std::nullopt;
  return planned;
}

namespace impl {

// Sorts the whole file in memory: read on all cores, sorted by index, gathered in pieces that
// are checked and written to the output, committed. 0, or 3 for a wrong result (nothing written).
template <class Index, class H>
int sort_byte_records_in_memory(const sort_request& request, const record_layout& layout,
                                const H& host, pending_file& out) {
  const std::string host_sort = host_sort_name(host);
  progress_sink& meter = request.meter ? *request.meter : silent_progress();
  stage_clock clock;
  const std::uint64_t size = input_file_size(request.input);
  const std::size_t bytes = layout.record_bytes;
  meter.phase("reading", true);
  const auto data = uninitialized_bytes(size);
  {
    const file_handle in = open_input(request.input);
    in_chunks(size, meter, [&](std::uint64_t offset, std::size_t length) {
      read_at(::fileno(in.get()), offset, data.get() + offset, length, request.input);
    }, parallel_chunk_bytes);
  }
  const std::span<const unsigned char> input(data.get(), size);
  const double read_s = clock.lap();
  meter.phase("checking", false);
  const checksum input_sum = checksum_of_byte_records(input, bytes);
  meter.phase("sorting", false);
  std::vector<Index> order;
  if constexpr (replaces_sort<H>)
    order = host.template order<Index>(input, layout);
  else
    order = byte_key_sort_order<Index>(input, layout, request.opt);
  const double sort_s = clock.lap();
  const output_file output(::fileno(out.get()), size, out.path(), out.replaces_a_file());
  record_tally tally;
  meter.phase("writing", true);
  gather_in_pieces(
      data.get(), order.data(), order.size(), layout, &tally,
      [&](std::uint64_t first, const unsigned char* piece, std::uint64_t count) {
        output.write(first * bytes, piece, count * bytes);
      },
      [&](std::uint64_t done) { meter.advance(done, order.size()); });
  order = {};
  // A wrong result must never replace OUT; both checks cost little next to the file I/O.
  if (tally.out_of_order > 0 || !(tally.sum == input_sum)) {
    report_wrong_result(request, host_sort, tally.out_of_order, tally.sum == input_sum);
  }
  out.commit();
  const double write_s = clock.lap();  // the checked gather into the output with it
  meter.finish();
  if (request.stats) add_in_memory_stats(*request.stats, read_s, sort_s, write_s);
  return 0;
}

}  // namespace impl

// Sorts the records of `layout` in request.input into `out` (request.output's pending file,
// created before any work): on a GPU in the record pipeline (record_pipeline.hpp) unless its
// plan has too many runs; else in memory or out of core (plan_byte_records_out_of_core), with
// the host sort `host` in place of the library's (no_host_sort, external_sort.hpp). 0, or 3
// for a wrong result (nothing written).
template <class H = no_host_sort>
int sort_byte_records_file(const sort_request& request, const record_layout& layout,
                           pending_file& out, const H& host = {}) {
  constexpr bool library_sort = !replaces_sort<H>;
  if (library_sort && impl::gpu_present()) {
    const std::uint64_t size = input_file_size(request.input);
    if (size % layout.record_bytes != 0)
      throw invalid_request(request.input + ": " + std::to_string(size) +
                            " bytes is not a whole number of " + describe_byte_records(layout));
    if (const auto status = sort_records_file_on_gpu<std::uint64_t>(request, layout, out))
      return *status;
  }
  if (const auto plan = plan_byte_records_out_of_core(request, layout, !library_sort))
    return sort_runs_and_merge(
        request, *plan, layout, out,
        [&](std::span<unsigned char> run) {
          impl::sort_byte_records_run(run, layout, request.opt);
        },
        [&](std::span<const unsigned char> run) {
          return checksum_of_byte_records(run, layout.record_bytes);
        });
  if (input_file_size(request.input) / layout.record_bytes <=
      std::numeric_limits<std::uint32_t>::max())
    return impl::sort_byte_records_in_memory<std::uint32_t>(request, layout, host, out);
  return impl::sort_byte_records_in_memory<std::uint64_t>(request, layout, host, out);
}

// ---- check --------------------------------------------------------------------------

struct byte_records_report {
  std::uint64_t records = 0;
  order_report order;
  checksum sum;
};

// The order (by the byte key of `layout`) and checksum of the records of `path`, read a
// chunk at a time.
inline byte_records_report check_byte_records(const std::string& path, const record_layout& layout,
                                              progress_sink& meter) {
  const std::uint64_t size = input_file_size(path);
  const std::size_t bytes = layout.record_bytes;
  if (size % bytes != 0)
    throw invalid_request(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                      describe_byte_records(layout));
  byte_records_report report;
  report.records = size / bytes;
  const std::uint64_t chunk = std::max<std::uint64_t>(1, parallel_chunk_bytes / bytes);
  // The previous chunk's last record, then the chunk: the pair across the boundary counts.
  std::vector<unsigned char> buffer((std::min(chunk, report.records) + 1) * bytes);
  const file_handle in = open_input(path);
  meter.phase("checking", true);
  for (std::uint64_t begin = 0; begin < report.records; begin += chunk) {
    const std::uint64_t count = std::min(chunk, report.records - begin);
    read_at(::fileno(in.get()), begin * bytes, buffer.data() + bytes, count * bytes, path);
    const bool joined = begin > 0;
    const std::span<const unsigned char> scanned(buffer.data() + (joined ? 0 : bytes),
                                                 (count + (joined ? 1 : 0)) * bytes);
    const order_report order = scan_record_order(scanned, layout);
    if (order.out_of_order > 0 && report.order.out_of_order == 0)
      report.order.first = begin + order.first - (joined ? 1 : 0);
    report.order.out_of_order += order.out_of_order;
    const checksum sum = checksum_of_byte_records(
        std::span<const unsigned char>(buffer.data() + bytes, count * bytes), bytes);
    report.sum.sum += sum.sum;
    report.sum.xor_all ^= sum.xor_all;
    std::memcpy(buffer.data(), buffer.data() + count * bytes, bytes);
    meter.advance(begin + count, report.records);
  }
  return report;
}

}  // namespace gpusort::detail::external
