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
#include "gpusort/detail/device/nan_block.cuh"
#include "gpusort/detail/device/quicksort.cuh"
#include "gpusort/detail/device/radix_floats.cuh"
#include "gpusort/detail/device/sample_sort.cuh"
#include "gpusort/detail/device/tie_break.cuh"
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
  const bool low = nans_lowest(opt.direction, opt.nans);
  cudaError_t e = device::map_float_keys(keys, n, true, low, opt.stream);
  if (e != cudaSuccess) return e;
  e = sort_unsigned<U, V>(temp, temp_bytes, codes, values, n, opt);
  const cudaError_t back = device::map_float_keys(keys, n, false, low, opt.stream);
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
                           .cub_built = device::baseline_built<K, V>,
                           .stable = opt.stable});
  bytes = 0;
  if (pick == algorithm::adaptive_bitonic)
    return device::adaptive_bitonic_sort(nullptr, bytes, const_cast<K*>(keys),
                                         const_cast<V*>(values), n, false, 0, nullptr,
                                         opt.stream);
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
  const algorithm in_place = opt.stable && n >= 2 ? algorithm::adaptive_bitonic : algorithm::bitonic;
  if (!gpu_available()) return in_place;
  algorithm pick = in_place;
  std::size_t bytes = 0;
  if (automatic_plan<K, V>(nullptr, nullptr, n, opt, pick, bytes) != cudaSuccess) {
    cudaGetLastError();
    return in_place;
  }
  return fits_free_memory(bytes) || opt.stable ? pick : algorithm::bitonic;
}

