// The core layer's dispatch: validation, then the chosen algorithm. src/sort_<key>.cu
// instantiates it for one key type and every value size.
#pragma once

#include "gpusort/approx.hpp"
#include "gpusort/detail/automatic.hpp"
#include "gpusort/detail/cpu/adaptive_bitonic.hpp"
#include "gpusort/detail/cpu/approx.hpp"
#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/cpu/quicksort.hpp"
#include "gpusort/detail/cpu/sample_sort.hpp"
#include "gpusort/detail/cpu/segmented.hpp"
#include "gpusort/detail/device/adaptive_bitonic.cuh"
#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/float_order.cuh"
#include "gpusort/detail/device/quicksort.cuh"
#include "gpusort/detail/device/radix_floats.cuh"
#include "gpusort/detail/device/sample_sort.cuh"
#include "gpusort/sort.hpp"

namespace gpusort::detail {

// The sample sort with the library's comparator; its final buckets go to the segmented sort
// instantiated in src/segmented_<key>.cu.
template <class K, class V>
cudaError_t sample_sort_any(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                            std::uint64_t n, const options& opt) {
  const int bits = network::bucket_bits_of(opt.buckets);
  if (bits < 0) return cudaErrorInvalidValue;
  const device::sample_sort_knobs knobs{bits, opt.sampler == sampling::random};
  auto sort_buckets = [](void* t, std::size_t& bytes, K* k, V* v, std::uint64_t count,
                         const segment_list& segs, bool descending, cudaStream_t stream) {
    return sort_segments<K, V>(t, bytes, k, v, count, segs,
                               {.direction = descending ? order::descending : order::ascending,
                                .stream = stream});
  };
  return device::sample_sort(temp, temp_bytes, keys, values, n, less<K>{},
                             opt.direction == order::descending, knobs, sort_buckets, opt.stream);
}

// The comparison sorts that float keys run as codes (detail/float_order.hpp): not stable, so
// that NaNs coming out in code order is one of the orders allowed.
constexpr bool sorts_float_codes(algorithm a) {
  return a == algorithm::bitonic || a == algorithm::sample_sort || a == algorithm::quicksort;
}

// The unsigned sorts, instantiated in src/sort_u32.cu and src/sort_u64.cu.
template <class U, class V>
cudaError_t sort_unsigned(void* temp, std::size_t& temp_bytes, U* keys, V* values,
                          std::uint64_t n, const options& opt) {
  if constexpr (std::is_same_v<V, no_value>)
    return sort_keys<U>(temp, temp_bytes, keys, n, opt);
  else
    return sort_pairs<U, V>(temp, temp_bytes, keys, values, n, opt);
}

// Float keys: codes, the unsigned sort, floats again. The keys are mapped back whatever the
// sort returns, so that an error leaves them as they were (the sort checks its arguments
// before it moves a key).
template <class F, class V>
cudaError_t sort_float_codes(void* temp, std::size_t& temp_bytes, F* keys, V* values,
                             std::uint64_t n, const options& opt) {
  using U = typename float_order<F>::U;
  U* codes = reinterpret_cast<U*>(keys);
  if (!temp) return sort_unsigned<U, V>(temp, temp_bytes, codes, values, n, opt);
  cudaError_t e = device::map_float_keys(keys, n, true, opt.stream);
  if (e != cudaSuccess) return e;
  e = sort_unsigned<U, V>(temp, temp_bytes, codes, values, n, opt);
  const cudaError_t back = device::map_float_keys(keys, n, false, opt.stream);
  return e != cudaSuccess ? e : back;
}

// bitonic, sample_sort and quicksort on keys that are not floats.
template <class K, class V>
cudaError_t sort_native(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                        std::uint64_t n, const options& opt) {
  const bool descending = opt.direction == order::descending;
  switch (opt.algo) {
    case algorithm::bitonic:
      if (!temp) {
        temp_bytes = 0;
        return cudaSuccess;
      }
      return device::bitonic_sort(keys, values, n, less<K>{}, descending, opt.stream);
    case algorithm::sample_sort:
      return sample_sort_any(temp, temp_bytes, keys, values, n, opt);
    case algorithm::quicksort:
      return device::quicksort(temp, temp_bytes, keys, values, n, descending, opt.stream);
    default:
      return cudaErrorInvalidValue;
  }
}

// What automatic runs for these arguments when its workspace fits (detail/automatic.hpp),
// and that workspace's bytes (0 for bitonic).
template <class K, class V>
cudaError_t automatic_plan(const K* keys, const V* values, std::uint64_t n, const options& opt,
                           algorithm& pick, std::size_t& bytes) {
  pick = automatic_choice({.n = n,
                           .key_bytes = sizeof(K),
                           .floating = std::is_floating_point_v<K>,
                           .values = !std::is_same_v<V, no_value>,
                           .cub_built = device::baseline_built<K, V>});
  bytes = 0;
  if constexpr (device::baseline_built<K, V>) {
    const bool descending = opt.direction == order::descending;
    K* k = const_cast<K*>(keys);
    V* v = const_cast<V*>(values);
    if (pick == algorithm::cub_merge)
      return device::cub_merge_sort(nullptr, bytes, k, v, n, descending, opt.stream);
    if (pick == algorithm::cub_radix) {
      const cudaError_t e = device::cub_radix_sort(nullptr, bytes, k, v, n, descending, opt.stream);
      if constexpr (std::is_floating_point_v<K>)
        bytes = std::max(bytes, device::radix_float_fixup_bytes<K, V>(n));
      return e;
    }
  }
  return cudaSuccess;
}

// Whether a workspace of `bytes` (> 0) fits in the device's free memory now.
inline bool fits_free_memory(std::size_t bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  const bool fits = bytes > 0 && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess &&
                    workspace_fits(bytes, free_bytes);
  cudaGetLastError();
  return fits;
}

template <class K, class V>
algorithm automatic_algorithm(std::uint64_t n, const options& opt) {
  if (!gpu_available()) return algorithm::bitonic;
  algorithm pick = algorithm::bitonic;
  std::size_t bytes = 0;
  if (automatic_plan<K, V>(nullptr, nullptr, n, opt, pick, bytes) != cudaSuccess) {
    cudaGetLastError();
    return algorithm::bitonic;
  }
  return fits_free_memory(bytes) ? pick : algorithm::bitonic;
}

// algorithm::automatic. The query asks for the workspace of the plan's sort if it fits in free
// device memory, else for 0 bytes; the sort then follows the bytes it is given, so a caller
// passing 0 bytes always gets the in-place bitonic sort.
template <class K, class V>
cudaError_t sort_automatic(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, const options& opt) {
  algorithm pick = algorithm::bitonic;
  std::size_t bytes = 0;
  cudaError_t e = automatic_plan(keys, values, n, opt, pick, bytes);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = fits_free_memory(bytes) ? bytes : 0;
    return cudaSuccess;
  }
  if constexpr (device::baseline_built<K, V>) {
    const bool descending = opt.direction == order::descending;
    if (pick == algorithm::cub_merge && temp_bytes >= bytes)
      return device::cub_merge_sort(temp, temp_bytes, keys, values, n, descending, opt.stream);
    if (pick == algorithm::cub_radix && temp_bytes >= bytes) {
      e = device::cub_radix_sort(temp, temp_bytes, keys, values, n, descending, opt.stream);
      if constexpr (std::is_floating_point_v<K>)
        if (e == cudaSuccess)
          e = device::fix_radix_float_order(keys, values, n, descending, temp, temp_bytes,
                                            opt.stream);
      return e;
    }
  }
  options in_place = opt;
  in_place.algo = algorithm::bitonic;
  std::size_t none = 0;
  if constexpr (std::is_floating_point_v<K>)
    return sort_float_codes(temp, none, keys, values, n, in_place);
  else
    return sort_native(temp, none, keys, values, n, in_place);
}

