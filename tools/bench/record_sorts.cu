// The record benchmarks of bench/record_sorts.hpp.
#include "record_sorts.hpp"

#include <algorithm>
#include <new>

#include <cub/device/device_merge_sort.cuh>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include "common/distributions.hpp"
#include "gpusort/sort.cuh"

namespace gpusort::bench {
namespace {

struct rec16 {
  std::uint32_t major, minor;
  std::uint64_t payload;
};
struct rec32 {
  std::uint64_t major, minor, payload, spare;
};
struct u64pair {
  std::uint64_t key, tie_break;  // tie_break doubles as the payload: distinct per record
};

struct by_fields {
  template <class R>
  __host__ __device__ bool operator()(const R& a, const R& b) const {
    if constexpr (requires { a.tie_break; })
      return a.key != b.key ? a.key < b.key : a.tie_break < b.tie_break;
    else
      return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
};

template <class R>
std::uint64_t payload_of(const R& r) {
  if constexpr (requires { r.tie_break; })
    return r.tie_break;
  else
    return r.payload;
}

// Record i of the input; its payload is i, so that the check can see every record once.
template <class R>
R make_record(std::uint64_t i, std::uint64_t seed) {
  const std::uint64_t a = tools::random_bits(seed, 2 * i), b = tools::random_bits(seed, 2 * i + 1);
  if constexpr (std::is_same_v<R, u64pair>)
    return {a % (std::uint64_t{1} << 20), i};
  else if constexpr (std::is_same_v<R, rec16>)
    return {static_cast<std::uint32_t>(a % 1000), static_cast<std::uint32_t>(b), i};
  else
    return {a % 1000, b, i, 0};
}

template <class R>
std::string check_result(const R* d, std::uint64_t n) {
  std::vector<R> out(n);
  if (cudaMemcpy(out.data(), d, n * sizeof(R), cudaMemcpyDeviceToHost) != cudaSuccess)
    return "copy back failed";
  std::vector<bool> seen(n, false);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (i > 0 && by_fields{}(out[i], out[i - 1])) return "out of order at " + std::to_string(i);
    const std::uint64_t p = payload_of(out[i]);
    if (p >= n || seen[p]) return "records lost or duplicated at " + std::to_string(i);
    seen[p] = true;
  }
  return "";
}

// sort(temp, bytes, stream): the two-call protocol (temp == nullptr asks for bytes).
template <class R, class Sort>
record_timing time_one(const std::string& name, R* d, const R* pristine, std::uint64_t n,
                       int reps, cudaStream_t stream,
                       const std::function<void(int)>& before_run, Sort sort) {
  record_timing t{name};
  std::size_t bytes = 0;
  cudaError_t e = sort(nullptr, bytes);
  void* temp = nullptr;
  if (e == cudaSuccess && bytes) e = cudaMalloc(&temp, bytes);
  t.extra_bytes = name == "thrust" ? -1 : static_cast<std::int64_t>(bytes);
  cudaEvent_t start = nullptr, stop = nullptr;
  if (e == cudaSuccess) e = cudaEventCreate(&start);
  if (e == cudaSuccess) e = cudaEventCreate(&stop);
  for (int r = 0; r < reps + 2 && e == cudaSuccess; ++r) {
    e = cudaMemcpyAsync(d, pristine, n * sizeof(R), cudaMemcpyDeviceToDevice, stream);
    if (e == cudaSuccess) before_run(r);
    if (e == cudaSuccess) e = cudaEventRecord(start, stream);
    if (e == cudaSuccess) e = sort(bytes ? temp : static_cast<void*>(d), bytes);
    if (e == cudaSuccess) e = cudaEventRecord(stop, stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(stop);
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
    if (e == cudaSuccess && r >= 2) t.ms.push_back(ms);
  }
  if (e != cudaSuccess) {
    t.problem = std::string("CUDA error: ") + cudaGetErrorString(e);
    cudaGetLastError();
  } else {
    t.problem = check_result(d, n);
  }
  if (!t.problem.empty()) t.ms.clear();
  std::sort(t.ms.begin(), t.ms.end());
  if (stop) cudaEventDestroy(stop);
  if (start) cudaEventDestroy(start);
  cudaFree(temp);
  return t;
}

template <class R>
std::vector<record_timing> time_type(std::uint64_t n, int reps, std::uint64_t seed,
                                     const std::vector<std::string>& algorithms,
                                     cudaStream_t stream,
                                     const std::function<void(int)>& before_run) {
  std::vector<R> host(n);
  for (std::uint64_t i = 0; i < n; ++i) host[i] = make_record<R>(i, seed);
  R *d = nullptr, *pristine = nullptr;
  if (cudaMalloc(&d, n * sizeof(R)) != cudaSuccess ||
      cudaMalloc(&pristine, n * sizeof(R)) != cudaSuccess) {
    cudaFree(d);
    cudaGetLastError();
    throw std::bad_alloc();
  }
  cudaMemcpy(pristine, host.data(), n * sizeof(R), cudaMemcpyHostToDevice);
  const auto library = [&](gpusort::options opt) {
    opt.stream = stream;
    return [=](void* temp, std::size_t& bytes) {
      return gpusort::sort_keys(temp, bytes, d, n, by_fields{}, opt);
    };
  };
  std::vector<record_timing> out;
  for (const std::string& name : algorithms) {
    if (name == "automatic") {  // the default options: what a caller gets without choosing
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run, library({})));
    } else if (name == "sample_sort") {
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run,
                             library({.algo = algorithm::sample_sort})));
    } else if (name == "sample_sort_random") {
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run,
                             library({.algo = algorithm::sample_sort,
                                      .sampler = sampling::random})));
    } else if (name == "bitonic") {
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run,
                             library({.algo = algorithm::bitonic})));
    } else if (name == "thrust") {
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run,
                             [&](void* temp, std::size_t& bytes) {
        if (!temp) return (bytes = 0, cudaSuccess);
        thrust::sort(thrust::cuda::par_nosync.on(stream), d, d + n, by_fields{});
        return cudaGetLastError();
      }));
    } else if (name == "cub_merge") {
      out.push_back(time_one(name, d, pristine, n, reps, stream, before_run,
                             [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMergeSort::SortKeys(temp, bytes, d, static_cast<std::int64_t>(n),
                                              by_fields{}, stream);
      }));
    }
  }
  cudaFree(d);
  cudaFree(pristine);
  return out;
}

}  // namespace

std::vector<record_timing> time_record_sorts(const std::string& type, std::uint64_t n, int reps,
                                             std::uint64_t seed,
                                             const std::vector<std::string>& algorithms,
                                             cudaStream_t stream,
                                             const std::function<void(int)>& before_run) {
  if (type == "rec16") return time_type<rec16>(n, reps, seed, algorithms, stream, before_run);
  if (type == "rec32") return time_type<rec32>(n, reps, seed, algorithms, stream, before_run);
  return time_type<u64pair>(n, reps, seed, algorithms, stream, before_run);
}

}  // namespace gpusort::bench
