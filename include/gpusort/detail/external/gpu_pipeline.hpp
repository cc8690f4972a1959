// `gpusort sort` of a keys file on the GPU, file to file, in a pipeline: keys move between the
// files and the device through pinned staging slots, so that the CPU threads filling slot i+1
// (pread from the input on all cores) work while the copy engine moves slot i, and the output
// is written from slot i (pwrite) while slot i+1 comes back.
//
// When the keys and the sort's workspace fit the device budget, that is the whole sort: read and
// upload, sort, download and write. Otherwise the input is cut into runs that fit; each is
// uploaded, sorted and stored (in host memory when it fits there, else in a scratch file), and the
// runs are merged in windows (gpusort/detail/external/merge_windows.hpp): each window's slices are
// gathered from the stored runs into the device buffer, sorted there, and written to their place in
// the output. Every key thus crosses the bus four times, but the merge costs one GPU sort per
// window instead of a CPU heap merge.
//
// The output is checked before it replaces OUT: in order, and the same keys as the input
// (order-independent checksums taken while the slots are filled and drained).
#pragma once

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpusort/detail/external/run_merge.hpp"
#include "gpusort/detail/external/run_plan.hpp"
#include "gpusort/detail/external/file_io.hpp"
#include "gpusort/detail/external/merge_windows.hpp"
#include "gpusort/detail/external/stats.hpp"
#include "gpusort/sort.hpp"
#include "gpusort/detail/external/progress.hpp"
#include "gpusort/detail/external/records.hpp"

