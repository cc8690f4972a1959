// gpusort: sorting on NVIDIA GPUs.
//
// Two layers:
//  * the core, CUB-style: sort_keys / sort_pairs take a workspace pointer and its size. With
//    temp == nullptr they only write the bytes needed into temp_bytes (0 for in-place
//    algorithms such as bitonic) and touch nothing else; when 0 bytes are needed, pass any
//    non-null pointer (the keys, say) to sort. They are ordered on opt.stream,
//    never synchronize, never allocate and never throw; they return cudaSuccess or the error.
//    Bad input (a null or host pointer with n > 0, a negative n, a misaligned value array)
//    is reported before any data is touched.
//  * the convenience layer: gpusort::sort(...) on std::span (device memory) or std::vector
//    (host memory). It allocates the workspace on the stream (cudaMallocAsync), waits for
//    the stream, and throws gpusort::error with a message that names the problem. On error
//    the data is as it was. The std::vector overloads use the GPU when there is one and the
//    CPU backend otherwise (saying so once on stderr).
//
// Order: ascending by default; floats in the total order of key_traits.hpp (-0.0 before
// +0.0, NaNs last). Stability: bitonic, sample_sort and quicksort are not stable; adaptive_bitonic,
// cub_radix and cub_merge are; automatic is when it picks one of them (its query then asks
// for a nonzero workspace), except that NaNs of different bits may change order.
// Memory: bitonic uses 0 extra bytes; sample_sort a second buffer of n keys (and values)
// plus samples and bucket counts, under 2 bytes per key (docs/sample_sort.md);
// adaptive_bitonic two buffers of 2^ceil(log2 n) items of 8 (32-bit keys) or 16 bytes
// (docs/adaptive_bitonic.md); quicksort a second buffer of n keys (and values) plus under
// 1 byte per key (docs/quicksort.md); the CUB baselines report theirs
// through temp_bytes; automatic asks for CUB's workspace only if it fits in free device
// memory (detail/automatic.hpp), and sorts in place when given 0 bytes.
//
// Example:
//   std::vector<float> v = ...;
//   gpusort::sort(v);                                   // ascending, on the GPU if present
//   float* d_keys; ...
//   gpusort::sort(std::span(d_keys, n), {.algo = gpusort::algorithm::bitonic,
//                                        .direction = gpusort::order::descending});
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/detail/types.hpp"
#include "gpusort/options.hpp"

namespace gpusort {

namespace detail {

template <class V>
concept supported_value = std::is_trivially_copyable_v<V> &&
                          (sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16);

template <class V>
using payload_of = payload<sizeof(V)>;

// Defined in src/ for every supported key type and value size.
template <class K>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                      const options& opt);
template <class K, class P>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                       std::uint64_t n, const options& opt);
template <class K, class V>
algorithm automatic_algorithm(std::uint64_t n, const options& opt);
template <class K>
void cpu_sort_keys(K* keys, std::uint64_t n, const options& opt);
template <class K, class P>
void cpu_sort_pairs(K* keys, P* values, std::uint64_t n, const options& opt);

// Can the device read and write `count` elements at ptr? cudaSuccess, or the reason not:
// null or host pointer, misaligned, or an end outside device memory. (src/convenience.cpp)
cudaError_t validate_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                                  std::size_t alignment);

// Convenience-layer helpers (src/convenience.cpp).
bool gpu_available();
void notice_cpu_fallback(const char* why);
// Throws gpusort::error naming `what` if ptr cannot be used as `count` device elements.
void check_device_array(const void* ptr, std::uint64_t count, std::size_t elem_bytes,
                        std::size_t alignment, const char* what);
[[noreturn]] void throw_error(cudaError_t code, const std::string& message);
std::string describe_call(const char* function, const options& opt, std::string_view key_type,
                          std::uint64_t n);

// The convenience layer's workspace: allocated and freed on the stream. An in-place
// algorithm needs 0 bytes but still gets a non-null pointer, since a null one only asks.
class workspace {
 public:
  workspace(std::size_t bytes, cudaStream_t stream, const std::string& call) : stream_(stream) {
    if (bytes == 0) return;
    const cudaError_t e = cudaMallocAsync(&ptr_, bytes, stream);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw_error(e, call + ": cannot allocate " + std::to_string(bytes) +
                         " bytes of device workspace");
    }
  }
  ~workspace() {
    if (ptr_ != &none_) cudaFreeAsync(ptr_, stream_);
  }
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;
  void* get() const { return ptr_; }

 private:
  static inline char none_ = 0;
  void* ptr_ = &none_;
  cudaStream_t stream_;
};

template <std::integral N>
constexpr bool negative(N n) {
  if constexpr (std::is_signed_v<N>) return n < 0;
  return false;
}
}  // namespace detail

// ---- core layer -----------------------------------------------------------------------

// Sorts keys[0, n) in device memory. N may be any integer type (64-bit sizes work).
template <supported_key K, std::integral N>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, N n, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::sort_keys<K>(temp, temp_bytes, keys, static_cast<std::uint64_t>(n), opt);
}

// Sorts keys[0, n) and moves values[i] along with keys[i]. V: any trivially copyable type
// of 4, 8 or 16 bytes, with values aligned to its size.
template <supported_key K, detail::supported_value V, std::integral N>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values, N n,
                       const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::sort_pairs<K, detail::payload_of<V>>(
      temp, temp_bytes, keys, reinterpret_cast<detail::payload_of<V>*>(values),
      static_cast<std::uint64_t>(n), opt);
}

