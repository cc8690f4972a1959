// What the small benchmarks of tools/bench share (gpusort-narrow-bench, gpusort-radix-hybrid):
// a CUDA failure, the events that time one operation on the default stream, and main's exit
// codes: 0 every result verified, 1 a wrong result (std::logic_error), 2 bad usage, 3 a CUDA
// failure (or no memory).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"  // usage_error

namespace gpusort::tools {

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw cuda_failure(std::string(what) + ": " + cudaGetErrorString(e));
}

class event_timer {
 public:
  event_timer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~event_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  event_timer(const event_timer&) = delete;
  event_timer& operator=(const event_timer&) = delete;

  // reset() (untimed), then run() between the events; one warm-up, the median of reps.
  template <class Reset, class Run>
  double median_ms(int reps, Reset reset, Run run) {
    std::vector<float> t;
    for (int r = 0; r <= reps; ++r) {
      reset();
      check(cudaEventRecord(start_), "cudaEventRecord");
      run();
      check(cudaEventRecord(stop_), "cudaEventRecord");
      check(cudaEventSynchronize(stop_), "timed run");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      if (r > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

// main's body: body() (which may throw), its failures printed as `name: what` and mapped to
// the exit codes above; bad usage also prints `usage`.
template <class Body>
int bench_main(const char* name, const char* usage, Body&& body) {
  try {
    body();
    return 0;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n%s", name, e.what(), usage);
    return 2;
  } catch (const std::logic_error& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  } catch (const std::exception& e) {  // cuda_failure, std::bad_alloc
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 3;
  }
}

}  // namespace gpusort::tools