namespace gpusort::detail::external {

namespace impl {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw io_failure(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace impl

// Busy seconds of each stage (they overlap, so they add up to more than the wall time).
struct pipeline_times {
  double read = 0, upload = 0, sort = 0, download = 0, store = 0, gather = 0, write = 0;
};

// The device side: one buffer of `capacity` keys, the sort's workspace for it, a stream, and
// the pinned staging slots with an event each.
template <class K>
class device_keys {
 public:
  device_keys(std::uint64_t capacity, const gpusort::options& opt, std::uint64_t slot_bytes)
      : opt_(opt), slot_keys_(std::max<std::uint64_t>(1, slot_bytes / sizeof(K))) {
    using impl::cuda_check;
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cannot create a stream");
    opt_.stream = stream_;
    cuda_check(cudaMalloc(&keys_, std::max<std::uint64_t>(1, capacity) * sizeof(K)),
               "cannot allocate the device run buffer");
    cuda_check(gpusort::sort_keys(nullptr, temp_bytes_, keys_, capacity, opt_),
               "the sort's workspace query failed");
    if (temp_bytes_ > 0)
      cuda_check(cudaMalloc(&temp_, temp_bytes_), "cannot allocate the sort's workspace");
    for (slot& s : slots_) {
      cuda_check(cudaMallocHost(&s.keys, slot_keys_ * sizeof(K)), "cannot allocate pinned memory");
      cuda_check(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), "cannot create an event");
    }
    cuda_check(cudaEventCreate(&sort_start_), "cannot create an event");
    cuda_check(cudaEventCreate(&sort_end_), "cannot create an event");
  }
  ~device_keys() {
    if (stream_) cudaStreamSynchronize(stream_);
    for (slot& s : slots_) {
      if (s.keys) cudaFreeHost(s.keys);
      if (s.copied) cudaEventDestroy(s.copied);
    }
    if (sort_start_) cudaEventDestroy(sort_start_);
    if (sort_end_) cudaEventDestroy(sort_end_);
    if (temp_) cudaFree(temp_);
    if (keys_) cudaFree(keys_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  device_keys(const device_keys&) = delete;
  device_keys& operator=(const device_keys&) = delete;

  // Copies n keys into the device buffer: fill(slot, first, count) puts keys [first, first +
  // count) of them into the pinned slot, while earlier slots are on their way.
  template <class Fill>
  void upload(std::uint64_t n, Fill&& fill) {
    for (std::uint64_t first = 0, chunk = 0; first < n; first += slot_keys_, ++chunk) {
      slot& s = slots_[chunk % slots_.size()];
      impl::cuda_check(cudaEventSynchronize(s.copied), "a copy to the device failed");
      const std::uint64_t count = std::min(slot_keys_, n - first);
      fill(s.keys, first, count);
      impl::cuda_check(cudaMemcpyAsync(keys_ + first, s.keys, count * sizeof(K),
                                         cudaMemcpyHostToDevice, stream_),
                         "a copy to the device failed");
      impl::cuda_check(cudaEventRecord(s.copied, stream_), "cannot record an event");
    }
  }

  // Sorts the first n keys of the device buffer; the seconds it took on the device.
  double sort(std::uint64_t n) {
    using impl::cuda_check;
    cuda_check(cudaEventRecord(sort_start_, stream_), "cannot record an event");
    std::size_t bytes = temp_bytes_;
    cuda_check(gpusort::sort_keys(temp_ ? temp_ : static_cast<void*>(keys_), bytes, keys_, n, opt_),
               "the sort failed");
    cuda_check(cudaEventRecord(sort_end_, stream_), "cannot record an event");
    cuda_check(cudaEventSynchronize(sort_end_), "the sort failed");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, sort_start_, sort_end_), "cannot time the sort");
    return ms / 1e3;
  }

  // Copies the first n keys back: drain(slot, first, count) takes keys [first, first + count)
  // from a slot while the next slots are being filled by the copy engine.
  template <class Drain>
  void download(std::uint64_t n, Drain&& drain) {
    const std::uint64_t chunks = (n + slot_keys_ - 1) / slot_keys_;
    const auto issue = [&](std::uint64_t chunk) {
      const slot& s = slots_[chunk % slots_.size()];
      const std::uint64_t first = chunk * slot_keys_;
      impl::cuda_check(cudaMemcpyAsync(s.keys, keys_ + first,
                                         std::min(slot_keys_, n - first) * sizeof(K),
                                         cudaMemcpyDeviceToHost, stream_),
                         "a copy from the device failed");
      impl::cuda_check(cudaEventRecord(s.copied, stream_), "cannot record an event");
    };
    for (std::uint64_t chunk = 0; chunk < std::min<std::uint64_t>(chunks, slots_.size()); ++chunk)
      issue(chunk);
    for (std::uint64_t chunk = 0; chunk < chunks; ++chunk) {
      const slot& s = slots_[chunk % slots_.size()];
      impl::cuda_check(cudaEventSynchronize(s.copied), "a copy from the device failed");
      const std::uint64_t first = chunk * slot_keys_;
      drain(static_cast<const K*>(s.keys), first, std::min(slot_keys_, n - first));
      if (chunk + slots_.size() < chunks) issue(chunk + slots_.size());
    }
  }

 private:
  struct slot {
    K* keys = nullptr;
    cudaEvent_t copied = nullptr;
  };
  gpusort::options opt_;
  std::uint64_t slot_keys_;
  cudaStream_t stream_ = nullptr;
  K* keys_ = nullptr;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
  std::array<slot, 4> slots_{};
  cudaEvent_t sort_start_ = nullptr, sort_end_ = nullptr;
};

// The sorted runs, one after another: in host memory, or in a scratch file when the host
// budget (or half the machine's memory, without one) cannot hold them.
class run_store {
 public:
  run_store(std::uint64_t bytes, bool in_memory, const scratch_directory& scratch) {
    if (in_memory) {
      memory_.reset(new unsigned char[bytes]);  // uninitialized: the runs overwrite it
      return;
    }
    path_ = (scratch.path() / "runs").string();
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd_ < 0) throw io_failure(path_ + ": cannot create: " + system_error_text());
    reserve_file(fd_, bytes, path_);
  }
  ~run_store() {
    if (fd_ >= 0) ::close(fd_);
  }
  run_store(const run_store&) = delete;
  run_store& operator=(const run_store&) = delete;

