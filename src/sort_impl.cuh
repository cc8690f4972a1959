// The core layer's flat sort: the arguments checked, one plan made (sort_plan: the algorithm,
// how float keys reach it, NaN placement, the stable tie-break, the workspace layout), then
// run straight through. src/sort_<key>.cu instantiates it for one key type and every value
// size; the CPU backend's twin is at the end.
#pragma once

#include "gpusort/approx.hpp"
#include "gpusort/detail/core/automatic.hpp"
#include "gpusort/detail/cpu/adaptive_bitonic.hpp"
#include "gpusort/detail/cpu/approx.hpp"
#include "gpusort/detail/cpu/bitonic.hpp"
#include "gpusort/detail/cpu/quicksort.hpp"
#include "gpusort/detail/cpu/radix_sort.hpp"
#include "gpusort/detail/cpu/sample_sort.hpp"
#include "gpusort/detail/cpu/segmented.hpp"
#include "gpusort/detail/device/adaptive_bitonic.cuh"
#include "gpusort/detail/device/baselines.hpp"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/float_order.cuh"
#include "gpusort/detail/device/msd_split.cuh"
#include "gpusort/detail/device/nan_block.cuh"
#include "gpusort/detail/device/quicksort.cuh"
#include "gpusort/detail/device/radix_floats.cuh"
#include "gpusort/detail/device/sample_sort.cuh"
#include "gpusort/detail/device/tie_break.cuh"
#include "gpusort/sort.hpp"

namespace gpusort::detail {

// The buckets of the sorts that split (the sample sort's, automatic's MSD split's), by the
// segmented sort instantiated in src/segmented_<key>.cu.
template <class K, class V>
cudaError_t sort_buckets_as_segments(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                                     std::uint64_t n, const segment_list& segs, bool descending,
                                     cudaStream_t stream) {
  return sort_segments<K, V>(temp, temp_bytes, keys, values, n, segs,
                             {.direction = descending ? order::descending : order::ascending,
                              .stream = stream});
}

// The sample sort with the library's comparator.
template <class K, class V>
cudaError_t sample_sort_any(void* temp, std::size_t& temp_bytes, K* keys, V* values,
                            std::uint64_t n, const options& opt) {
  const int bits = index_math::bucket_bits_of(opt.buckets);
  if (bits < 0) return cudaErrorInvalidValue;
  const device::sample_sort_knobs knobs{bits, opt.sampler == sampling::random};
  return device::sample_sort(temp, temp_bytes, keys, values, n, less<K>{},
                             opt.direction == order::descending, knobs,
                             sort_buckets_as_segments<K, V>, opt.stream);
}

// Float keys reach the comparison sorts as their unsigned codes.
template <class K>
struct code_type {
  using type = K;
};
template <std::floating_point F>
struct code_type<F> {
  using type = typename float_order<F>::U;
};
template <class K>
using code_of = typename code_type<K>::type;

// One algorithm on keys it orders natively (float keys: NaNs largest), in CUB's convention:
// temp == nullptr asks for the bytes. Float keys never reach the comparison sorts here: they
// run on codes, through the unsigned instantiations (src/sort_u32.cu, src/sort_u64.cu).
template <class K, class V>
cudaError_t run_core(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                     const options& opt) {
  const bool descending = opt.direction == order::descending;
  switch (opt.algo) {
    case algorithm::bitonic:
    case algorithm::sample_sort:
    case algorithm::quicksort:
      if constexpr (!std::is_floating_point_v<K>) {
        if (opt.algo == algorithm::sample_sort)
          return sample_sort_any(temp, temp_bytes, keys, values, n, opt);
        if (opt.algo == algorithm::quicksort)
          return device::quicksort(temp, temp_bytes, keys, values, n, descending, opt.stream);
        if (!temp) {
          temp_bytes = 0;
          return cudaSuccess;
        }
        return device::bitonic_sort(keys, values, n, less<K>{}, descending, opt.stream);
      }
      return cudaErrorInvalidValue;
    case algorithm::approx_refine:  // src/approx_<key>.cu
      return approx_refine<K, V>(temp, temp_bytes, keys, values, n, opt);
    case algorithm::adaptive_bitonic:  // stable; sorts (code, position) items of its own
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
      return cudaErrorInvalidValue;
  }
}

// The comparison sorts that float keys run as codes (detail/core/float_order.hpp): not stable, so
// that NaNs coming out in code order is one of the orders allowed.
constexpr bool sorts_float_codes(algorithm a) {
  return a == algorithm::bitonic || a == algorithm::sample_sort || a == algorithm::quicksort;
}

// How keys reach a concrete algorithm, for both backends: float keys as codes (the comparison
// sorts), or sorted NaNs-largest with the NaN block moved to the other end after, where NaNs
// go before every number (the others).
struct key_steps {
  bool codes = false;      // float keys mapped in place to codes around the sort
  bool low_nans = false;   // float NaNs go before every number in the output
  bool move_nans = false;  // the NaN block moved to the other end after the sort
};
constexpr key_steps key_steps_of(algorithm a, bool floating, const options& opt) {
  key_steps s;
  s.codes = floating && sorts_float_codes(a);
  s.low_nans = floating && nans_lowest(opt.direction, opt.nans);
  s.move_nans = s.low_nans && !s.codes;
  return s;
}

// One call of the flat sort, decided once from the options, n and the workspace given,
// before a key moves; sort_flat then runs its steps straight through.
struct sort_plan {
  options core;    // what the sort runs: a concrete algorithm, not stable, float NaNs largest
  options second;  // the stable tie-break's sort of (run start, position) composites
  key_steps float_keys;           // as codes, or with the NaN block moved to the other end
  bool fix_radix_floats = false;  // automatic's radix sort: zeros and NaNs regrouped after
  bool own_radix = false;         // automatic's radix sort: gpusort's tuning (device::radix_sort)
  bool tie_break = false;         // options::stable by an algorithm that is not stable
  // The workspace: [positions | composites | gathered values] (tie-break), [NaN move], then
  // the sorts' own bytes.
  std::size_t composites_at = 0, gathered_at = 0, nan_move_at = 0, core_at = 0;
  std::size_t core_bytes = 0, total = 0;
};

// Whether a stream is being captured into a CUDA graph, where no call may wait. A stream the
// runtime cannot answer for (the legacy stream while another thread captures) counts as
// captured, and its error is cleared so that the next launch's check does not read it.
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess)
    return status != cudaStreamCaptureStatusNone;
  cudaGetLastError();
  return true;
}

