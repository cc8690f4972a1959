// Pairs and fixed-size records on the GPU, file to file. Only each record's device key goes to
// the device: the key itself for pairs, the first 8 bytes of a byte key read big-endian as a
// u64 (record_host.hpp's key_prefix) for records. There it is sorted with the record's
// position in its batch (positions written on the device), only the positions come back, and
// the records are gathered on the host in that order on all cores, in pieces that are checked
// and written while the next is gathered. Equal device keys are put in order on the host when
// they may be out of input order (a device sort that is not stable, float keys) or may hide
// different keys (byte keys longer than 8 bytes: the rest of the key, then the position).
//
// As for keys alone (gpu_pipeline.hpp), a file beyond the device budget is cut into runs,
// each sorted so and kept in host memory or a scratch file, and the runs are merged in windows:
// each window's slices of the runs (cut by comparing whole keys, merge_windows.hpp) are
// gathered into the batch buffer and sorted like a run. Slices come in run order and runs in
// input order, so the output is stable. The CPU heap merge of the run path
// (external_sort.hpp) remains for machines without a GPU and for plans of many small runs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_pipeline.hpp"
#include "merge_windows.hpp"
#include "gpusort/sort.hpp"
#include "record_host.hpp"
#include "sort_request.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::detail::external {

// The device side: device keys and u32 positions, the pairs sort's workspace, a stream, and
// pinned host arrays for the keys (filled a chunk at a time, each chunk copied while the next
// is filled) and for the sorted positions (and keys) that come back.
template <class K>
class device_records {
 public:
  static constexpr std::uint64_t chunk_records = std::uint64_t{1} << 22;

  device_records(std::uint64_t capacity, const gpusort::options& opt) : opt_(opt) {
    using impl::cuda_check;
    capacity = std::max<std::uint64_t>(capacity, 1);
    cuda_check(create(stream_), "cannot create a stream");
    opt_.stream = stream_.get();
    // Chosen once: the choice must not change as this buffer's allocations fill the device.
    if (opt_.algo == gpusort::algorithm::automatic)
      opt_.algo = gpusort::automatic_algorithm<K, std::uint32_t>(capacity, opt_);
    stable_ = gpusort::traits_of(opt_.algo).stable;
    cuda_check(allocate(keys_, capacity), "cannot allocate the device run buffer");
    cuda_check(allocate(positions_, capacity), "cannot allocate the device run buffer");
    cuda_check(gpusort::sort_pairs(nullptr, temp_bytes_, keys_.get(), positions_.get(), capacity,
                                   opt_),
               "the sort's workspace query failed");
    cuda_check(allocate(temp_, temp_bytes_), "cannot allocate the sort's workspace");
    cuda_check(allocate(host_keys_, capacity), "cannot allocate pinned memory");
    cuda_check(allocate(host_positions_, capacity), "cannot allocate pinned memory");
    cuda_check(timer_.init(), "cannot create an event");
  }
  ~device_records() {
    if (stream_) cudaStreamSynchronize(stream_.get());
  }
  device_records(const device_records&) = delete;
  device_records& operator=(const device_records&) = delete;

  // Whether equal keys come back in position order.
  bool stable() const { return stable_; }
  const gpusort::options& sort_options() const { return opt_; }

  // Puts n keys on the device: extract(keys, first, count) writes keys [first, first + count).
  template <class Extract>
  void upload(std::uint64_t n, Extract&& extract) {
    for (std::uint64_t first = 0; first < n; first += chunk_records) {
      const std::uint64_t count = std::min(chunk_records, n - first);
      extract(host_keys_.get() + first, first, count);
      impl::cuda_check(cudaMemcpyAsync(keys_.get() + first, host_keys_.get() + first,
                                       count * sizeof(K), cudaMemcpyHostToDevice, stream_.get()),
                       "a copy to the device failed");
    }
  }

  // Sorts the first n keys with their positions 0..n-1; the seconds it took on the device.
  double sort(std::uint64_t n) {
    using impl::cuda_check;
    cuda_check(timer_.start(stream_.get()), "cannot record an event");
    cuda_check(detail::fill_indices(positions_.get(), n, stream_.get()),
               "cannot write the positions");
    std::size_t bytes = temp_bytes_;
    cuda_check(gpusort::sort_pairs(temp_.get(), bytes, keys_.get(), positions_.get(), n, opt_),
               "the sort failed");
    double seconds = 0;
    cuda_check(timer_.seconds(stream_.get(), seconds), "the sort failed");
    return seconds;
  }