  bool in_memory() const { return memory_ != nullptr; }
  void put(std::uint64_t offset, const void* data, std::uint64_t size) {
    if (memory_)
      copy_in_parallel(memory_.get() + offset, data, size);
    else
      write_at(fd_, offset, data, size, path_);
  }
  void get(std::uint64_t offset, void* data, std::uint64_t size) const {
    if (memory_)
      copy_in_parallel(data, memory_.get() + offset, size);
    else
      read_at(fd_, offset, data, size, path_);
  }
  template <class K>
  K key_at(std::uint64_t index) const {
    K key;
    if (memory_) {
      std::memcpy(&key, memory_.get() + index * sizeof(K), sizeof(K));
    } else if (::pread(fd_, &key, sizeof(K), static_cast<off_t>(index * sizeof(K))) !=
               static_cast<ssize_t>(sizeof(K))) {
      throw io_failure(path_ + ": read failed: " + system_error_text());
    }
    return key;
  }

 private:
  std::unique_ptr<unsigned char[]> memory_;
  std::string path_;
  int fd_ = -1;
};

namespace impl {

// The checks of keys that pass through the slots: an order-independent checksum, and (for
// the output) how many keys are out of order, across slot boundaries too.
template <class K>
struct key_tally {
  checksum sum;
  std::uint64_t out_of_order = 0;
  bool has_last = false;
  K last{};

  void add(const K* keys, std::uint64_t count) {
    std::uint64_t total = 0, x = 0;
    const std::int64_t n = static_cast<std::int64_t>(count);
#pragma omp parallel for reduction(+ : total) reduction(^ : x)
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &keys[i], sizeof(K));
      const std::uint64_t h = record_hash_of(bits, false, 0);
      total += h;
      x ^= h;
    }
    sum.sum += total;
    sum.xor_all ^= x;
  }
  void add_in_order(const K* keys, std::uint64_t count, bool descending) {
    add(keys, count);
    if (count == 0) return;
    const less<K> before;
    const auto wrong = [&](const K& previous, const K& next) {
      return descending ? before(previous, next) : before(next, previous);
    };
    std::uint64_t bad = has_last && wrong(last, keys[0]) ? 1 : 0;
    const std::int64_t n = static_cast<std::int64_t>(count);
#pragma omp parallel for reduction(+ : bad)
    for (std::int64_t i = 1; i < n; ++i) bad += wrong(keys[i - 1], keys[i]) ? 1 : 0;
    out_of_order += bad;
    last = keys[count - 1];
    has_last = true;
  }
};

}  // namespace impl

inline std::uint64_t half_the_physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

// Whether the runs of `bytes` stay in host memory: within the host budget beside the slots, or
// without a budget within half of the machine's memory.
inline bool runs_fit_in_memory(std::uint64_t bytes, std::uint64_t host_budget_bytes,
                               std::uint64_t slot_bytes) {
  if (host_budget_bytes > 0) return bytes + 4 * slot_bytes <= host_budget_bytes;
  return bytes <= half_the_physical_memory();
}

// Pinned slot size: large enough for the copy engine's full speed, small next to a run.
inline std::uint64_t pinned_slot_bytes(std::uint64_t run_bytes, std::uint64_t host_budget_bytes) {
  std::uint64_t bytes = std::min<std::uint64_t>(std::uint64_t{64} << 20, std::max<std::uint64_t>(run_bytes, 4096));
  if (host_budget_bytes > 0) bytes = std::max<std::uint64_t>(4096, std::min(bytes, host_budget_bytes / 16));
  return bytes;
}

// What the keys pipeline did, for the statistics.
struct keys_pipeline_report {
  pipeline_times busy;
  std::uint64_t runs = 0;
  bool runs_in_memory = true;
};

