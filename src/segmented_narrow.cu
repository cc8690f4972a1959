// Narrow keys in segments (segmented.hpp, sort_segments_narrow): the unsigned segmented sort of
// the keys' width (src/segmented_u8.cu, src/segmented_u16.cu) on their codes, mapped as the
// size-class sort loads and stores them, or for CUB's sorts in place before and after. The map
// is a bijection of the bits, so keys outside every segment come back as they were.
#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/detail/device/float_order.cuh"
#include "segmented_impl.cuh"

GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint8_t)
GPUSORT_EXTERN_SEGMENTS_FOR_KEY(std::uint16_t)

namespace gpusort::detail {

// What the codes' unsigned sort finds in memory: the keys' own bits, mapped as it loads and
// stores them (key_codec).
template <class K>
constexpr key_bits stored_bits = std::is_same_v<K, __half>          ? key_bits::float_keys
                                 : std::is_same_v<K, __nv_bfloat16> ? key_bits::bfloat16_keys
                                 : std::is_signed_v<K>              ? key_bits::signed_keys
                                                                    : key_bits::unsigned_keys;

template <class K, class P>
cudaError_t sort_segments_narrow(void* temp, std::size_t& temp_bytes, K* keys, P* values,
                                 std::uint64_t n, const segment_list& segments,
                                 const options& opt, value_source source) {
  using order_t = narrow_order<K>;
  using B = typename order_t::U;
  B* codes = reinterpret_cast<B*>(keys);
  // The size-class sort maps the keys as it loads and stores them; CUB's sorts (stable,
  // cub_radix, cub_merge) need them mapped before and after.
  const bool size_classes =
      !opt.stable && (opt.algo == algorithm::automatic || opt.algo == algorithm::bitonic);
  const auto sort_codes = [&](key_bits stored) {
    return sort_segments<B, P>(temp, temp_bytes, codes, values, n, segments, opt, stored, source);
  };
  if (size_classes) return sort_codes(stored_bits<K>);
  if (order_t::identity || !temp || n == 0) return sort_codes(key_bits::unsigned_keys);
  // The arrays are checked before a key is mapped.
  cudaError_t e = validate_segment_arrays(keys, values, n, segments);
  if (e != cudaSuccess) return e;
  const bool low = nans_lowest(opt.direction, opt.nans);
  e = device::map_codes<order_t>(codes, n, true, low, opt.stream);
  if (e != cudaSuccess) return e;
  e = sort_codes(key_bits::unsigned_keys);
  // Back to keys even when the sort failed: the caller's bits, in whatever order they are.
  const cudaError_t back = device::map_codes<order_t>(codes, n, false, low, opt.stream);
  return e != cudaSuccess ? e : back;
}

template <class K, class P>
void cpu_sort_segments_narrow(K* keys, P* values, std::uint64_t n, const segment_list& segments,
                              const options& opt) {
  using order_t = narrow_order<K>;
  using B = typename order_t::U;
  B* codes = reinterpret_cast<B*>(keys);
  const bool low = nans_lowest(opt.direction, opt.nans);
  const auto map = [&](bool to_code) {
    if constexpr (!order_t::identity)
      for (std::uint64_t i = 0; i < n; ++i)
        codes[i] = to_code ? order_t::to_code(codes[i], low) : order_t::from_code(codes[i], low);
  };
  map(true);
  try {
    cpu_sort_segments<B, P>(codes, values, n, segments, opt);
  } catch (...) {
    map(false);
    throw;
  }
  map(false);
}

#define GPUSORT_INSTANTIATE_NARROW_SEGMENTS(K, P)                                               \
  template cudaError_t sort_segments_narrow<K, P>(void*, std::size_t&, K*, P*, std::uint64_t,   \
                                                  const segment_list&, const options&,          \
                                                  value_source);                                \
  template void cpu_sort_segments_narrow<K, P>(K*, P*, std::uint64_t, const segment_list&,      \
                                               const options&);
#define GPUSORT_INSTANTIATE_NARROW_SEGMENTS_KEY(K)          \
  GPUSORT_INSTANTIATE_NARROW_SEGMENTS(K, no_value)          \
  GPUSORT_INSTANTIATE_NARROW_SEGMENTS(K, payload<4>)        \
  GPUSORT_INSTANTIATE_NARROW_SEGMENTS(K, payload<8>)        \
  GPUSORT_INSTANTIATE_NARROW_SEGMENTS(K, payload<16>)
GPUSORT_FOR_EACH_NARROW_KEY(GPUSORT_INSTANTIATE_NARROW_SEGMENTS_KEY)
#undef GPUSORT_INSTANTIATE_NARROW_SEGMENTS_KEY
#undef GPUSORT_INSTANTIATE_NARROW_SEGMENTS

}  // namespace gpusort::detail
