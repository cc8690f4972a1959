// Host-side helpers of both layers: pointer validation, device detection, messages, errors.
#include <cstdio>
#include <mutex>
#include <string>

#include "gpusort/detail/address_range.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::detail {

namespace {

// The driver's cuMemGetAddressRange, found through the runtime so that the library needs no
// link to libcuda; null where the driver does not offer it.
using address_range_fn = int (*)(unsigned long long* base, std::size_t* size,
                                 unsigned long long address);
address_range_fn driver_address_range() {
  static const address_range_fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      f = nullptr;
    cudaGetLastError();
    return reinterpret_cast<address_range_fn>(f);
  }();
  return fn;
}

}  // namespace

cudaError_t validate_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                                  std::size_t alignment) {
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return cudaErrorInvalidValue;
  if (reinterpret_cast<std::uintptr_t>(ptr) % alignment != 0) return cudaErrorMisalignedAddress;
  cudaPointerAttributes attr{};
  cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
  if (e != cudaSuccess) return e;
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    return cudaErrorInvalidValue;
  // Every byte must be mapped device memory: walk the allocations from the first element's
  // on. Usually one; PyTorch's expandable segments (CUDA's virtual memory API) map one array
  // as several contiguous allocations, and the driver answers for one at a time.
  const auto first = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr));
  const std::uint64_t end = array_end(first, count, elem_bytes);
  if (end == 0) return cudaErrorInvalidValue;
  if (const address_range_fn range = driver_address_range()) {
    unsigned long long base = 0;
    std::size_t size = 0;
    if (range(&base, &size, first) == 0) {
      while (base + size < end) {
        if (range(&base, &size, base + size) != 0) return cudaErrorInvalidValue;
      }
      return cudaSuccess;
    }
  }
  // No range from the driver: both ends.
  e = cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(end - elem_bytes));
  if (e != cudaSuccess) return e;
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    return cudaErrorInvalidValue;
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
