// The benchmark's timing (bench_timing.hpp).
#include "bench_timing.hpp"

#include <cmath>
#include <numeric>

#include "cli.hpp"  // usage_error

namespace gpusort::tools {

double measurement::median() const {
  const std::size_t m = ms.size() / 2;
  return ms.size() % 2 ? ms[m] : (ms[m - 1] + ms[m]) / 2;
}

double measurement::std_dev() const {
  if (ms.size() < 2) return 0;
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  double squares = 0;
  for (double t : ms) squares += (t - mean) * (t - mean);
  return std::sqrt(squares / static_cast<double>(ms.size() - 1));
}

device_timer::device_timer(std::size_t l2_bytes, bool flush_l2) {
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  if (flush_l2) {
    flush_bytes_ = 2 * l2_bytes;
    flush_buffer_ = std::make_unique<device_memory>(flush_bytes_);
    if (flush_buffer_->failed()) throw usage_error("--flush-l2: no device memory for it");
  }
  cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
}

device_timer::~device_timer() {
  if (stop_) cudaEventDestroy(stop_);
  if (start_) cudaEventDestroy(start_);
  if (stream_) cudaStreamDestroy(stream_);
}

void device_timer::flush_l2(int run) {
  if (flush_buffer_)
    cuda_check(cudaMemsetAsync(flush_buffer_->as<unsigned char>(), run & 0xff,
                               flush_bytes_, stream_),
               "flushing the L2 cache");
}

}  // namespace gpusort::tools