  // Brings the sorted positions (and, with `keys`, the sorted keys) back to the host arrays.
  void download(std::uint64_t n, bool keys) {
    using impl::cuda_check;
    cuda_check(cudaMemcpyAsync(host_positions_.get(), positions_.get(), n * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost, stream_.get()),
               "a copy from the device failed");
    if (keys)
      cuda_check(cudaMemcpyAsync(host_keys_.get(), keys_.get(), n * sizeof(K),
                                 cudaMemcpyDeviceToHost, stream_.get()),
                 "a copy from the device failed");
    cuda_check(cudaStreamSynchronize(stream_.get()), "a copy from the device failed");
  }
  std::uint32_t* positions() const { return host_positions_.get(); }
  const K* keys() const { return host_keys_.get(); }

 private:
  gpusort::options opt_;
  bool stable_ = false;
  owned_stream stream_;
  device_array<K> keys_;
  device_array<std::uint32_t> positions_;
  std::size_t temp_bytes_ = 0;
  device_array<char> temp_;
  pinned_array<K> host_keys_;
  pinned_array<std::uint32_t> host_positions_;
  stream_timer timer_;
};

// Runs beyond this many go through the run path instead: the window cuts cost a binary
// search per run and key bit, and the host merge's passes handle many runs better.
inline constexpr std::uint64_t max_pipeline_runs = 64;

// Records a run of the record pipeline holds: what fits the device budget (by default 90% of
// the free device memory) as keys, positions and workspace, and at most 2^32 - 1 (u32
// positions). At least one record; invalid_request when the budget holds none.
template <class K>
std::uint64_t pipeline_run_records(const sort_request& request, std::uint64_t count) {
  if (count <= 1) return 1;
  plan_request plan{.records = count,
                    .record_bytes = sizeof(K) + sizeof(std::uint32_t),
                    .host_run_buffers = 0};
  impl::fit_device_budget<K>(plan, impl::device_budget(request), true, request.opt);
  return std::min<std::uint64_t>(plan_runs_or_throw(plan).run_records,
                                 std::numeric_limits<std::uint32_t>::max());
}

