// gpusort: sorting on NVIDIA GPUs.
//
// Two layers:
//  * the core, CUB-style: sort_keys / sort_pairs take a workspace pointer and its size. With
//    temp == nullptr they only write the bytes needed into temp_bytes and touch nothing
//    else; the answer is never 0 (in-place algorithms such as bitonic ask for 1 byte they
//    never touch), so "query, allocate, call" always sorts. They are ordered on opt.stream,
//    never allocate and never throw; they return cudaSuccess or the error. They never
//    synchronize either.
//    Bad input (a null or host pointer with n > 0, a negative n, a misaligned value array)
//    is reported before any data is touched.
//  * the convenience layer: gpusort::sort(...) on std::span (device memory) or std::vector
//    (host memory). It allocates the workspace on the stream (options::allocator if set,
//    else cudaMallocAsync), waits for the stream, and throws gpusort::error with a message
//    that names the problem. On error the data is as it was. The std::vector overloads use
//    the GPU when there is one and the CPU backend otherwise (saying so once on stderr).
//  * argsort and sort_with_indices: indices generated on the device (std::uint32_t up to
//    2^32 keys, or std::uint64_t), the keys kept or sorted.
//
// Keys: the 32- and 64-bit integers and floats of key_traits.hpp, and the narrow keys bool,
// int8/uint8, int16/uint16, __half and __nv_bfloat16 (detail/core/narrow_keys.hpp: sorted as
// 32-bit codes through the u32 sorts, 4 bytes a key of workspace more; their NaNs come out
// ordered by their bits). Order: ascending by default; floats in the total order of key_traits.hpp
// (-0.0 before +0.0), NaNs after every number in both orders (options::nans = last, NumPy's choice)
// or before (first). Stability: bitonic, sample_sort, quicksort, approx_refine and thrust are not
// stable; adaptive_bitonic, cub_radix and cub_merge are; automatic is when it picks one of them
// (its query then asks for a nonzero workspace). options::stable = true makes every algorithm
// stable (sort.cuh's user comparators refuse it): automatic picks a stable sort whatever the memory
// (cub_merge for floats, cub_radix, adaptive_bitonic where CUB's sorts are not built); the others
// sort (key, position) and then the positions of each run of equal keys (index_math/tie_break.hpp),
// for 4 + 8 bytes (plus a value) per key of workspace, up to 2^32 keys. NaNs of different bits keep
// their order in the comparison sorts; cub_radix orders them by sign.
// Memory: bitonic uses 0 extra bytes; sample_sort a second buffer of n keys (and values)
// plus samples and bucket counts, under 2 bytes per key (docs/sample_sort.md);
// adaptive_bitonic two buffers of 2^ceil(log2 n) items of 8 (32-bit keys) or 16 bytes
// (docs/adaptive_bitonic.md); quicksort a second buffer of n keys (and values) plus under
// 1 byte per key (docs/quicksort.md); the CUB baselines report theirs
// through temp_bytes; automatic asks for CUB's workspace only if it fits in free device
// memory (detail/core/automatic.hpp), and sorts in place when given fewer bytes than that.
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
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/detail/core/entry.hpp"
#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/detail/core/types.hpp"
#include "gpusort/options.hpp"
#include "gpusort/segmented.hpp"  // sort_batched, sort_segmented

namespace gpusort {

// ---- core layer -----------------------------------------------------------------------

// Sorts keys[0, n) in device memory. N may be any integer type (64-bit sizes work).
template <sortable_key K, std::integral N>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, N n, const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(
      temp, temp_bytes,
      detail::sort_any_key<K, detail::no_value>(temp, temp_bytes, keys, nullptr,
                                                static_cast<std::uint64_t>(n), opt));
}

