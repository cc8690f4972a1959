// Sorting more than the GPU holds: files of raw little-endian keys, (key, u32 value) pairs, and
// fixed-size records ordered by a key of raw bytes (memcmp order, as the Sort Benchmark's
// 100-byte records with 10-byte keys), file to file; and keys in host memory. The machinery is
// `gpusort sort`'s (docs/out_of_core.md): on a GPU, keys go through the pinned pipeline (runs
// merged on the GPU in windows when they exceed the device budget); pairs and records through
// the record pipeline (keys or 8-byte key prefixes with positions on the device, records
// gathered on the host, runs merged on the GPU in windows); without a GPU (or for plans of
// more than 64 runs) they are cut into runs that fit the budgets, each sorted with
// gpusort::sort (the CPU backend without a GPU), and merged on the CPU.
//
//   #include "gpusort/external.hpp"   // link gpusort::external (compiled in src/external/;
//                                      // this is its one public header)
//   gpusort::external_options opt{.device_budget_bytes = 4ull << 30};
//   opt.progress = [](std::string_view phase, std::uint64_t done, std::uint64_t total) { ... };
//   gpusort::sort_file<float>("in.f32", "out.f32", opt);
//
// Guarantees: the input is never written; the output appears (renamed over `out`) only when
// complete and checked (in order, the same records as the input: order-independent checksums);
// the scratch files (runs, the pending output) are removed on success, on errors and on
// cancellation, and, once set_signal_cleanup(true) asked for it, when SIGINT, SIGTERM or
// SIGHUP ends the process (handlers installed on first use unless the signal is ignored;
// scratch a killed process left is removed by the next sort for the same output); a full
// disk is reported before the work where the size is known. Pairs and records come out
// stable (equal keys in input order); keys alone as the sort leaves them.
// `in` and `out` may be the same file. `out` may be a FIFO or a device (written in order when
// complete), or "-" for standard output.
//
// Failures: gpusort::invalid_request (an input that is missing or not a whole number of
// records, an output that cannot be created, budgets too small for one record) before
// anything is written; gpusort::io_failure (a read or write failed midway);
// gpusort::wrong_result (a sort returned a wrong result: nothing written); gpusort::cancelled
// (external_options::cancel was set); gpusort::error (a CUDA failure).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/options.hpp"
#include "gpusort/sort.hpp"  // sortable_key, supported_value, payload_of

namespace gpusort {

// What a file or host-array sort did, item by item as `gpusort sort --stats` prints them: the
// algorithm, the plan (in memory, on the GPU at once, spread, or runs and how they were merged)
// and the busy seconds of each stage ("read", "sort", "copy in"...: stages of a pipeline
// overlap).
struct file_sort_stats {
  std::vector<std::pair<std::string, std::string>> items;