// algorithm::automatic. The query asks for the workspace of the plan's sort if it fits in free
// device memory, else for 0 bytes; the sort then follows the bytes it is given, so a caller
// passing 0 bytes always gets the in-place bitonic sort. Stable: the plan's sort (a stable
// one) whatever the memory, or cudaErrorInvalidValue with fewer bytes than it needs.
template <class K, class V>
cudaError_t sort_automatic(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, const options& opt) {
  algorithm pick = algorithm::bitonic;
  std::size_t bytes = 0;
  cudaError_t e = automatic_plan(keys, values, n, opt, pick, bytes);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = fits_free_memory(bytes) || opt.stable ? bytes : 0;
    return cudaSuccess;
  }
  if (opt.stable && n >= 2) {
    if (temp_bytes < bytes) return cudaErrorInvalidValue;
    if (pick == algorithm::adaptive_bitonic)
      return device::adaptive_bitonic_sort(temp, temp_bytes, keys, values, n,
                                           opt.direction == order::descending, 0, nullptr,
                                           opt.stream);
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

// The algorithm itself, with float NaNs where it puts them (codes: as asked; the others: as
// the largest keys) and equal keys in the order it leaves them.
template <class K, class V>
cudaError_t sort_dispatch(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                          std::uint64_t n, const options& opt) {
  cudaError_t e = cudaSuccess;
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

// Whether an algorithm keeps equal keys in input order by itself (cub_radix: but for NaNs of
// different signs, which its fix-up regroups).
constexpr bool sorts_stably(algorithm a) { return traits_of(a).stable; }

// Float keys with their NaNs as the smallest keys, by an algorithm that puts them last: the
// sort with NaNs largest, then the NaN block moved to the other end (device/nan_block.cuh),
// through nan_move_bytes at the start of the workspace. automatic given fewer bytes than that
// sorts in place, where the codes put NaNs as asked.
template <class K, class V>
cudaError_t sort_moving_nans(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                             std::uint64_t n, const options& opt) {
  const bool descending = opt.direction == order::descending;
  const options largest = with_nans_largest(opt);
  if (!temp) {
    const cudaError_t e = sort_dispatch(temp, temp_bytes, keys, values, n, largest);
    temp_bytes += device::nan_move_bytes;
    return e;
  }
  if (temp_bytes < device::nan_move_bytes) {
    if (opt.algo == algorithm::automatic) return sort_dispatch(temp, temp_bytes, keys, values, n, opt);
    return cudaErrorInvalidValue;
  }
  std::size_t inner = temp_bytes - device::nan_move_bytes;
  const cudaError_t e = sort_dispatch(static_cast<char*>(temp) + device::nan_move_bytes, inner,
                                      keys, values, n, largest);
  if (e != cudaSuccess) return e;
  return device::move_nans_to_other_end(keys, values, n, descending, temp, opt.stream);
}

// The algorithm with NaNs where options::nans asks.
template <class K, class V>
cudaError_t sort_placing_nans(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                              std::uint64_t n, const options& opt) {
  if constexpr (std::is_floating_point_v<K>)
    if (nans_lowest(opt.direction, opt.nans) && !sorts_float_codes(opt.algo))
      return sort_moving_nans(temp, temp_bytes, keys, values, n, opt);
  return sort_dispatch(temp, temp_bytes, keys, values, n, opt);
}

template <class K, class V>
cudaError_t sort_checked(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                         std::uint64_t n, const options& opt);

// options::stable with an algorithm that is not stable (network/tie_break.hpp): positions
// sorted with the keys, composites of (run start, position), those sorted with the keys
// moving along, values gathered by position. Workspace: 4 + 8 (+ a value) bytes per key and
// the larger of the two sorts' own.
template <class K, class V>
cudaError_t sort_tie_break(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                           std::uint64_t n, const options& opt) {
  if (!network::tie_break_fits(n)) return cudaErrorNotSupported;
  using P4 = payload<4>;
  using PK = payload<sizeof(K)>;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  const std::size_t positions_bytes = align_workspace(4 * n),
                    composites_bytes = align_workspace(8 * n),
                    gather_bytes = has_values ? align_workspace(sizeof(V) * n) : 0;
  const std::size_t fixed = positions_bytes + composites_bytes + gather_bytes;
  options first = opt;
  first.stable = false;
  // The composites are all different, so any sort will do: the same algorithm, or where
  // thrust is not built for the keys as values, the sample sort.
  options second{.algo = opt.algo == algorithm::thrust ? algorithm::sample_sort : opt.algo,
                 .stream = opt.stream};
  second.sampler = opt.sampler;
  second.buckets = opt.buckets;
  second.intervals = opt.intervals;
  second.interval_splitters = opt.interval_splitters;
  char* base = static_cast<char*>(temp);
  auto* positions = reinterpret_cast<std::uint32_t*>(base);
  auto* composites = reinterpret_cast<std::uint64_t*>(base + positions_bytes);
  V* gathered = reinterpret_cast<V*>(base + positions_bytes + composites_bytes);
  std::size_t first_bytes = 0, second_bytes = 0;
  // The queries see pairs: non-null arrays of device memory (the keys, n * sizeof(K) >= 4n
  // bytes, where the float path checks them), never touched.
  cudaError_t e = sort_checked<K, P4>(nullptr, first_bytes, keys, reinterpret_cast<P4*>(keys), n,
                                      first);
  if (e == cudaSuccess)
    e = sort_checked<std::uint64_t, PK>(nullptr, second_bytes, reinterpret_cast<std::uint64_t*>(keys),
                                        reinterpret_cast<PK*>(keys), n, second);
  if (e != cudaSuccess) return e;
  const std::size_t own = std::max(first_bytes, second_bytes);
  if (!temp) {
    temp_bytes = fixed + own;
    return cudaSuccess;
  }
  if (temp_bytes < fixed + own) return cudaErrorInvalidValue;
  void* rest = own ? base + fixed : static_cast<void*>(base);  // non-null even when 0 bytes
  e = fill_indices(positions, n, opt.stream);
  if (e == cudaSuccess)
    e = sort_checked<K, P4>(rest, first_bytes, keys, reinterpret_cast<P4*>(positions), n, first);
  if (e == cudaSuccess)
    e = device::tie_composites(keys, positions, composites, n, opt.direction == order::descending,
                               nans_lowest(opt.direction, opt.nans), opt.stream);
  if (e == cudaSuccess)
    e = sort_checked<std::uint64_t, PK>(rest, second_bytes, composites,
                                        reinterpret_cast<PK*>(keys), n, second);
  if constexpr (has_values) {
    if (e == cudaSuccess) e = device::gather_by_composite(composites, values, gathered, n, opt.stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(values, gathered, sizeof(V) * n, cudaMemcpyDeviceToDevice, opt.stream);
  }
  return e;
}

// Everything but the argument checks: the core calls' body, and what the tie-break calls.
template <class K, class V>
cudaError_t sort_checked(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                         std::uint64_t n, const options& opt) {
  if (opt.stable && !sorts_stably(opt.algo) && opt.algo != algorithm::automatic && n >= 2)
    return sort_tie_break(temp, temp_bytes, keys, values, n, opt);
  return sort_placing_nans(temp, temp_bytes, keys, values, n, opt);
}

template <class K, class V>
cudaError_t sort_any(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                     const options& opt) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<V, no_value>)
    e = validate_device_array(values, n, sizeof(V), sizeof(V));
  if (e != cudaSuccess) return e;
  return sort_checked(temp, temp_bytes, keys, values, n, opt);
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

// The CPU backend's stable sort: positions sorted by std::stable_sort, then gathered.
template <class K, class V>
void cpu_index_stable_sort(K* keys, V* values, std::uint64_t n, bool descending) {
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

// Float keys sorted with NaNs largest: the NaN block rotated to the other end (as on the
// device, device/nan_block.cuh).
template <class K, class V>
void cpu_move_nans_to_other_end(K* keys, V* values, std::uint64_t n, bool descending) {
  const auto is_nan = [](K k) { return k != k; };
  const std::uint64_t numbers =
      descending ? static_cast<std::uint64_t>(std::partition_point(keys, keys + n, is_nan) - keys)
                 : static_cast<std::uint64_t>(
                       std::partition_point(keys, keys + n, [&](K k) { return !is_nan(k); }) - keys);
  // Descending: NaNs are [0, numbers) and move to the back; ascending: [numbers, n) to the front.
  std::rotate(keys, keys + numbers, keys + n);
  if constexpr (!std::is_same_v<V, no_value>) std::rotate(values, values + numbers, values + n);
}

// The CPU backend: bitonic runs the GPU's schedule on host threads; the baselines, which
// have no CPU version, run std::stable_sort (they are stable too), as does options::stable
// with an algorithm that is not.
template <class K, class V>
void cpu_sort_any(K* keys, V* values, std::uint64_t n, const options& opt) {
  const bool descending = opt.direction == order::descending;
  if (opt.algo == algorithm::automatic) {  // on the CPU, the in-place bitonic sort
    options in_place = opt;
    in_place.algo = opt.stable ? algorithm::cub_merge : algorithm::bitonic;
    return cpu_sort_any(keys, values, n, in_place);
  }
  if constexpr (std::is_floating_point_v<K>) {
    // As on the device: codes, the unsigned sort, floats again (back on an exception too),
    // so that both backends give the same order.
    if (sorts_float_codes(opt.algo) && !opt.stable) {
      using U = typename float_order<K>::U;
      U* codes = reinterpret_cast<U*>(keys);
      const bool low = nans_lowest(opt.direction, opt.nans);
      float_keys_to_codes(keys, n, low);
      try {
        if constexpr (std::is_same_v<V, no_value>)
          cpu_sort_keys<U>(codes, n, opt);
        else
          cpu_sort_pairs<U, V>(codes, values, n, opt);
      } catch (...) {
        codes_to_float_keys(keys, n, low);
        throw;
      }
      codes_to_float_keys(keys, n, low);
      return;
    }
    if (nans_lowest(opt.direction, opt.nans)) {
      cpu_sort_any(keys, values, n, with_nans_largest(opt));
      cpu_move_nans_to_other_end(keys, values, n, descending);
      return;
    }
  }
  if (opt.stable && !sorts_stably(opt.algo)) return cpu_index_stable_sort(keys, values, n, descending);
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
  cpu_index_stable_sort(keys, values, n, descending);
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
  template cudaError_t gpusort::detail::sort_checked<K, P>(void*, std::size_t&, K*, P*,     \
                                                           std::uint64_t, const options&);  \
  template gpusort::algorithm gpusort::detail::automatic_algorithm<K, P>(std::uint64_t,      \
                                                                      const options&);      \
  template void gpusort::detail::cpu_sort_pairs<K, P>(K*, P*, std::uint64_t, const options&);

// The unsigned sorts that a float TU calls (sort_float_codes) but must not build again: they
// are built once, in src/sort_u32.cu and src/sort_u64.cu.
#define GPUSORT_EXTERN_PAIRS(K, P)                                                             \
  extern template cudaError_t gpusort::detail::sort_pairs<K, P>(void*, std::size_t&, K*, P*,   \
                                                                std::uint64_t, const options&); \
  extern template cudaError_t gpusort::detail::sort_checked<K, P>(                             \
      void*, std::size_t&, K*, P*, std::uint64_t, const options&);                             \
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