// Sorts keys[0, n) and moves values[i] along with keys[i]. V: any trivially copyable type
// of 4, 8 or 16 bytes, with values aligned to its size.
template <sortable_key K, detail::supported_value V, std::integral N>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, V* values, N n,
                       const options& opt = {}) {
  if (detail::negative(n)) return cudaErrorInvalidValue;
  return detail::never_zero(temp, temp_bytes,
                            detail::sort_any_key<K, detail::payload_of<V>>(
                                temp, temp_bytes, keys,
                                reinterpret_cast<detail::payload_of<V>*>(values),
                                static_cast<std::uint64_t>(n), opt));
}

// What algorithm::automatic runs for n keys of type K, alone (V = void) or with values of
// type V, on the current device: the sort whose workspace its query asks for (cub_merge for
// small arrays, cub_radix), or bitonic, which needs none (also where that workspace does not
// fit in free device memory, and without a GPU, where the CPU backend sorts). The table it
// follows is in docs/performance.md; the tool and the benchmark print its choice.
template <sortable_key K, class V = void>
algorithm automatic_algorithm(std::uint64_t n, const options& opt = {}) {
  if constexpr (std::is_void_v<V>)
    return detail::automatic_algorithm_any_key<K, detail::no_value>(n, opt);
  else
    return detail::automatic_algorithm_any_key<K, detail::payload_of<V>>(n, opt);
}


// Sorts keys[0, n) and writes into indices[i] the input position of the key now at i
// (generated on the device: torch.sort's indices). I: std::uint32_t (n up to 2^32) or
// std::uint64_t. Workspace: the sort's own for (key, index) pairs.
template <sortable_key K, detail::index_type I, std::integral N>
cudaError_t sort_with_indices(void* temp, std::size_t& temp_bytes, K* keys, I* indices, N n,
                              const options& opt = {}) {
  if (detail::negative(n) || !detail::indices_fit<I>(static_cast<std::uint64_t>(n)))
    return cudaErrorInvalidValue;
  const auto count = static_cast<std::uint64_t>(n);
  using P = detail::payload<sizeof(I)>;
  auto* values = reinterpret_cast<P*>(indices);
  if (temp) {
    const cudaError_t e = detail::validate_device_array(indices, count, sizeof(I), sizeof(I));
    if (e != cudaSuccess) return e;
    std::size_t bytes = 0;  // the sort checks the rest before the indices are written
    const cudaError_t q = detail::sort_any_key<K, P>(nullptr, bytes, keys, values, count, opt);
    if (q != cudaSuccess) return q;
    const cudaError_t f = detail::fill_indices(indices, count, opt.stream);
    if (f != cudaSuccess) return f;
  }
  return detail::never_zero(temp, temp_bytes,
                            detail::sort_any_key<K, P>(temp, temp_bytes, keys, values, count, opt));
}

// argsort: indices[i] = the input position of the i-th key in sorted order (numpy.argsort,
// torch.argsort); keys are left as they are. I as above. Workspace: a copy of the keys (n keys
// rounded up to 256 bytes) and the sort's own.
template <sortable_key K, detail::index_type I, std::integral N>
cudaError_t argsort(void* temp, std::size_t& temp_bytes, const K* keys, I* indices, N n,
                    const options& opt = {}) {
  if (detail::negative(n) || !detail::indices_fit<I>(static_cast<std::uint64_t>(n)))
    return cudaErrorInvalidValue;
  const auto count = static_cast<std::uint64_t>(n);
  cudaError_t e = detail::validate_device_array(keys, count, sizeof(K), alignof(K));
  if (e == cudaSuccess) e = detail::validate_device_array(indices, count, sizeof(I), sizeof(I));
  if (e != cudaSuccess) return e;
  const std::size_t copy_bytes = detail::align_workspace(sizeof(K) * count);
  using P = detail::payload<sizeof(I)>;
  auto* values = reinterpret_cast<P*>(indices);
  if (!temp) {
    std::size_t sort_bytes = 0;
    e = detail::sort_any_key<K, P>(nullptr, sort_bytes, const_cast<K*>(keys), values, count, opt);
    temp_bytes = copy_bytes + sort_bytes;
    return detail::never_zero(temp, temp_bytes, e);
  }
  if (temp_bytes < copy_bytes) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  K* copy = static_cast<K*>(temp);
  std::size_t sort_bytes = temp_bytes - copy_bytes;
  void* sort_temp = sort_bytes ? static_cast<char*>(temp) + copy_bytes : temp;
  e = cudaMemcpyAsync(copy, keys, sizeof(K) * count, cudaMemcpyDeviceToDevice, opt.stream);
  if (e == cudaSuccess) e = detail::fill_indices(indices, count, opt.stream);
  if (e == cudaSuccess) e = detail::sort_any_key<K, P>(sort_temp, sort_bytes, copy, values, count, opt);
  return e;
}