// Sorts the records of `layout` in request.input (count records) into `out` on the GPU, runs
// of at most run_records, with the device key K: the layout's typed key, or u64 prefixes of a
// byte key. 0, or 3 when the output failed its checks (nothing written).
template <class K>
int sort_records_on_gpu(const sort_request& request, const record_layout& layout,
                        std::uint64_t count, std::uint64_t run_records, pending_file& out) {
  progress_sink& meter = request.meter ? *request.meter : silent_progress();
  const std::size_t bytes = layout.record_bytes;
  const bool prefixes = layout.kind == key_kind::bytes;
  const std::uint64_t runs = count == 0 ? 0 : (count + run_records - 1) / run_records;
  const std::uint64_t batch_records = std::min(count, run_records);
  stage_clock wall;
  pipeline_times busy;
  double ties_s = 0;
  const auto timed = [](double& seconds, auto&& work) {
    stage_clock clock;
    work();
    seconds += clock.lap();
  };

  const file_handle in = open_input(request.input);
  const int in_fd = ::fileno(in.get());
  const output_file output(::fileno(out.get()), count * bytes, out.path(), out.replaces_a_file());
  std::unique_ptr<device_records<K>> device;
  if (count > 0) device = std::make_unique<device_records<K>>(batch_records, request.opt);
  const auto batch = uninitialized_bytes(batch_records * bytes);
  record_tally input_tally, output_tally;

  // Equal device keys that may need putting in order on the host, and that order.
  const bool whole_key = !prefixes || layout.key_bytes <= 8;
  const bool order_ties =
      count > 0 && (!device->stable() || !whole_key || std::is_floating_point_v<K>);
  const unsigned char* const rest = batch.get() + layout.key_offset + 8;
  const std::size_t rest_bytes = whole_key ? 0 : layout.key_bytes - 8;
  const auto tie_less = [&](std::uint32_t a, std::uint32_t b) {
    if (rest_bytes > 0) {
      const int sign = std::memcmp(rest + std::size_t{a} * bytes, rest + std::size_t{b} * bytes, rest_bytes);
      if (sign != 0) return layout.descending ? sign > 0 : sign < 0;
    }
    return a < b;
  };
  const auto extract_keys = [&](K* keys, std::uint64_t first, std::uint64_t n) {
    const unsigned char* records = batch.get() + first * bytes + layout.key_offset;
#pragma omp parallel for schedule(static, 4096)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
      const unsigned char* key = records + static_cast<std::size_t>(i) * bytes;
      if constexpr (std::is_same_v<K, std::uint64_t>) {
        if (prefixes) {
          keys[i] = key_prefix(key, layout.key_bytes);
          continue;
        }
      }
      std::memcpy(&keys[i], key, sizeof(K));
    }
  };
  // Sorts the n records of the batch buffer (fill(first, count) puts records [first, first +
  // count) there) and gathers them in order into put(first, piece, count).
  const auto sort_batch = [&](std::uint64_t n, auto&& fill, record_tally* tally, auto&& put,
                              std::uint64_t done_before) {
    timed(busy.upload, [&] {
      device->upload(n, [&](K* keys, std::uint64_t first, std::uint64_t count_now) {
        fill(first, count_now);
        extract_keys(keys, first, count_now);
      });
    });
    busy.sort += device->sort(n);
    timed(busy.download, [&] { device->download(n, order_ties); });
    std::uint32_t* positions = device->positions();
    if (order_ties)
      timed(ties_s, [&] {
        const K* keys = device->keys();
        order_tie_groups(n, positions, [&](std::size_t a, std::size_t b) {
          return key_code(keys[a], false) == key_code(keys[b], false);
        }, tie_less);
      });
    timed(busy.write, [&] {
      gather_in_pieces(batch.get(), positions, n, layout, tally, put, [&](std::uint64_t done) {
        meter.advance(done_before + done, count);
      });
    });
  };
  const auto read_input = [&](std::uint64_t first_record) {
    return [&, first_record](std::uint64_t first, std::uint64_t n) {
      timed(busy.read, [&] {
        unsigned char* to = batch.get() + first * bytes;
        read_at(in_fd, (first_record + first) * bytes, to, n * bytes, request.input);
        input_tally.add(std::span<const unsigned char>(to, n * bytes), bytes);
      });
    };
  };
  const auto write_output = [&](std::uint64_t first_record) {
    return [&, first_record](std::uint64_t first, const unsigned char* piece, std::uint64_t n) {
      output.write((first_record + first) * bytes, piece, n * bytes);
    };
  };

  std::unique_ptr<run_store> store;
  if (runs == 1) {
    meter.phase("sorting", true);
    sort_batch(count, read_input(0), &output_tally, write_output(0), 0);
  } else if (runs > 1) {
    const scratch_directory scratch(out.scratch_anchor());
    store = std::make_unique<run_store>(
        count * bytes,
        runs_fit_in_memory(count * bytes, request.host_budget_bytes, batch_records * bytes), scratch);
    std::vector<std::uint64_t> lengths(runs);
    meter.phase("runs", true);
    for (std::uint64_t r = 0; r < runs; ++r) {
      const std::uint64_t first_record = r * run_records;
      lengths[r] = std::min(run_records, count - first_record);
      sort_batch(lengths[r], read_input(first_record), nullptr,
                 [&](std::uint64_t first, const unsigned char* piece, std::uint64_t n) {
                   store->put((first_record + first) * bytes, piece, n * bytes);
                 },
                 first_record);
      meter.run_written(r + 1);
    }
    meter.phase("merge", true);
    // Keys as rank bytes (merge_windows.hpp): the typed key's rank key, or the byte key.
    std::string record(bytes, '\0');
    const auto key_at = [&](std::uint64_t run, std::uint64_t index) {
      store->get((run * run_records + index) * bytes, record.data(), bytes);
      const unsigned char* key = reinterpret_cast<const unsigned char*>(record.data()) + layout.key_offset;
      if (!prefixes) {
        K typed;
        std::memcpy(&typed, key, sizeof(K));
        return rank_bytes(rank_key(typed, layout.descending));
      }
      std::string text(reinterpret_cast<const char*>(key), layout.key_bytes);
      if (layout.descending)
        for (char& c : text) c = static_cast<char>(~static_cast<unsigned char>(c));
      return text;
    };
    std::vector<std::uint64_t> cuts(runs, 0);
    for (std::uint64_t w = 0; w * run_records < count; ++w) {
      std::vector<run_slice> slices;
      timed(busy.gather, [&] { slices = window_slices(lengths, count, run_records, w, cuts, key_at); });
      std::uint64_t window = 0;
      for (const run_slice& s : slices) window += s.end - s.begin;
      sort_batch(window,
                 [&](std::uint64_t first, std::uint64_t n) {
                   // The slices that cover window positions [first, first + n).
                   timed(busy.gather, [&] {
                     std::uint64_t at = 0;
                     for (const run_slice& s : slices) {
                       const std::uint64_t length = s.end - s.begin;
                       const std::uint64_t from = std::max(first, at), to = std::min(first + n, at + length);
                       if (from < to)
                         store->get((s.run * run_records + s.begin + (from - at)) * bytes,
                                    batch.get() + from * bytes, (to - from) * bytes);
                       at += length;
                     }
                   });
                 },
                 &output_tally, write_output(w * run_records), w * run_records);
    }
  }

  meter.finish();
  if (output_tally.out_of_order > 0 || !(output_tally.sum == input_tally.sum))
    throw_wrong_result(gpusort::method_name(request.opt), "", output_tally.out_of_order, "records",
                       output_tally.sum == input_tally.sum, out.path());
  const double sorted_s = wall.lap();
  out.commit();
  const double commit_s = wall.lap();
  if (request.stats) {
    file_sort_stats& stats = *request.stats;
    if (device)
      stats.add("algorithm", std::string(gpusort::method_name(device->sort_options())) +
                                 " of (key, position) pairs" +
                                 (order_ties ? ", ties put in order on the host" : ""));
    const std::string what = (prefixes ? "8-byte key prefixes" : "keys") +
                             std::string(" and positions on the GPU");
    if (runs <= 1)
      stats.add("plan", "on the GPU at once (" + std::to_string(count) + " records; " + what + ")");
    else
      stats.add("plan", std::to_string(runs) + " runs of " + std::to_string(run_records) +
                            " records (the last " +
                            std::to_string(count - (runs - 1) * run_records) +
                            "), sorted and merged on the GPU in windows of " +
                            std::to_string(run_records) + " records (" + what + "); runs kept " +
                            (store->in_memory() ? "in host memory" : "in a scratch file"));
    stats.add_seconds("read", busy.read);
    if (runs > 1) stats.add_seconds("gather windows", busy.gather);
    stats.add_seconds("upload phases", busy.upload);
    stats.add_seconds("sort", busy.sort);
    stats.add_seconds("download", busy.download);
    if (order_ties) stats.add_seconds("order ties", ties_s);
    stats.add_seconds("gather and write", busy.write);
    stats.add_seconds("commit", commit_s);
    stats.add_seconds("total", sorted_s + commit_s);
  }
  return 0;
}

// Sorts the records of `layout` in request.input (a whole number of them) into `out` with
// sort_records_on_gpu, in runs that fit the device budget and, as a batch with its keys and
// positions, the host budget (by default half the machine's memory); nullopt, with nothing
// done, when that makes more than max_pipeline_runs runs (the run path takes them).
template <class K>
std::optional<int> sort_records_file_on_gpu(const sort_request& request,
                                            const record_layout& layout, pending_file& out) {
  const std::uint64_t count = input_file_size(request.input) / layout.record_bytes;
  const std::uint64_t host = request.host_budget_bytes > 0 ? request.host_budget_bytes
                                                           : default_host_budget();
  const std::uint64_t run = std::min(
      pipeline_run_records<K>(request, count),
      std::max<std::uint64_t>(1, host / (layout.record_bytes + sizeof(K) + sizeof(std::uint32_t))));
  if (count > run * max_pipeline_runs) return std::nullopt;
  return sort_records_on_gpu<K>(request, layout, count, run, out);
}

}  // namespace gpusort::detail::external
