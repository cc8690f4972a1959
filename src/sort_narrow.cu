// Narrow keys (detail/core/narrow_keys.hpp). automatic and cub_radix (values up to 8 bytes):
// CUB's radix sort at the keys' own width (one pass a byte: half the passes and bytes of u32
// keys), the 16-bit floats mapped in place to codes and back; workspace: CUB's double buffers
// and its own. bitonic (and automatic where CUB's workspace does not fit): the in-place
// network on the own-width codes, no workspace. Every other algorithm (and stable bitonic):
// through the u32 sorts of src/sort_u32.cu, the codes widened to 32 bits in the workspace
// ([codes, n x 4 bytes rounded up to 256 | the u32 sort's own]), sorted with the values, and
// mapped back into the keys.
#include <algorithm>
#include <vector>

#include "baselines.cuh"
#include "gpusort/detail/core/automatic.hpp"  // workspace_available
#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/detail/device/bitonic.cuh"
#include "gpusort/detail/device/float_order.cuh"

namespace gpusort::detail {

namespace {

constexpr int code_threads = 256;

template <class K>
__global__ void __launch_bounds__(code_threads)
    narrow_to_codes_kernel(const K* keys, std::uint32_t* codes, std::uint64_t n, bool nans_lowest) {
  using B = typename narrow_format<K>::bits_type;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{code_threads} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * code_threads)
    codes[i] = narrow_code<K>(bit_cast<B>(keys[i]), nans_lowest);
}

template <class K>
__global__ void __launch_bounds__(code_threads)
    narrow_from_codes_kernel(const std::uint32_t* codes, K* keys, std::uint64_t n, bool nans_lowest) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{code_threads} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * code_threads)
    keys[i] = bit_cast<K>(narrow_bits<K>(codes[i], nans_lowest));
}

unsigned code_blocks(std::uint64_t n) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((n + code_threads - 1) / code_threads, 1, 8192));
}

// The u32 sort of the codes, with or without values.
template <class P>
cudaError_t sort_codes(void* temp, std::size_t& temp_bytes, std::uint32_t* codes, P* values,
                       std::uint64_t n, const options& opt) {
  if constexpr (std::is_same_v<P, no_value>)
    return detail::sort_keys<std::uint32_t>(temp, temp_bytes, codes, n, opt);
  else
    return detail::sort_pairs<std::uint32_t, P>(temp, temp_bytes, codes, values, n, opt);
}

// CUB's radix sort at the keys' own width, for automatic and cub_radix: integers as they are
// (CUB orders signed ones as we do; bool as its byte), the 16-bit floats as their codes,
// mapped in place on the way in and out.
template <class K, class P>
cudaError_t radix_sort_narrow(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                              std::uint64_t n, const options& opt) {
  constexpr bool floating = float16_key<K>;
  using B = typename narrow_format<K>::bits_type;
  using R = std::conditional_t<floating || std::is_same_v<K, bool>, B, K>;
  R* radix_keys = reinterpret_cast<R*>(keys);
  const bool descending = opt.direction == order::descending;
  if (!floating || !temp || n == 0)
    return device::cub_radix_sort(temp, temp_bytes, radix_keys, values, n, descending, opt.stream);
  const bool low = nans_lowest(opt.direction, opt.nans);
  B* bits = reinterpret_cast<B*>(keys);
  cudaError_t e = device::map_codes<narrow_order<K>>(bits, n, true, low, opt.stream);
  if (e != cudaSuccess) return e;
  e = device::cub_radix_sort(temp, temp_bytes, radix_keys, values, n, descending, opt.stream);
  // Back to keys even when the sort failed: the caller's bits, in whatever order they are.
  const cudaError_t back = device::map_codes<narrow_order<K>>(bits, n, false, low, opt.stream);
  return e != cudaSuccess ? e : back;
}

// The in-place bitonic network on the keys' own-width codes (mapped in place, sorted, mapped
// back): no workspace.
template <class K, class P>
cudaError_t bitonic_sort_narrow(K* keys, P* values, std::uint64_t n, const options& opt) {
  using order_t = narrow_order<K>;
  using B = typename order_t::U;
  B* codes = reinterpret_cast<B*>(keys);
  const bool low = nans_lowest(opt.direction, opt.nans);
  const bool descending = opt.direction == order::descending;
  if constexpr (!order_t::identity) {
    const cudaError_t e = device::map_codes<order_t>(codes, n, true, low, opt.stream);
    if (e != cudaSuccess) return e;
  }
  const cudaError_t e = device::bitonic_sort(codes, values, n, less<B>{}, descending, opt.stream);
  if constexpr (!order_t::identity) {
    // Back to keys even when the sort failed: the caller's bits, in whatever order they are.
    const cudaError_t back = device::map_codes<order_t>(codes, n, false, low, opt.stream);
    return e != cudaSuccess ? e : back;
  }
  return e;
}