// One algorithm as the plan runs it: automatic's pick of the radix sort is gpusort's tuning of
// CUB's (radix_policy.cuh), or the MSD split where the caller asks for it; an explicit
// cub_radix is CUB's own, the baseline.
template <class K, class V>
cudaError_t run_planned(bool own_radix, void* temp, std::size_t& temp_bytes, K* keys, V* values,
                        std::uint64_t n, const options& opt) {
  if constexpr (device::baseline_built<K, V>)
    if (own_radix && opt.algo == algorithm::cub_radix) {
      if constexpr (std::is_integral_v<K> && sizeof(K) == 8)
        if (opt.msd_split && index_math::msd_split_applies(n))
          return device::msd_split_sort(temp, temp_bytes, keys, values, n,
                                        index_math::msd_split_bits(n),
                                        opt.direction == order::descending,
                                        sort_buckets_as_segments<K, V>,
                                        temp == nullptr || !capturing(opt.stream), opt.stream);
      return device::radix_sort(temp, temp_bytes, keys, values, n,
                                opt.direction == order::descending, opt.stream);
    }
  return run_core(temp, temp_bytes, keys, values, n, opt);
}

// The plan for `opt.algo`, a concrete algorithm, which automatic picked or the caller named.
template <class K, class V>
cudaError_t lay_out(sort_plan& p, K* keys, V* values, std::uint64_t n, const options& opt,
                    bool automatic) {
  constexpr bool floating = std::is_floating_point_v<K>;
  using C = code_of<K>;
  using P4 = payload<4>;
  using PK = payload<sizeof(K)>;
  p.core = floating ? with_nans_largest(opt) : opt;
  p.core.stable = false;
  // The MSD split's buckets are not stable: values asked to be stable keep CUB's sort.
  if (opt.stable && !std::is_same_v<V, no_value>) p.core.msd_split = false;
  p.float_keys = key_steps_of(opt.algo, floating, opt);
  p.own_radix = automatic && opt.algo == algorithm::cub_radix;
  p.fix_radix_floats = p.own_radix && floating;
  p.tie_break = opt.stable && !traits_of(opt.algo).stable && n >= 2;
  // The queries see the caller's arrays (or, for the tie-break's, the keys), never touched,
  // as the type the sort runs on: a sort's workspace may differ between floats and their
  // codes (CUB's tuning, the adaptive sort's items).
  const auto query = [&]<class W>(std::size_t& out, W* with) {
    if (p.float_keys.codes)
      return run_core<C, W>(nullptr, out, reinterpret_cast<C*>(keys), with, n, p.core);
    return run_planned<K, W>(p.own_radix, nullptr, out, keys, with, n, p.core);
  };
  std::size_t at = 0, bytes = 0;
  cudaError_t e = cudaSuccess;
  if (p.tie_break) {
    if (!index_math::tie_break_fits(n)) return cudaErrorNotSupported;
    p.composites_at = align_workspace(4 * n);
    p.gathered_at = p.composites_at + align_workspace(8 * n);
    at = p.gathered_at + (std::is_same_v<V, no_value> ? 0 : align_workspace(sizeof(V) * n));
    // The composites are all different, so any sort will do: the same algorithm, or where
    // thrust is not built for the keys as values, the sample sort.
    p.second = {.algo = opt.algo == algorithm::thrust ? algorithm::sample_sort : opt.algo,
                .stream = opt.stream};
    p.second.sampler = opt.sampler;
    p.second.buckets = opt.buckets;
    p.second.intervals = opt.intervals;
    p.second.interval_splitters = opt.interval_splitters;
    std::size_t second_bytes = 0;
    e = query(bytes, reinterpret_cast<P4*>(keys));
    if (e == cudaSuccess)
      e = run_core<std::uint64_t, PK>(nullptr, second_bytes,
                                      reinterpret_cast<std::uint64_t*>(keys),
                                      reinterpret_cast<PK*>(keys), n, p.second);
    bytes = std::max(bytes, second_bytes);
  } else {
    e = query(bytes, values);
  }
  if constexpr (floating)
    if (p.fix_radix_floats) bytes = std::max(bytes, device::radix_float_fixup_bytes<K, V>(n));
  if (p.float_keys.move_nans) {
    p.nan_move_at = at;
    at += device::nan_move_bytes;
  }
  p.core_at = at;
  p.core_bytes = bytes;
  p.total = at + bytes;
  return e;
}