// Sorts count keys on the GPU, runs of at most run_keys keys (the device budget's):
// read(slot, first, n) puts keys [first, first + n) of the input into a pinned slot, and
// write(first, slot, n) takes keys [first, first + n) of the output from one. The runs of a
// multi-run sort are kept in host memory within the host budget (else in a scratch directory
// beside scratch_anchor). Every input key is read before the first output key is written, so
// the input and output may be the same memory.
template <class K, class Read, class Write>
keys_pipeline_report sort_keys_through_gpu(std::uint64_t count, std::uint64_t run_keys,
                                           const gpusort::options& opt,
                                           std::uint64_t host_budget_bytes,
                                           const std::filesystem::path& scratch_anchor,
                                           Read&& read, Write&& write, progress_sink& meter) {
  const bool descending = opt.direction == gpusort::order::descending;
  keys_pipeline_report report;
  report.runs = count == 0 ? 0 : (count + run_keys - 1) / run_keys;
  const std::uint64_t runs = report.runs;
  const std::uint64_t slot_bytes = pinned_slot_bytes(std::min(count, run_keys) * sizeof(K), host_budget_bytes);
  pipeline_times& busy = report.busy;
  const auto timed = [](double& seconds, auto&& work) {
    stage_clock clock;
    work();
    seconds += clock.lap();
  };

  std::unique_ptr<device_keys<K>> device;
  if (count > 0) device = std::make_unique<device_keys<K>>(std::min(count, run_keys), opt, slot_bytes);
  const auto read_input = [&](std::uint64_t first_key) {
    return [&, first_key](K* slot, std::uint64_t first, std::uint64_t n) {
      timed(busy.read, [&] { read(slot, first_key + first, n); });
    };
  };
  const auto write_output = [&](std::uint64_t first_key) {
    return [&, first_key](const K* slot, std::uint64_t first, std::uint64_t n) {
      timed(busy.write, [&] { write(first_key + first, slot, n); });
      meter.advance(first_key + first + n, count);
    };
  };
  const auto on_device = [&](std::uint64_t n, auto&& fill, auto&& drain) {
    timed(busy.upload, [&] { device->upload(n, fill); });
    busy.sort += device->sort(n);
    timed(busy.download, [&] { device->download(n, drain); });
  };

  if (runs == 1) {
    meter.phase("sorting", true);
    on_device(count, read_input(0), write_output(0));
  } else if (runs > 1) {
    const scratch_directory scratch(scratch_anchor);
    report.runs_in_memory = runs_fit_in_memory(count * sizeof(K), host_budget_bytes, slot_bytes);
    run_store store(count * sizeof(K), report.runs_in_memory, scratch);
    std::vector<std::uint64_t> lengths(runs);
    meter.phase("runs", true);
    for (std::uint64_t r = 0; r < runs; ++r) {
      const std::uint64_t first_key = r * run_keys;
      lengths[r] = std::min(run_keys, count - first_key);
      on_device(lengths[r], read_input(first_key),
                [&](const K* slot, std::uint64_t first, std::uint64_t n) {
                  timed(busy.store, [&] { store.put((first_key + first) * sizeof(K), slot, n * sizeof(K)); });
                  meter.advance(first_key + first + n, count);
                });
      if (interrupt_after_runs() == r + 1) std::raise(SIGINT);  // test hook
    }
    meter.phase("merge", true);
    const auto key_at = [&](std::uint64_t run, std::uint64_t index) {
      return rank_key(store.key_at<K>(run * run_keys + index), descending);
    };
    std::vector<std::uint64_t> cuts(runs, 0);
    for (std::uint64_t w = 0; w * run_keys < count; ++w) {
      std::vector<run_slice> slices;
      timed(busy.gather, [&] { slices = window_slices(lengths, count, run_keys, w, cuts, key_at); });
      std::uint64_t window = 0;
      for (const run_slice& s : slices) window += s.end - s.begin;
      on_device(window,
                [&](K* slot, std::uint64_t first, std::uint64_t n) {
                  // The slices that cover window positions [first, first + n).
                  timed(busy.gather, [&] {
                    std::uint64_t at = 0;
                    for (const run_slice& s : slices) {
                      const std::uint64_t length = s.end - s.begin;
                      const std::uint64_t from = std::max(first, at), to = std::min(first + n, at + length);
                      if (from < to)
                        store.get((s.run * run_keys + s.begin + (from - at)) * sizeof(K),
                                  slot + (from - first), (to - from) * sizeof(K));
                      at += length;
                    }
                  });
                },
                write_output(w * run_keys));
    }
  }
  meter.finish();
  return report;
}

