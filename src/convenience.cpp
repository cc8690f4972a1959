// Host-side helpers of both layers: pointer validation, device detection, messages, errors.
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "gpusort/detail/core/address_range.hpp"
#include "gpusort/notices.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::detail {

namespace {

// Driver calls found through the runtime, so that the library needs no link to libcuda;
// null where the driver does not offer them.
template <class F>
F* driver_function(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    f = nullptr;
  cudaGetLastError();
  return reinterpret_cast<F*>(f);
}
using address_range_fn = int(unsigned long long* base, std::size_t* size,
                             unsigned long long address);
using pointer_attribute_fn = int(void* data, int attribute, unsigned long long address);
constexpr int legacy_ipc_attribute = 10;  // CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
constexpr int mempool_attribute = 17;     // CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE

struct driver_calls {
  address_range_fn* range = driver_function<address_range_fn>("cuMemGetAddressRange");
  pointer_attribute_fn* attribute = driver_function<pointer_attribute_fn>("cuPointerGetAttribute");
};
const driver_calls& driver() {
  static const driver_calls calls;
  return calls;
}

// Whether the allocation at `address` was mapped with the virtual memory API (cuMemMap):
// neither a cudaMalloc allocation nor one from a memory pool. Only such mappings may join
// into one array; two cudaMalloc allocations side by side are two arrays.
bool mapped_by_hand(unsigned long long address) {
  int legacy = 1;
  void* pool = nullptr;
  return driver().attribute(&legacy, legacy_ipc_attribute, address) == 0 && legacy == 0 &&
         driver().attribute(&pool, mempool_attribute, address) == 0 && pool == nullptr;
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
  // Every byte must lie in the allocation of the first element, or, for memory mapped with
  // the virtual memory API (PyTorch's expandable segments map one tensor as several
  // allocations side by side, and the driver answers for one at a time), in a run of such
  // mappings.
  const auto first = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr));
  const std::uint64_t end = array_end(first, count, elem_bytes);
  if (end == 0) return cudaErrorInvalidValue;
  if (driver().range && driver().attribute) {
    unsigned long long base = 0;
    std::size_t size = 0;
    if (driver().range(&base, &size, first) == 0) {
      if (base + size >= end) return cudaSuccess;
      if (!mapped_by_hand(first)) return cudaErrorInvalidValue;
      do {
        const unsigned long long next = base + size;
        if (driver().range(&base, &size, next) != 0 || !mapped_by_hand(next))
          return cudaErrorInvalidValue;
      } while (base + size < end);
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

namespace {
std::mutex notice_mutex;
std::function<void(std::string_view)> notice_handler;  // guarded by notice_mutex
bool cpu_fallback_noticed = false;                      // guarded by notice_mutex
}  // namespace

void notice_cpu_fallback(const char* why) {
  const std::lock_guard lock(notice_mutex);
  if (!notice_handler || cpu_fallback_noticed) return;
  cpu_fallback_noticed = true;
  notice_handler(std::string(why) + "; sorting on the CPU");
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

namespace gpusort {

void set_notice_handler(std::function<void(std::string_view)> handler) {
  const std::lock_guard lock(detail::notice_mutex);
  detail::notice_handler = std::move(handler);
}

}  // namespace gpusort