// The plan of a call. automatic (detail/core/automatic.hpp) takes its pick where the workspace
// fits: at the query, in the device's free memory; at the sort, in the bytes given. Else
// (with options::msd_split, first the radix sort without the split) the in-place bitonic
// sort, so that a caller passing fewer bytes still gets a sorted array; stable asks for the
// pick's workspace whatever the memory, and is refused fewer bytes.
template <class K, class V>
cudaError_t make_plan(sort_plan& p, const void* temp, std::size_t temp_bytes, K* keys, V* values,
                      std::uint64_t n, const options& opt) {
  if (opt.algo != algorithm::automatic) {
    if (opt.algo == algorithm::adaptive_bitonic && opt.comparison_count) {
      const cudaError_t e = validate_device_array(opt.comparison_count, 1, sizeof(std::uint64_t),
                                                  alignof(std::uint64_t));
      if (e != cudaSuccess) return e;
    }
    return lay_out(p, keys, values, n, opt, false);
  }
  const algorithm pick = automatic_choice({.n = n,
                                           .key_bytes = sizeof(K),
                                           .floating = std::is_floating_point_v<K>,
                                           .values = !std::is_same_v<V, no_value>,
                                           .cub_built = device::baseline_built<K, V>,
                                           .stable = opt.stable});
  options chosen = opt;
  chosen.algo = pick;
  chosen.block_bits = 0;
  chosen.comparison_count = nullptr;
  cudaError_t e = lay_out(p, keys, values, n, chosen, true);
  if (e != cudaSuccess || pick == algorithm::bitonic) return e;
  bool fits = workspace_available(temp, temp_bytes, p.total);
  if (!fits && p.core.msd_split) {  // the MSD split's buckets do not fit: the radix sort
    chosen.msd_split = false;
    e = lay_out(p, keys, values, n, chosen, true);
    if (e != cudaSuccess) return e;
    fits = workspace_available(temp, temp_bytes, p.total);
  }
  if (fits || (opt.stable && !temp)) return cudaSuccess;
  if (opt.stable && n >= 2) return cudaErrorInvalidValue;
  chosen.algo = algorithm::bitonic;
  return lay_out(p, keys, values, n, chosen, true);
}

