// The benchmark's inputs and device memory (bench_input.hpp).
#include "bench_input.hpp"

#include "common/distributions.hpp"
#include "gpusort/error.hpp"

namespace gpusort::tools {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error(e, what);
}

cudaDeviceProp device_properties() {
  int device = 0;
  cudaDeviceProp prop{};
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return prop;
}

device_memory::device_memory(std::size_t bytes) {
  if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    ptr_ = nullptr;
    failed_ = true;
  }
}

device_memory::~device_memory() { cudaFree(ptr_); }

std::uint64_t array_seed(std::uint64_t seed, int array) {
  return array == 0 ? seed : random_bits(seed, static_cast<std::uint64_t>(array));
}

std::vector<std::uint32_t> original_indices(std::uint64_t n) {
  std::vector<std::uint32_t> values(n);
  for (std::uint64_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i);
  return values;
}

}  // namespace gpusort::tools
