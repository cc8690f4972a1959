// How bench times a run, and what it keeps of the times. On a GPU, every run sorts the work
// buffer on one stream, timed with CUDA events alone, after the input is restored and (by
// default) the L2 cache flushed, so that each run starts from the same cold state; warm-up
// runs come first. The host sorts and the CPU backend are timed with std::chrono, with fewer
// runs for large n, where a run takes long.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_input.hpp"  // cuda_check, device_memory

namespace gpusort::tools {

// Untimed device runs before the timed ones.
inline constexpr int device_warmups = 2;
// Above this n, host runs are fewer and have no warm-up.
inline constexpr std::uint64_t large_host_n = std::uint64_t{1} << 22;

// What one algorithm did on one point (on one input array, or on all of them): the run
// times, or why it was not timed.
struct measurement {
  explicit measurement(std::string name, std::string why_skipped = "")
      : algorithm(std::move(name)), skipped(std::move(why_skipped)) {}
  std::string algorithm;
  std::string skipped;     // non-empty: not timed, for this reason
  std::vector<double> ms;  // ascending
  std::int64_t extra_bytes = 0;
  bool dropped = false;  // skipped, wrong or failed on some array: not reported for the point
  double median() const;
  // The sample standard deviation (0 for a single run).
  double std_dev() const;
};

// The stream the device runs go on, the events that time them and the L2 flush between them.
class device_timer {
 public:
  // l2_bytes: the device's L2 cache; with flush_l2, a buffer of twice its size is written
  // before every run (NVBench's default). Throws usage_error if that buffer does not fit.
  device_timer(std::size_t l2_bytes, bool flush_l2);
  ~device_timer();
  device_timer(const device_timer&) = delete;
  device_timer& operator=(const device_timer&) = delete;

  cudaStream_t stream() const { return stream_; }

  // Writes over the L2 cache (if flushing), a different byte each run.
  void flush_l2(int run);

  // The times of `reps` runs of `sort` (which returns its cudaError_t), ascending, after
  // device_warmups untimed ones. Each run first queues `restore` (the input) on the stream.
  template <class Restore, class Sort>
  std::vector<double> time(int reps, Restore&& restore, Sort&& sort) {
    std::vector<double> ms;
    for (int run = 0; run < device_warmups + reps; ++run) {
      restore();
      flush_l2(run);
      cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      cuda_check(sort(), "sort");
      cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop_), "sort");
      float elapsed = 0;
      cuda_check(cudaEventElapsedTime(&elapsed, start_, stop_), "cudaEventElapsedTime");
      if (run >= device_warmups) ms.push_back(elapsed);
    }
    std::ranges::sort(ms);
    return ms;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::unique_ptr<device_memory> flush_buffer_;  // null: runs start with a warm L2
  std::size_t flush_bytes_ = 0;
};

// The times of host runs of `sort`, ascending: `reps` of them, but for n above large_host_n
// fewer (at least 3), and no warm-up. `reset` (not timed) restores the input before each.
template <class Reset, class Sort>
std::vector<double> time_host(int reps, std::uint64_t n, Reset&& reset, Sort&& sort) {
  const std::uint64_t runs_asked = static_cast<std::uint64_t>(reps);
  const std::uint64_t runs =
      std::clamp(runs_asked * large_host_n / n, std::min<std::uint64_t>(runs_asked, 3), runs_asked);
  const int warmups = n <= large_host_n ? 1 : 0;
  std::vector<double> ms;
  for (std::uint64_t run = 0; run < warmups + runs; ++run) {
    reset();
    const auto start = std::chrono::steady_clock::now();
    sort();
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    if (run >= static_cast<std::uint64_t>(warmups)) ms.push_back(elapsed.count());
  }
  std::ranges::sort(ms);
  return ms;
}

}  // namespace gpusort::tools