// ---- convenience layer ------------------------------------------------------------------



// Sorts device keys; waits for the stream. Throws gpusort::error.
template <sortable_key K>
void sort(std::span<K> device_keys, const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call = detail::describe_call("gpusort::sort", opt, detail::key_name<K>, n);
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::run_with_workspace(call, opt, [&](void* t, std::size_t& b) {
    return sort_keys(t, b, device_keys.data(), n, opt);
  });
}

// Sorts device keys with their values; waits for the stream. Throws gpusort::error.
template <sortable_key K, detail::supported_value V>
void sort(std::span<K> device_keys, std::span<V> device_values, const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call =
      detail::describe_call("gpusort::sort (pairs)", opt, detail::key_name<K>, n);
  if (device_values.size() != n)
    detail::throw_error(cudaErrorInvalidValue,
                        call + ": " + std::to_string(device_values.size()) +
                            " values for " + std::to_string(n) + " keys");
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(device_values.data(), n, sizeof(V), sizeof(V), "values");
  detail::run_with_workspace(call, opt, [&](void* t, std::size_t& b) {
    return sort_pairs(t, b, device_keys.data(), device_values.data(), n, opt);
  });
}

// Sorts device keys and writes their input positions into device indices; waits. Throws.
template <sortable_key K, detail::index_type I>
void sort_with_indices(std::span<K> device_keys, std::span<I> device_indices,
                       const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call =
      detail::describe_call("gpusort::sort_with_indices", opt, detail::key_name<K>, n);
  detail::check_index_count<I>(call, n, device_indices.size());
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(device_indices.data(), n, sizeof(I), sizeof(I), "indices");
  detail::run_with_workspace(call, opt, [&](void* t, std::size_t& b) {
    return sort_with_indices(t, b, device_keys.data(), device_indices.data(), n, opt);
  });
}

// The indices that sort device keys, into device indices; keys unchanged. Waits. Throws.
template <sortable_key K, detail::index_type I>
void argsort(std::span<const K> device_keys, std::span<I> device_indices, const options& opt = {}) {
  const std::uint64_t n = device_keys.size();
  const std::string call = detail::describe_call("gpusort::argsort", opt, detail::key_name<K>, n);
  detail::check_index_count<I>(call, n, device_indices.size());
  detail::check_device_array(device_keys.data(), n, sizeof(K), alignof(K), "keys");
  detail::check_device_array(device_indices.data(), n, sizeof(I), sizeof(I), "indices");
  detail::run_with_workspace(call, opt, [&](void* t, std::size_t& b) {
    return argsort(t, b, device_keys.data(), device_indices.data(), n, opt);
  });
}

namespace detail {
// Copies a host array to the device, runs `device_sort` on it and copies it back. Returns
// false (data untouched) if the device has no room for it.
template <class K, class V>
bool sort_on_device(std::vector<K>& keys, std::vector<V>* values, const options& opt);
}  // namespace detail

