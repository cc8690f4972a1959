// gpusort-bench-comparator: sorts with a user comparator, side by side in one process on one
// GPU: 16-byte records {u32 major, u32 minor, u64 payload} ordered by (major, minor), with
// sample_sort and bitonic (through gpusort/sort.cuh), thrust::sort and cub::DeviceMergeSort
// given the same comparator. CUDA events, 2 warm-ups, median of --reps runs on a fresh copy of
// the input; every result checked (sorted, payloads a permutation). Prints a table and, with
// a file name, CSV rows in the columns of docs/results/.
//   gpusort-bench-comparator [reps] [csv]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <cub/device/device_merge_sort.cuh>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include "common/distributions.hpp"
#include "gpusort/sort.cuh"

namespace {

struct record {
  std::uint32_t major, minor;
  std::uint64_t payload;
};
struct by_major_then_minor {
  __host__ __device__ bool operator()(const record& a, const record& b) const {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpusort-bench-comparator: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

// Times sort(temp, bytes) after asking it for its workspace; returns the median in ms.
template <class Sort>
double time_sort(const char* name, record* d, const record* pristine, std::size_t n, int reps,
                 std::size_t& extra, Sort sort) {
  std::size_t bytes = 0;
  check(sort(nullptr, bytes), name);
  void* temp = nullptr;
  if (bytes) check(cudaMalloc(&temp, bytes), "workspace");
  extra = bytes;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int r = 0; r < reps + 2; ++r) {
    check(cudaMemcpy(d, pristine, n * sizeof(record), cudaMemcpyDeviceToDevice), "copy");
    cudaEventRecord(start);
    check(sort(bytes ? temp : static_cast<void*>(d), bytes), name);
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), name);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (r >= 2) ms.push_back(t);
  }
  cudaFree(temp);
  std::vector<record> out(n);
  check(cudaMemcpy(out.data(), d, n * sizeof(record), cudaMemcpyDeviceToHost), "copy back");
  std::vector<bool> seen(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const bool ordered = i == 0 || !by_major_then_minor{}(out[i], out[i - 1]);
    if (!ordered || out[i].payload >= n || seen[out[i].payload]) {
      std::fprintf(stderr, "gpusort-bench-comparator: WRONG RESULT from %s at %zu\n", name, i);
      std::exit(1);
    }
    seen[out[i].payload] = true;
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  FILE* csv = argc > 2 ? std::fopen(argv[2], "w") : nullptr;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "no CUDA device");
  std::printf("16-byte records by (major, minor) on %s, median of %d\n", prop.name, reps);
  std::printf("%-12s %12s %10s %9s %12s\n", "algorithm", "n", "median ms", "Gkeys/s", "vs thrust");
  if (csv)
    std::fprintf(csv, "algorithm,key_type,value_type,distribution,n,segment_size,median_ms,"
                      "keys_per_s,extra_device_bytes,gpu,commit,min_ms,max_ms,reps\n");
  for (std::size_t n : {std::size_t{1} << 20, std::size_t{1} << 24}) {
    std::vector<record> host(n);
    for (std::size_t i = 0; i < n; ++i)
      host[i] = {static_cast<std::uint32_t>(gpusort::tools::random_bits(1, i) % 1000),
                 static_cast<std::uint32_t>(gpusort::tools::random_bits(2, i)), i};
    record *d = nullptr, *pristine = nullptr;
    check(cudaMalloc(&d, n * sizeof(record)), "keys");
    check(cudaMalloc(&pristine, n * sizeof(record)), "input");
    check(cudaMemcpy(pristine, host.data(), n * sizeof(record), cudaMemcpyHostToDevice), "copy");
    const auto library = [&](gpusort::algorithm algo) {
      return [&, algo](void* temp, std::size_t& bytes) {
        return gpusort::sort_keys(temp, bytes, d, n, by_major_then_minor{}, {.algo = algo});
      };
    };
    const auto thrust_sort = [&](void* temp, std::size_t& bytes) {
      if (!temp) return (bytes = 0, cudaSuccess);
      thrust::sort(thrust::device, d, d + n, by_major_then_minor{});
      return cudaGetLastError();
    };
    const auto cub_merge = [&](void* temp, std::size_t& bytes) {
      return cub::DeviceMergeSort::SortKeys(temp, bytes, d, static_cast<std::int64_t>(n),
                                            by_major_then_minor{});
    };
    struct row { const char* name; double ms; long long extra; };  // extra -1: unknown
    std::vector<row> rows;
    std::size_t extra = 0;
    double t = time_sort("thrust", d, pristine, n, reps, extra, thrust_sort);
    rows.push_back({"thrust", t, -1});  // it allocates its own
    t = time_sort("cub_merge", d, pristine, n, reps, extra, cub_merge);
    rows.push_back({"cub_merge", t, static_cast<long long>(extra)});
    t = time_sort("sample_sort", d, pristine, n, reps, extra, library(gpusort::algorithm::sample_sort));
    rows.push_back({"sample_sort", t, static_cast<long long>(extra)});
    t = time_sort("bitonic", d, pristine, n, reps, extra, library(gpusort::algorithm::bitonic));
    rows.push_back({"bitonic", t, static_cast<long long>(extra)});
    for (const row& r : rows) {
      std::printf("%-12s %12zu %10.3f %9.3f %11.2fx\n", r.name, n, r.ms, n / r.ms / 1e6,
                  rows[0].ms / r.ms);
      if (csv)
        std::fprintf(csv, "%s,rec16,none,uniform,%zu,0,%.6f,%.0f,%lld,%s,%s,,,%d\n", r.name, n, r.ms,
                     n / r.ms * 1e3, r.extra, prop.name, GPUSORT_COMMIT_ID, reps);
    }
    cudaFree(d);
    cudaFree(pristine);
  }
  if (csv) std::fclose(csv);
  return 0;
}