// What algorithm::automatic runs for n keys of type K, alone (V = void) or with values of
// type V, on the current device: the sort whose workspace its query asks for (cub_merge for
// small arrays, cub_radix), or bitonic, which needs none (also where that workspace does not
// fit in free device memory, and without a GPU, where the CPU backend sorts). The table it
// follows is in docs/performance.md; the tool and the benchmark print its choice.
template <supported_key K, class V = void>
algorithm automatic_algorithm(std::uint64_t n, const options& opt = {}) {
  if constexpr (std::is_void_v<V>)
    return detail::automatic_algorithm<K, detail::no_value>(n, opt);
  else
    return detail::automatic_algorithm<K, detail::payload_of<V>>(n, opt);
}

// ---- convenience layer ------------------------------------------------------------------

// Sorts device keys; waits for the stream. Throws gpusort::error.
template <supported_key K>
void sort(std::span<K> device_keys, const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call = detail::describe_call("gpusort::sort", opt, key_traits<K>::name, n);
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  std::size_t bytes = 0;
  cudaError_t e = sort_keys(nullptr, bytes, device_keys.data(), n, opt);
  if (e != cudaSuccess) detail::throw_error(e, call);
  detail::workspace temp(bytes, opt.stream, call);
  e = sort_keys(temp.get(), bytes, device_keys.data(), n, opt);
  if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
  if (e != cudaSuccess) detail::throw_error(e, call);
}

// Sorts device keys with their values; waits for the stream. Throws gpusort::error.
template <supported_key K, detail::supported_value V>
void sort(std::span<K> device_keys, std::span<V> device_values, const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call =
      detail::describe_call("gpusort::sort (pairs)", opt, key_traits<K>::name, n);
  if (device_values.size() != n)
    detail::throw_error(cudaErrorInvalidValue,
                        call + ": " + std::to_string(device_values.size()) +
                            " values for " + std::to_string(n) + " keys");
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(device_values.data(), n, sizeof(V), sizeof(V), "values");
  std::size_t bytes = 0;
  cudaError_t e = sort_pairs(nullptr, bytes, device_keys.data(), device_values.data(), n, opt);
  if (e != cudaSuccess) detail::throw_error(e, call);
  detail::workspace temp(bytes, opt.stream, call);
  e = sort_pairs(temp.get(), bytes, device_keys.data(), device_values.data(), n, opt);
  if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
  if (e != cudaSuccess) detail::throw_error(e, call);
}

namespace detail {
// Copies a host array to the device, runs `device_sort` on it and copies it back. Returns
// false (data untouched) if the device has no room for it.
template <class K, class V>
bool sort_on_device(std::vector<K>& keys, std::vector<V>* values, const options& opt);
}  // namespace detail

// Sorts host keys: on the GPU if there is one (copy in, sort, copy out), else on the CPU.
template <supported_key K>
void sort(std::vector<K>& host_keys, const options& opt = {}) {
  if (detail::gpu_available() &&
      detail::sort_on_device<K, detail::no_value>(host_keys, nullptr, opt))
    return;
  detail::cpu_sort_keys(host_keys.data(), host_keys.size(), opt);
}

template <supported_key K, detail::supported_value V>
void sort(std::vector<K>& host_keys, std::vector<V>& host_values, const options& opt = {}) {
  if (host_values.size() != host_keys.size())
    detail::throw_error(cudaErrorInvalidValue,
                        "gpusort::sort (pairs): " + std::to_string(host_values.size()) +
                            " values for " + std::to_string(host_keys.size()) + " keys");
  if (detail::gpu_available() && detail::sort_on_device(host_keys, &host_values, opt)) return;
  detail::cpu_sort_pairs(host_keys.data(),
                         reinterpret_cast<detail::payload_of<V>*>(host_values.data()),
                         host_keys.size(), opt);
}

namespace detail {
template <class K, class V>
bool sort_on_device(std::vector<K>& keys, std::vector<V>* values, const options& opt) {
  const std::size_t n = keys.size();
  if (n < 2) return true;
  const std::size_t value_bytes = values ? sizeof(V) * n : 0;
  K* d_keys = nullptr;
  void* d_values = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&d_keys), sizeof(K) * n) != cudaSuccess) {
    cudaGetLastError();
    notice_cpu_fallback("not enough device memory for the keys");
    return false;
  }
  if (values && cudaMalloc(&d_values, value_bytes) != cudaSuccess) {
    cudaGetLastError();
    cudaFree(d_keys);
    notice_cpu_fallback("not enough device memory for the values");
    return false;
  }
  auto release = [&] {
    cudaFree(d_keys);
    if (d_values) cudaFree(d_values);
  };
  try {
    cudaError_t e = cudaMemcpy(d_keys, keys.data(), sizeof(K) * n, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && values)
      e = cudaMemcpy(d_values, values->data(), value_bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) throw_error(e, "gpusort::sort: copy to the device failed");
    if constexpr (std::is_same_v<V, no_value>) {
      gpusort::sort(std::span<K>(d_keys, n), opt);
    } else {
      gpusort::sort(std::span<K>(d_keys, n), std::span<V>(static_cast<V*>(d_values), n), opt);
    }
    // Copy both back before touching the host arrays: on error they stay as they were.
    std::vector<K> sorted_keys(n);
    std::vector<V> sorted_values;
    e = cudaMemcpy(sorted_keys.data(), d_keys, sizeof(K) * n, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && values) {
      sorted_values.resize(n);
      e = cudaMemcpy(sorted_values.data(), d_values, value_bytes, cudaMemcpyDeviceToHost);
    }
    if (e != cudaSuccess) throw_error(e, "gpusort::sort: copy from the device failed");
    keys.swap(sorted_keys);
    if (values) values->swap(sorted_values);
  } catch (...) {
    release();
    throw;
  }
  release();
  return true;
}
}  // namespace detail

}  // namespace gpusort

#include "gpusort/segmented.hpp"  // sort_batched, sort_segmented (includes this header)