// Adds the keys pipeline's plan and stage times to `stats`.
inline void add_pipeline_stats(file_sort_stats& stats, const keys_pipeline_report& report,
                               std::uint64_t count, std::uint64_t run_keys) {
  const pipeline_times& busy = report.busy;
  if (report.runs <= 1)
    stats.add("plan", "on the GPU at once (" + std::to_string(count) + " records)");
  else
    stats.add("plan", std::to_string(report.runs) + " runs of " + std::to_string(run_keys) +
                          " records (the last " +
                          std::to_string(count - (report.runs - 1) * run_keys) +
                          "), sorted and merged on the GPU in windows of " +
                          std::to_string(run_keys) + " records; runs kept " +
                          (report.runs_in_memory ? "in host memory" : "in a scratch file"));
  // Stages overlap: read and gather run while copies go to the device (the upload phases'
  // wall time), store and write while copies come back (the download phases').
  stats.add_seconds("read", busy.read);
  if (report.runs > 1) stats.add_seconds("gather windows", busy.gather);
  stats.add_seconds("upload phases", busy.upload);
  stats.add_seconds("sort", busy.sort);
  stats.add_seconds("download phases", busy.download);
  if (report.runs > 1) stats.add_seconds("store runs", busy.store);
  stats.add_seconds("write", busy.write);
}

// Sorts the keys of `input` (count keys) into `out` on the GPU, runs of at most run_keys keys
// (the device budget's), checking the output on its way (in order, and the same keys as the
// input by order-independent checksums). 0, or 3 when the output failed its checks (nothing
// written).
template <class K>
int sort_keys_on_gpu(const std::string& input, std::uint64_t count, std::uint64_t run_keys,
                     const gpusort::options& opt, std::uint64_t host_budget_bytes,
                     file_sort_stats* stats, pending_file& out, progress_sink& meter) {
  const bool descending = opt.direction == gpusort::order::descending;
  stage_clock wall;
  const std::string algorithm_used = describe_algorithm<K>(opt, std::min(count, run_keys), false);
  const file_handle in = open_input(input);
  const int in_fd = ::fileno(in.get());
  const output_file output(::fileno(out.get()), count * sizeof(K), out.path());
  impl::key_tally<K> input_tally, output_tally;
  const keys_pipeline_report report = sort_keys_through_gpu<K>(
      count, run_keys, opt, host_budget_bytes, out.scratch_anchor(),
      [&](K* slot, std::uint64_t first, std::uint64_t n) {
        read_at(in_fd, first * sizeof(K), slot, n * sizeof(K), input);
        input_tally.add(slot, n);
      },
      [&](std::uint64_t first, const K* slot, std::uint64_t n) {
        output_tally.add_in_order(slot, n, descending);
        output.write(first * sizeof(K), slot, n * sizeof(K));
      },
      meter);
  if (output_tally.out_of_order > 0 || !(output_tally.sum == input_tally.sum)) {
    std::fprintf(stderr,
                 "gpusort sort: the %s sort returned a wrong result (%llu keys out of order, keys "
                 "%s); %s not written\n",
                 std::string(gpusort::method_name(opt)).c_str(),
                 static_cast<unsigned long long>(output_tally.out_of_order),
                 output_tally.sum == input_tally.sum ? "kept" : "changed", out.path().c_str());
    return 3;
  }
  const double sorted_s = wall.lap();
  out.commit();
  const double commit_s = wall.lap();
  if (stats) {
    stats->add("algorithm", algorithm_used);
    add_pipeline_stats(*stats, report, count, run_keys);
    stats->add_seconds("commit", commit_s);
    stats->add_seconds("total", sorted_s + commit_s);
  }
  return 0;
}

}  // namespace gpusort::detail::external