template <class K, class V>
cudaError_t sort_any(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                     const options& opt) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<V, no_value>)
    e = validate_device_array(values, n, sizeof(V), sizeof(V));
  if (e != cudaSuccess) return e;
  const bool descending = opt.direction == order::descending;
  if (opt.algo == algorithm::automatic)
    return sort_automatic(temp, temp_bytes, keys, values, n, opt);
  if (sorts_float_codes(opt.algo)) {
    if constexpr (std::is_floating_point_v<K>)
      return sort_float_codes(temp, temp_bytes, keys, values, n, opt);
    else
      return sort_native(temp, temp_bytes, keys, values, n, opt);
  }
  switch (opt.algo) {
    case algorithm::approx_refine:  // src/approx_<key>.cu; its interval sort maps floats
      return approx_refine<K, V>(temp, temp_bytes, keys, values, n, opt);
    case algorithm::adaptive_bitonic:  // stable; sorts (code, position) items of its own
      if (opt.comparison_count) {
        e = validate_device_array(opt.comparison_count, 1, sizeof(std::uint64_t),
                                  alignof(std::uint64_t));
        if (e != cudaSuccess) return e;
      }
      return device::adaptive_bitonic_sort(
          temp, temp_bytes, keys, values, n, descending, static_cast<int>(opt.block_bits),
          reinterpret_cast<unsigned long long*>(opt.comparison_count), opt.stream);
    case algorithm::cub_radix:
    case algorithm::cub_merge:
    case algorithm::thrust:
      if constexpr (device::baseline_built<K, V>) {
        if (opt.algo == algorithm::cub_radix)
          return device::cub_radix_sort(temp, temp_bytes, keys, values, n, descending, opt.stream);
        if (opt.algo == algorithm::cub_merge)
          return device::cub_merge_sort(temp, temp_bytes, keys, values, n, descending, opt.stream);
        return device::thrust_sort(temp, temp_bytes, keys, values, n, descending, opt.stream);
      }
      return cudaErrorNotSupported;
    default:
      break;
  }
  return cudaErrorInvalidValue;
}