// The sort itself, on the plan's keys and values, with the NaN placement and float fix-ups.
template <class K, class V>
cudaError_t run_sort_step(const sort_plan& p, char* base, K* keys, V* values, std::uint64_t n) {
  const options& opt = p.core;
  std::size_t bytes = p.core_bytes;
  void* temp = base + p.core_at;  // non-null even when the sort asks for nothing
  const bool descending = opt.direction == order::descending;
  if constexpr (std::is_floating_point_v<K>) {
    if (p.float_keys.codes) {
      // The keys are mapped back whatever the sort returns, so that an error leaves them as
      // they were (the sort checks its arguments before it moves a key).
      const bool low = p.float_keys.low_nans;
      cudaError_t e = device::map_float_keys(keys, n, true, low, opt.stream);
      if (e != cudaSuccess) return e;
      e = run_core(temp, bytes, reinterpret_cast<code_of<K>*>(keys), values, n, opt);
      const cudaError_t back = device::map_float_keys(keys, n, false, low, opt.stream);
      return e != cudaSuccess ? e : back;
    }
  }
  cudaError_t e = run_planned(p.own_radix, temp, bytes, keys, values, n, opt);
  if constexpr (std::is_floating_point_v<K>) {
    if (e == cudaSuccess && p.fix_radix_floats)
      e = device::fix_radix_float_order(keys, values, n, descending, temp, bytes, opt.stream);
    if (e == cudaSuccess && p.float_keys.move_nans)
      e = device::move_nans_to_other_end(keys, values, n, descending, base + p.nan_move_at,
                                         opt.stream);
  }
  return e;
}

// The stable tie-break (index_math/tie_break.hpp): positions sorted with the keys, composites of
// (run start, position), those sorted with the keys moving along, values gathered by position.
template <class K, class V>
cudaError_t run_tie_break(const sort_plan& p, char* base, K* keys, V* values, std::uint64_t n) {
  using PK = payload<sizeof(K)>;
  const cudaStream_t stream = p.core.stream;
  auto* positions = reinterpret_cast<std::uint32_t*>(base);
  auto* composites = reinterpret_cast<std::uint64_t*>(base + p.composites_at);
  std::size_t bytes = p.core_bytes;
  cudaError_t e = fill_indices(positions, n, stream);
  if (e == cudaSuccess)
    e = run_sort_step(p, base, keys, reinterpret_cast<payload<4>*>(positions), n);
  if (e == cudaSuccess)
    e = device::tie_composites(keys, positions, composites, n,
                               p.core.direction == order::descending, p.float_keys.low_nans,
                               stream);
  if (e == cudaSuccess)
    e = run_core(base + p.core_at, bytes, composites, reinterpret_cast<PK*>(keys), n, p.second);
  if constexpr (!std::is_same_v<V, no_value>) {
    V* gathered = reinterpret_cast<V*>(base + p.gathered_at);
    if (e == cudaSuccess) e = device::gather_by_composite(composites, values, gathered, n, stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(values, gathered, sizeof(V) * n, cudaMemcpyDeviceToDevice, stream);
  }
  return e;
}

// The flat sort: the arguments checked, the plan made, then the query answered or the plan run.
template <class K, class V>
cudaError_t sort_flat(void* temp, std::size_t& temp_bytes, K* keys, V* values, std::uint64_t n,
                      const options& opt) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<V, no_value>)
    e = validate_device_array(values, n, sizeof(V), sizeof(V));
  sort_plan p;
  if (e == cudaSuccess) e = make_plan(p, temp, temp_bytes, keys, values, n, opt);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = p.total;
    return cudaSuccess;
  }
  if (temp_bytes < p.total) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(temp);
  return p.tie_break ? run_tie_break(p, base, keys, values, n)
                     : run_sort_step(p, base, keys, values, n);
}