  void add(std::string name, std::string value) {
    items.emplace_back(std::move(name), std::move(value));
  }
  void add_seconds(std::string name, double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f s", seconds);
    add(std::move(name), text);
  }
  // The value of the first item called `name`, or "" without one.
  std::string operator[](std::string_view name) const {
    for (const auto& [item, value] : items)
      if (item == name) return value;
    return "";
  }
  // "name: value", a line each.
  std::string text() const {
    std::string lines;
    for (const auto& [item, value] : items) lines += item + ": " + value + "\n";
    return lines;
  }
};

struct external_options {
  // The sort of each run: algorithm, direction and NaN placement (the stream is not used).
  // Runs are sorted and merged with NaNs as the largest keys; where sort.nans asks for them
  // as the smallest, the finished output's NaN block is moved to the other end before it is
  // committed (external/nan_move.hpp: two more passes, only when there are NaNs).
  options sort{};
  // Device memory for one run and the sort's workspace; 0: 90% of the free device memory.
  // Without a GPU, the CPU backend's budget (a run and one record of workspace per record).
  std::uint64_t device_budget_bytes = 0;
  // Host memory for the runs and the merge buffers; 0: unlimited (records: half the
  // machine's memory once they do not fit it).
  std::uint64_t host_budget_bytes = 0;
  // Where the runs are written; empty: beside `out` (the pending output always goes there,
  // to be renamed over it).
  std::string scratch_directory;
  // The GPUs that sort keys alone (host arrays and keys files; pairs and records use the
  // current GPU): more than one GPU's worth of keys is cut into runs that every GPU sorts
  // and merges at once, each over its own link. Empty: every visible GPU, the current one
  // first (keys that fit one GPU are sorted there).
  std::vector<int> devices;
  // Called as the work goes, on the calling thread, between pieces of work: the phase
  // ("reading", "sorting", "runs", "merge", "checking", "writing"...) and `done` of `total`
  // units as a counted phase advances; a phase that is not counted is reported once as it
  // starts, with total 0.
  std::function<void(std::string_view phase, std::uint64_t done, std::uint64_t total)> progress;
  // Set (from any thread) to stop: the call throws gpusort::cancelled at its next progress
  // report (every piece of reading, writing, runs and merging; a sort in memory finishes
  // first), leaving nothing behind.
  const std::atomic<bool>* cancel = nullptr;
  // Host arrays (gpusort::sort of a span): pin the caller's pageable memory for the call
  // (cudaHostRegister) and copy it straight, instead of staging it through pinned buffers that
  // several threads fill. On one GPU the array is pinned in pieces as it is copied in (the
  // pinning overlaps the copies), copied back straight, then unpinned; spread over several
  // GPUs it is pinned whole first. Pinning costs time of its own (docs/performance.md
  // measures both); memory that is already pinned is always copied straight.
  bool register_host_memory = false;
};

// Fixed-size records ordered by `key_bytes` bytes at `key_offset` (unsigned bytes, memcmp).
struct record_format {
  std::uint64_t record_bytes = 0;
  std::uint64_t key_offset = 0;
  std::uint64_t key_bytes = 0;
};

namespace detail::external {

// Compiled in src/external/: files.cpp (every key type but bool), host_arrays.cpp (every key
// type and value size).
template <class K>
gpusort::file_sort_stats sort_typed_file(const std::string& in, const std::string& out,
                                         bool pairs, const gpusort::external_options& opt);
gpusort::file_sort_stats sort_records_file(const std::string& in, const std::string& out,
                                           const gpusort::record_format& format,
                                           const gpusort::external_options& opt);
void set_signal_cleanup(bool on);
// Host arrays (src/external/host_arrays.cpp, compiled for every key type and value size).
template <class K>
gpusort::file_sort_stats sort_host_keys(std::span<K> keys, const gpusort::external_options& opt);
template <class K, class P>
gpusort::file_sort_stats sort_host_pairs(K* keys, P* values, std::uint64_t n,
                                         const gpusort::external_options& opt);

}  // namespace detail::external

// Sorts keys in host memory, any number of them, more than the GPUs hold included. The plan
// (returned with the seconds of each stage) is the first that fits:
//   - several GPUs in external_options::devices (by default every visible GPU) and at least
//     1 GiB that fits their sum (a slice and about twice that again on each): each GPU copies
//     its slice in over its own link, gpusort::dist sorts and exchanges the slices over
//     NVLink, and each GPU copies its range of the result out (needs gpusort::dist);
//   - the keys and the sort's workspace fit the first GPU's budget: in, one sort, out;
//   - beyond that, runs sorted on every GPU at once, kept in host memory within
//     host_budget_bytes (by default half the machine's memory, else in a scratch file under
//     scratch_directory or the system's temporary directory), and merged on the GPUs in
//     windows.
// Pageable memory is staged through pinned buffers by several threads, pinned memory copied
// straight (see register_host_memory). Without a GPU the CPU backend sorts in place. Narrow
// keys (bool, int8 ... __nv_bfloat16) travel through the runs as their 32-bit codes, as the
// library sorts them on the device. progress and cancel work as for files (cancel between
// phases); a cancelled or failed sort leaves the keys in an unspecified order (the same keys
// until the copies back begin).
template <sortable_key K>
file_sort_stats sort(std::span<K> host_keys, const external_options& opt) {
  return detail::external::sort_host_keys(host_keys, opt);
}

// Sorts keys in host memory with their values (4, 8 or 16 bytes each), by the same plans as
// keys alone; pairs beyond the GPUs' memory are sorted by the CPU backend (sort_pairs_file
// sorts larger ones in runs). Equal keys keep their input order where opt.sort.stable asks for
// it or the algorithm is stable (automatic's cub_radix, and the spread over GPUs with stable).
template <sortable_key K, detail::supported_value V>
file_sort_stats sort(std::span<K> host_keys, std::span<V> host_values, const external_options& opt) {
  if (host_values.size() != host_keys.size())
    throw invalid_request("gpusort::sort (host pairs): " + std::to_string(host_values.size()) +
                          " values for " + std::to_string(host_keys.size()) + " keys");
  using P = detail::payload_of<V>;
  return detail::external::sort_host_pairs<K, P>(host_keys.data(),
                                                 reinterpret_cast<P*>(host_values.data()),
                                                 host_keys.size(), opt);
}

// Whether the file sorts may install their handlers for SIGINT, SIGTERM and SIGHUP (off by
// default: a library installs none unless asked), which remove the scratch files and then end
// the process by the signal as before. Turn it on before the first file sort in a program that
// leaves those signals to their default (a command-line tool, as gpusort's); a program that
// handles them itself (a Python interpreter, a server) stops sorts through
// external_options::cancel instead.
inline void set_signal_cleanup(bool on) { detail::external::set_signal_cleanup(on); }

// Sorts the keys of type K in the file `in` into `out`. Returns what it did (the plan and
// the seconds of each stage, as `gpusort sort --stats` prints them). Narrow keys (int8 ...
// __nv_bfloat16, not bool) are sorted on one GPU or the CPU backend, in memory or by the run
// path (run files merged on the CPU), or with a device list by the keys pipeline on those GPUs
// (as 32-bit codes); their pairs, as every type's, on one GPU whatever the list.
template <sortable_key K>
  requires(!std::is_same_v<K, bool>)
file_sort_stats sort_file(const std::string& in, const std::string& out,
                          const external_options& opt = {}) {
  return detail::external::sort_typed_file<K>(in, out, false, opt);
}

// Sorts the (K key, u32 value) records of `in` into `out` by key, stably.
template <sortable_key K>
  requires(!std::is_same_v<K, bool>)
file_sort_stats sort_pairs_file(const std::string& in, const std::string& out,
                                const external_options& opt = {}) {
  return detail::external::sort_typed_file<K>(in, out, true, opt);
}

// Sorts the records of `format` in `in` into `out` by their byte key, stably.
inline file_sort_stats sort_records_file(const std::string& in, const std::string& out,
                                         const record_format& format,
                                         const external_options& opt = {}) {
  return detail::external::sort_records_file(in, out, format, opt);
}

}  // namespace gpusort