template <class K>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                      const options& opt) {
  return sort_any<K, no_value>(temp, temp_bytes, keys, nullptr, n, opt);
}

template <class K, class P>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                       std::uint64_t n, const options& opt) {
  return sort_any<K, P>(temp, temp_bytes, keys, values, n, opt);
}

// The CPU backend: bitonic runs the GPU's schedule on host threads; the baselines, which
// have no CPU version, run std::stable_sort (they are stable too).
template <class K, class V>
void cpu_sort_any(K* keys, V* values, std::uint64_t n, const options& opt) {
  if (opt.algo == algorithm::automatic) {  // on the CPU, the in-place bitonic sort
    options in_place = opt;
    in_place.algo = algorithm::bitonic;
    return cpu_sort_any(keys, values, n, in_place);
  }
  const bool descending = opt.direction == order::descending;
  if constexpr (std::is_floating_point_v<K>) {
    // As on the device: codes, the unsigned sort, floats again (back on an exception too),
    // so that both backends give the same order.
    if (sorts_float_codes(opt.algo)) {
      using U = typename float_order<K>::U;
      U* codes = reinterpret_cast<U*>(keys);
      float_keys_to_codes(keys, n);
      try {
        if constexpr (std::is_same_v<V, no_value>)
          cpu_sort_keys<U>(codes, n, opt);
        else
          cpu_sort_pairs<U, V>(codes, values, n, opt);
      } catch (...) {
        codes_to_float_keys(keys, n);
        throw;
      }
      codes_to_float_keys(keys, n);
      return;
    }
  }
  if constexpr (!std::is_floating_point_v<K>) {  // floats took the codes' path above
    if (opt.algo == algorithm::bitonic) {
      cpu::bitonic_sort(keys, values, n, less<K>{}, descending);
      return;
    }
    if (opt.algo == algorithm::sample_sort) {
      cpu::sample_sort_config cfg;
      const int bits = network::bucket_bits_of(opt.buckets);
      if (bits < 0)
        throw_error(cudaErrorInvalidValue,
                    "gpusort::sort: options.buckets must be 0 or a power of two from 2 to 1024");
      if (bits > 0) cfg.max_bucket_bits = cfg.finish_bucket_bits = bits;
      cfg.random = opt.sampler == sampling::random;
      cpu::sample_sort(keys, values, n, network::directed<less<K>>{{}, descending}, cfg);
      return;
    }
    if (opt.algo == algorithm::quicksort) {
      cpu::quicksort(keys, values, n, descending);
      return;
    }
  }
  if (opt.algo == algorithm::adaptive_bitonic) {
    cpu::adaptive_bitonic_sort(keys, values, n, less<K>{}, descending, opt.comparison_count);
    return;
  }
  if (opt.algo == algorithm::approx_refine) {
    // The intervals (ascending or descending), then each interval sorted.
    std::vector<K> k(keys, keys + n);
    std::vector<V> v;
    if constexpr (!std::is_same_v<V, no_value>) v.assign(values, values + n);
    options approx = opt;
    if (approx.intervals == 0) {
      approx.intervals = network::exact_intervals(n, sizeof(K) + (values ? sizeof(V) : 0));
      approx.interval_splitters = splitters::sampled;
    }
    std::vector<std::uint64_t> offsets(approx_intervals(approx) + std::size_t{1});
    cpu_approx_sort(k.data(), keys, v.data(), values, n, offsets.data(), approx);
    const segment_list intervals{offsets.data(), offsets.data() + 1, offsets.size() - 1, 0, 8};
    cpu::segmented_sort(keys, values, n, intervals, less<K>{}, descending);
    return;
  }
  std::vector<std::uint64_t> index(n);
  for (std::uint64_t i = 0; i < n; ++i) index[i] = i;
  std::stable_sort(index.begin(), index.end(), [&](std::uint64_t a, std::uint64_t b) {
    return descending ? less<K>{}(keys[b], keys[a]) : less<K>{}(keys[a], keys[b]);
  });
  std::vector<K> k(n);
  for (std::uint64_t i = 0; i < n; ++i) k[i] = keys[index[i]];
  std::copy(k.begin(), k.end(), keys);
  if constexpr (!std::is_same_v<V, no_value>) {
    std::vector<V> v(n);
    for (std::uint64_t i = 0; i < n; ++i) v[i] = values[index[i]];
    std::copy(v.begin(), v.end(), values);
  }
}

