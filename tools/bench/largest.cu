#include "bench/largest.hpp"

#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>

#include "common/shuffle.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::bench {
namespace {

int value_shift(std::uint64_t n) {
  int shift = 0;
  while ((n - 1) >> shift > 0xFFFFFFFFull) ++shift;
  return shift;
}

__global__ void fill_counting(std::uint32_t* keys, std::uint64_t n, int shift) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<std::uint32_t>(tools::shuffle_index(i, n) >> shift);
}

struct misplaced_key {
  const std::uint32_t* keys;
  int shift;
  __device__ bool operator()(std::uint64_t i) const {
    return keys[i] != static_cast<std::uint32_t>(i >> shift);
  }
};

}  // namespace

largest_result sort_counting_sequence(std::uint64_t n, algorithm algo) {
  largest_result result;
  auto failed = [&](cudaError_t e, const char* step) {
    result.status = e;
    result.failed_step = step;
    cudaGetLastError();
    return result;
  };
  std::uint32_t* keys = nullptr;
  cudaError_t e = cudaMalloc(&keys, n * sizeof(std::uint32_t));
  if (e != cudaSuccess) return failed(e, "allocating the keys");
  const int shift = value_shift(n);
  fill_counting<<<8192, 256>>>(keys, n, shift);
  const options opt{.algo = algo};
  void* temp = nullptr;
  e = sort_keys(nullptr, result.workspace_bytes, keys, n, opt);
  if (e == cudaSuccess && result.workspace_bytes > 0) e = cudaMalloc(&temp, result.workspace_bytes);
  if (e != cudaSuccess) {
    cudaFree(keys);
    return failed(e, "allocating the workspace");
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  e = sort_keys(temp ? temp : keys, result.workspace_bytes, keys, n, opt);
  cudaEventRecord(stop);
  if (e == cudaSuccess) e = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  result.sort_ms = ms;
  if (e == cudaSuccess) {
    result.misplaced = thrust::count_if(thrust::device, thrust::counting_iterator<std::uint64_t>(0),
                                        thrust::counting_iterator<std::uint64_t>(n),
                                        misplaced_key{keys, shift});
    e = cudaDeviceSynchronize();
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(temp);
  cudaFree(keys);
  if (e != cudaSuccess) return failed(e, "sorting");
  return result;
}

}  // namespace gpusort::bench