template <class K, class V>
algorithm automatic_algorithm(std::uint64_t n, const options& opt) {
  const algorithm in_place = opt.stable && n >= 2 ? algorithm::adaptive_bitonic : algorithm::bitonic;
  if (!gpu_available()) return in_place;
  options automatic = opt;
  automatic.algo = algorithm::automatic;
  sort_plan p;
  if (make_plan<K, V>(p, nullptr, 0, nullptr, nullptr, n, automatic) != cudaSuccess) {
    cudaGetLastError();
    return in_place;
  }
  return p.core.algo;
}

template <class K, class V>
cudaError_t sort_workspace_bytes(std::uint64_t n, const options& opt, std::size_t& bytes) {
  sort_plan p;
  const cudaError_t e = make_plan<K, V>(p, nullptr, 0, nullptr, nullptr, n, opt);
  if (e == cudaSuccess) bytes = p.total;
  return e;
}

template <class K>
cudaError_t sort_keys(void* temp, std::size_t& temp_bytes, K* keys, std::uint64_t n,
                      const options& opt) {
  return sort_flat<K, no_value>(temp, temp_bytes, keys, nullptr, n, opt);
}

template <class K, class P>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                       std::uint64_t n, const options& opt) {
  return sort_flat(temp, temp_bytes, keys, values, n, opt);
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

// One algorithm on the CPU, on keys it orders natively (float keys: NaNs largest). The
// baselines, which have no CPU version, run std::stable_sort (they are stable too); float
// keys reach the comparison sorts as codes only, through the unsigned instantiations.
template <class K, class V>
void cpu_run_core(K* keys, V* values, std::uint64_t n, const options& opt) {
  const bool descending = opt.direction == order::descending;
  switch (opt.algo) {
    case algorithm::bitonic:
    case algorithm::sample_sort:
    case algorithm::quicksort:
      if constexpr (!std::is_floating_point_v<K>) {
        if (opt.algo == algorithm::bitonic) {
          cpu::bitonic_sort(keys, values, n, less<K>{}, descending);
          return;
        }
        if (opt.algo == algorithm::quicksort) {
          cpu::quicksort(keys, values, n, descending);  // the rounds it took: for its tests
          return;
        }
        cpu::sample_sort_config cfg;
        const int bits = index_math::bucket_bits_of(opt.buckets);
        if (bits < 0)
          throw_error(cudaErrorInvalidValue,
                      "gpusort::sort: options.buckets must be 0 or a power of two from 2 to 1024");
        if (bits > 0) cfg.max_bucket_bits = cfg.finish_bucket_bits = bits;
        cfg.random = opt.sampler == sampling::random;
        cpu::sample_sort(keys, values, n, index_math::directed<less<K>>{{}, descending}, cfg);
        return;
      }
      break;
    case algorithm::adaptive_bitonic:
      cpu::adaptive_bitonic_sort(keys, values, n, less<K>{}, descending, opt.comparison_count);
      return;
    case algorithm::cub_radix:
      cpu::radix_sort(keys, values, n, descending);
      return;
    case algorithm::approx_refine: {
      // The intervals (ascending or descending), then each interval sorted.
      std::vector<K> k(keys, keys + n);
      std::vector<V> v;
      if constexpr (!std::is_same_v<V, no_value>) v.assign(values, values + n);
      options approx = opt;
      if (approx.intervals == 0) {
        approx.intervals = index_math::exact_intervals(n, sizeof(K) + (values ? sizeof(V) : 0));
        approx.interval_splitters = splitters::sampled;
      }
      std::vector<std::uint64_t> offsets(approx_intervals(approx) + std::size_t{1});
      cpu_approx_sort(k.data(), keys, v.data(), values, n, offsets.data(), approx);
      const segment_list intervals{offsets.data(), offsets.data() + 1, offsets.size() - 1, 0, 8};
      cpu::segmented_sort(keys, values, n, intervals, less<K>{}, descending);
      return;
    }
    default:
      break;
  }
  cpu_index_stable_sort(keys, values, n, descending);
}

// The CPU backend, the device's plan: automatic is the radix sort, as on the device (stable,
// on all cores, with a second buffer of the keys and values where the device takes CUB's
// workspace), options::stable by an algorithm that is not is std::stable_sort of positions
// (the tie-break's result), float keys as the device takes them (key_steps_of), so that both
// backends give the same order.
template <class K, class V>
void cpu_sort_any(K* keys, V* values, std::uint64_t n, const options& opt) {
  constexpr bool floating = std::is_floating_point_v<K>;
  options core = floating ? with_nans_largest(opt) : opt;
  if (core.algo == algorithm::automatic) core.algo = algorithm::cub_radix;
  const bool tie_break = opt.stable && !traits_of(core.algo).stable;
  // The tie-break sorts the floats themselves (NaNs largest), so no codes there.
  const key_steps steps = key_steps_of(tie_break ? algorithm::cub_merge : core.algo, floating, opt);
  const bool descending = opt.direction == order::descending;
  if constexpr (floating) {
    if (steps.codes) {
      // Codes, the unsigned sort, floats again (back on an exception too).
      using U = code_of<K>;
      float_keys_to_codes(keys, n, steps.low_nans);
      try {
        cpu_run_core(reinterpret_cast<U*>(keys), values, n, core);
      } catch (...) {
        codes_to_float_keys(keys, n, steps.low_nans);
        throw;
      }
      codes_to_float_keys(keys, n, steps.low_nans);
      return;
    }
  }
  if (tie_break)
    cpu_index_stable_sort(keys, values, n, descending);
  else
    cpu_run_core(keys, values, n, core);
  if (steps.move_nans) cpu_move_nans_to_other_end(keys, values, n, descending);
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

#define GPUSORT_INSTANTIATE_PAIRS(K, P)                                                      \
  template cudaError_t gpusort::detail::sort_pairs<K, P>(void*, std::size_t&, K*, P*,        \
                                                         std::uint64_t, const options&);     \
  template cudaError_t gpusort::detail::run_core<K, P>(void*, std::size_t&, K*, P*,          \
                                                       std::uint64_t, const options&);       \
  template gpusort::algorithm gpusort::detail::automatic_algorithm<K, P>(std::uint64_t,       \
                                                                      const options&);       \
  template void gpusort::detail::cpu_sort_pairs<K, P>(K*, P*, std::uint64_t, const options&); \
  template void gpusort::detail::cpu_run_core<K, P>(K*, P*, std::uint64_t, const options&);   \
  template cudaError_t gpusort::detail::sort_workspace_bytes<K, P>(std::uint64_t, const options&, \
                                                                   std::size_t&);

#define GPUSORT_INSTANTIATE_KEY(K)                                                           \
  template cudaError_t gpusort::detail::sort_keys<K>(void*, std::size_t&, K*, std::uint64_t,   \
                                                     const options&);                        \
  template cudaError_t gpusort::detail::run_core<K, gpusort::detail::no_value>(                \
      void*, std::size_t&, K*, gpusort::detail::no_value*, std::uint64_t, const options&);     \
  template gpusort::algorithm gpusort::detail::automatic_algorithm<K, gpusort::detail::no_value>( \
      std::uint64_t, const options&);                                                        \
  template void gpusort::detail::cpu_sort_keys<K>(K*, std::uint64_t, const options&);        \
  template void gpusort::detail::cpu_run_core<K, gpusort::detail::no_value>(                   \
      K*, gpusort::detail::no_value*, std::uint64_t, const options&);                          \
  template cudaError_t gpusort::detail::sort_workspace_bytes<K, gpusort::detail::no_value>(    \
      std::uint64_t, const options&, std::size_t&);                                            \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<4>)                                  \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<8>)                                  \
  GPUSORT_INSTANTIATE_PAIRS(K, gpusort::detail::payload<16>)

// The unsigned sorts that another key type's TU runs (float codes, the tie-break's
// composites) but must not build again: they are built once, in src/sort_u32.cu and
// src/sort_u64.cu.
#define GPUSORT_EXTERN_PAIRS(K, P)                                                           \
  extern template cudaError_t gpusort::detail::run_core<K, P>(void*, std::size_t&, K*, P*,   \
                                                              std::uint64_t, const options&); \
  extern template void gpusort::detail::cpu_run_core<K, P>(K*, P*, std::uint64_t,            \
                                                           const options&);
#define GPUSORT_EXTERN_KEY(K)                                                                \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::no_value)                                         \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<4>)                                       \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<8>)                                       \
  GPUSORT_EXTERN_PAIRS(K, gpusort::detail::payload<16>)