template <class K>
void cpu_sort_keys(K* keys, std::uint64_t n, const options& opt) {
  cpu_sort_any<K, no_value>(keys, nullptr, n, opt);
}
template <class K, class P>
void cpu_sort_pairs(K* keys, P* values, std::uint64_t n, const options& opt) {
  cpu_sort_any(keys, values, n, opt);
}

}  // namespace gpusort::detail

#define GPUSORT_INSTANTIATE_PAIRS(K, P)                                                     \
  template cudaError_t gpusort::detail::sort_pairs<K, P>(void*, std::size_t&, K*, P*,       \
                                                         std::uint64_t, const options&);    \
  template gpusort::algorithm gpusort::detail::automatic_algorithm<K, P>(std::uint64_t,      \
                                                                      const options&);      \
  template void gpusort::detail::cpu_sort_pairs<K, P>(K*, P*, std::uint64_t, const options&);

// The unsigned sorts that a float TU calls (sort_float_codes) but must not build again: they
// are built once, in src/sort_u32.cu and src/sort_u64.cu.
#define GPUSORT_EXTERN_PAIRS(K, P)                                                             \
  extern template cudaError_t gpusort::detail::sort_pairs<K, P>(void*, std::size_t&, K*, P*,   \
                                                                std::uint64_t, const options&); \
  extern template void gpusort::detail::cpu_sort_pairs<K, P>(K*, P*, std::uint64_t,            \
                                                             const options&);
#define GPUSORT_EXTERN_KEY(K)                                                                  \
  extern template cudaError_t gpusort::detail::sort_keys<K>(void*, std::size_t&, K*,           \
                                                            std::uint64_t, const options&);    \
  extern template void gpusort::detail::cpu_sort_keys<K>(K*, std::uint64_t, const options&);   \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<4>)                                         \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<8>)                                         \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<16>)

#define GPUSORT_INSTANTIATE_KEY(K)                                                         \
  template cudaError_t gpusort::detail::sort_keys<K>(void*, std::size_t&, K*, std::uint64_t, \
                                                     const options&);                      \
  template gpusort::algorithm gpusort::detail::automatic_algorithm<K, gpusort::detail::no_value>( \
      std::uint64_t, const options&);                                                      \
  template void gpusort::detail::cpu_sort_keys<K>(K*, std::uint64_t, const options&);      \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<4>)                                \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<8>)                                \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<16>)