// Sorts host keys: on the GPU if there is one (copy in, sort, copy out), else on the CPU.
template <sortable_key K>
void sort(std::vector<K>& host_keys, const options& opt = {}) {
  static_assert(!std::is_same_v<K, bool>, "std::vector<bool> packs its bits: sort bytes (std::uint8_t)");
  if (detail::gpu_available() &&
      detail::sort_on_device<K, detail::no_value>(host_keys, nullptr, opt))
    return;
  detail::cpu_sort_any_key<K, detail::no_value>(host_keys.data(), nullptr, host_keys.size(), opt);
}

template <sortable_key K, detail::supported_value V>
void sort(std::vector<K>& host_keys, std::vector<V>& host_values, const options& opt = {}) {
  static_assert(!std::is_same_v<K, bool>, "std::vector<bool> packs its bits: sort bytes (std::uint8_t)");
  if (host_values.size() != host_keys.size())
    detail::throw_error(cudaErrorInvalidValue,
                        "gpusort::sort (pairs): " + std::to_string(host_values.size()) +
                            " values for " + std::to_string(host_keys.size()) + " keys");
  if (detail::gpu_available() && detail::sort_on_device(host_keys, &host_values, opt)) return;
  detail::cpu_sort_any_key(host_keys.data(),
                           reinterpret_cast<detail::payload_of<V>*>(host_values.data()),
                           host_keys.size(), opt);
}

// The indices that sort host keys (keys unchanged): on the GPU if there is one, else on the
// CPU. I = std::uint32_t by default (up to 2^32 keys); std::uint64_t for more.
template <detail::index_type I = std::uint32_t, sortable_key K>
std::vector<I> argsort(const std::vector<K>& host_keys, const options& opt = {}) {
  const std::uint64_t n = host_keys.size();
  detail::check_index_count<I>(
      detail::describe_call("gpusort::argsort", opt, detail::key_name<K>, n), n, n);
  std::vector<K> keys = host_keys;
  std::vector<I> indices(n);
  for (std::uint64_t i = 0; i < n; ++i) indices[i] = static_cast<I>(i);
  gpusort::sort(keys, indices, opt);
  return indices;
}

namespace detail {
template <class K, class V>
bool sort_on_device(std::vector<K>& keys, std::vector<V>* values, const options& opt) {
  const std::size_t n = keys.size();
  if (n < 2) return true;
  const std::string call = "gpusort::sort";
  std::optional<device_buffer<K>> d_keys;
  std::optional<device_buffer<V>> d_values;
  try {
    d_keys.emplace(n, opt, call);
    if (values) d_values.emplace(n, opt, call);
  } catch (const error&) {
    notice_cpu_fallback("not enough device memory for the keys and values");
    return false;
  }
  const auto copy = [&](void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind,
                        const char* what) {
    cudaError_t e = cudaMemcpyAsync(to, from, bytes, kind, opt.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(opt.stream);
    if (e != cudaSuccess) throw_error(e, call + ": " + what);
  };
  copy(d_keys->get(), keys.data(), sizeof(K) * n, cudaMemcpyHostToDevice, "copy to the device failed");
  if (values)
    copy(d_values->get(), values->data(), sizeof(V) * n, cudaMemcpyHostToDevice,
         "copy to the device failed");
  if constexpr (std::is_same_v<V, no_value>) {
    gpusort::sort(std::span<K>(d_keys->get(), n), opt);
  } else {
    gpusort::sort(std::span<K>(d_keys->get(), n), std::span<V>(d_values->get(), n), opt);
  }
  // Copy both back before touching the host arrays: on error they stay as they were.
  std::vector<K> sorted_keys(n);
  std::vector<V> sorted_values;
  copy(sorted_keys.data(), d_keys->get(), sizeof(K) * n, cudaMemcpyDeviceToHost,
       "copy from the device failed");
  if (values) {
    sorted_values.resize(n);
    copy(sorted_values.data(), d_values->get(), sizeof(V) * n, cudaMemcpyDeviceToHost,
         "copy from the device failed");
  }
  keys.swap(sorted_keys);
  if (values) values->swap(sorted_values);
  return true;
}
}  // namespace detail

}  // namespace gpusort

