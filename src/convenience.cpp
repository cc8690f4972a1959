// Host-side helpers of both layers: pointer validation, device detection, messages, errors.
#include <cstdio>
#include <mutex>
#include <string>

#include "gpusort/sort.hpp"

namespace gpusort::detail {

cudaError_t validate_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                                  std::size_t alignment) {
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return cudaErrorInvalidValue;
  if (reinterpret_cast<std::uintptr_t>(ptr) % alignment != 0) return cudaErrorMisalignedAddress;
  // Both ends must lie in device (or managed) memory: this catches host pointers and, often,
  // a count larger than the allocation.
  const char* ends[2] = {static_cast<const char*>(ptr),
                         static_cast<const char*>(ptr) + (count - 1) * elem_bytes};
  for (const char* p : ends) {
    cudaPointerAttributes attr{};
    const cudaError_t e = cudaPointerGetAttributes(&attr, p);
    if (e != cudaSuccess) return e;
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

void check_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                        std::size_t alignment, const char* what) {
  const cudaError_t e = validate_device_array(ptr, count, elem_bytes, alignment);
  if (e == cudaSuccess) return;
  cudaGetLastError();
  const std::string name(what);
  if (ptr == nullptr)
    throw_error(e, "gpusort: " + name + " is a null pointer but should hold " +
                       std::to_string(count) + " elements");
  if (e == cudaErrorMisalignedAddress)
    throw_error(e, "gpusort: " + name + " is not aligned to " + std::to_string(alignment) +
                       " bytes");
  if (e == cudaErrorInvalidValue)
    throw_error(e, "gpusort: " + name + " (" + std::to_string(count) +
                       " elements) is not all in device memory; pass a std::vector to sort "
                       "host data");
  throw_error(e, "gpusort: cannot inspect the " + name + " pointer");
}

bool gpu_available() {
  static const bool available = [] {
    int count = 0;
    const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();  // clear the error of a machine without a driver
    return ok;
  }();
  if (!available) notice_cpu_fallback("no CUDA device found");
  return available;
}

void notice_cpu_fallback(const char* why) {
  static std::once_flag once;
  std::call_once(once, [why] { std::fprintf(stderr, "gpusort: %s; sorting on the CPU\n", why); });
}

[[noreturn]] void throw_error(cudaError_t code, const std::string& message) {
  throw error(code, message);
}

std::string describe_call(const char* function, const options& opt, std::string_view key_type,
                          std::uint64_t n) {
  return std::string(function) + "(" + std::string(to_string(opt.algo)) + ", " +
         std::string(key_type) + ", n = " + std::to_string(n) + ")";
}

}  // namespace gpusort::detail