// automatic's pick for narrow keys, as the flat sort's plan picks for the others: CUB's radix
// sort where its workspace fits (at the query, in the device's free memory; at the sort, in
// the bytes given), else the in-place bitonic network; stable keeps the radix sort whatever
// the memory. Values over 8 bytes: the u32 codes' plan decides.
template <class K, class P>
algorithm narrow_pick(const void* temp, std::size_t temp_bytes, std::uint64_t n,
                      const options& opt) {
  std::size_t radix_bytes = 0;
  if (radix_sort_narrow<K, P>(nullptr, radix_bytes, nullptr, nullptr, n, opt) != cudaSuccess) {
    cudaGetLastError();
    return opt.stable ? algorithm::cub_radix : algorithm::bitonic;
  }
  if (opt.stable) return algorithm::cub_radix;
  return workspace_available(temp, temp_bytes, radix_bytes) ? algorithm::cub_radix
                                                            : algorithm::bitonic;
}

}  // namespace

template <class K, class P>
cudaError_t sort_narrow(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                        std::uint64_t n, const options& opt) {
  cudaError_t e = validate_device_array(keys, n, sizeof(K), alignof(K));
  if (e == cudaSuccess && !std::is_same_v<P, no_value>)
    e = validate_device_array(values, n, sizeof(P), sizeof(P));
  if (e != cudaSuccess) return e;
  algorithm algo = opt.algo;
  if constexpr (sizeof(P) <= 8) {
    if (algo == algorithm::automatic) algo = narrow_pick<K, P>(temp, temp_bytes, n, opt);
    if (algo == algorithm::cub_radix)
      return radix_sort_narrow(temp, temp_bytes, keys, values, n, opt);
  }
  if (algo == algorithm::bitonic && !opt.stable) {
    if (!temp) {
      temp_bytes = 0;
      return cudaSuccess;
    }
    return bitonic_sort_narrow(keys, values, n, opt);
  }
  const std::size_t code_bytes = align_workspace(sizeof(std::uint32_t) * n);
  std::size_t sort_bytes = 0;
  e = detail::sort_workspace_bytes<std::uint32_t, P>(n, opt, sort_bytes);
  if (e != cudaSuccess) return e;
  if (!temp) {
    temp_bytes = code_bytes + sort_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < code_bytes + sort_bytes) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  auto* codes = static_cast<std::uint32_t*>(temp);
  void* sort_temp = static_cast<char*>(temp) + code_bytes;
  const bool low = nans_lowest(opt.direction, opt.nans);
  narrow_to_codes_kernel<K><<<code_blocks(n), code_threads, 0, opt.stream>>>(keys, codes, n, low);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = sort_codes<P>(sort_temp, sort_bytes, codes, values, n, opt);
  if (e != cudaSuccess) return e;
  narrow_from_codes_kernel<K><<<code_blocks(n), code_threads, 0, opt.stream>>>(codes, keys, n, low);
  return cudaGetLastError();
}

template <class K, class P>
void cpu_sort_narrow(K* keys, P* values, std::uint64_t n, const options& opt) {
  using B = typename narrow_format<K>::bits_type;
  const bool low = nans_lowest(opt.direction, opt.nans);
  std::vector<std::uint32_t> codes(n);
  for (std::uint64_t i = 0; i < n; ++i) codes[i] = narrow_code<K>(bit_cast<B>(keys[i]), low);
  if constexpr (std::is_same_v<P, no_value>)
    detail::cpu_sort_keys<std::uint32_t>(codes.data(), n, opt);
  else
    detail::cpu_sort_pairs<std::uint32_t, P>(codes.data(), values, n, opt);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = bit_cast<K>(narrow_bits<K>(codes[i], low));
}

template <class K, class P>
algorithm narrow_automatic_algorithm(std::uint64_t n, const options& opt) {
  if constexpr (sizeof(P) > 8) {
    return detail::automatic_algorithm<std::uint32_t, P>(n, opt);
  } else {
    if (!gpu_available()) return detail::automatic_algorithm<std::uint32_t, P>(n, opt);
    return narrow_pick<K, P>(nullptr, 0, n, opt);
  }
}

#define GPUSORT_INSTANTIATE_NARROW(K, P)                                                      \
  template cudaError_t sort_narrow<K, P>(void*, std::size_t&, K*, P*, std::uint64_t,          \
                                         const options&);                                     \
  template void cpu_sort_narrow<K, P>(K*, P*, std::uint64_t, const options&);                 \
  template algorithm narrow_automatic_algorithm<K, P>(std::uint64_t, const options&);
#define GPUSORT_INSTANTIATE_NARROW_KEY(K)   \
  GPUSORT_INSTANTIATE_NARROW(K, no_value)   \
  GPUSORT_INSTANTIATE_NARROW(K, payload<4>) \
  GPUSORT_INSTANTIATE_NARROW(K, payload<8>) \
  GPUSORT_INSTANTIATE_NARROW(K, payload<16>)
GPUSORT_FOR_EACH_NARROW_KEY(GPUSORT_INSTANTIATE_NARROW_KEY)
#undef GPUSORT_INSTANTIATE_NARROW_KEY
#undef GPUSORT_INSTANTIATE_NARROW

}  // namespace gpusort::detail
