// automatic's radix sort: CUB's onesweep kernels under a policy chain of gpusort's own, in
// CUB's manner (one policy per compute capability, the device's nearest at or below it).
// Only the onesweep pass's block size and items per thread differ from CUB's, and only where
// a same-run sweep measured a gain (tools/bench/radix_tuning.cu, docs/performance.md, issue
// 77); every other policy, and every architecture without an entry, is CUB's own.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cub/device/dispatch/dispatch_radix_sort.cuh>

namespace gpusort::detail::device::radix {

// The onesweep pass's shape: block threads and CUB's nominal items per thread (4-byte units:
// 8-byte keys hold half as many), threads == 0 keeping CUB's; the digit bits (0: CUB's 8) and
// the store (tools/bench/radix_tuning.cu sweeps all four).
struct onesweep_shape {
  int threads = 0;
  int items = 0;
  int radix_bits = 0;
  cub::RadixSortStoreAlgorithm store = cub::RADIX_SORT_STORE_DIRECT;
};

// sm_90, one H200, each shape kept only where the library's automatic beat cub_radix in one
// run (83a204a, 2^24-2^28 uniform keys): 4-byte integer keys 512 x 22 (1.02-1.04x), float
// keys 512 x 21 (1.02-1.04x at 2^26 and up), unsigned and float 8-byte keys 256 x 40
// (1.04-1.11x). Signed 8-byte keys ran 0.93x at 256 x 40 and keep CUB's shape; so do pairs,
// which gain from the 32-bit count alone (u32 pairs 1.11-1.15x).
template <class K, class V>
constexpr onesweep_shape sm90_onesweep() {
  if constexpr (!std::is_same_v<V, cub::NullType>) return {};
  else if constexpr (sizeof(K) == 8 && std::is_signed_v<K> && !std::is_floating_point_v<K>)
    return {};
  else if constexpr (sizeof(K) == 8) return {256, 40};
  else if constexpr (sizeof(K) == 4 && std::is_floating_point_v<K>) return {512, 21};
  else if constexpr (sizeof(K) == 4) return {512, 22};
  else return {};
}

// CUB's policy `Cub` with its onesweep pass reshaped; the other members forwarded as they are.
template <class Cub, class K, class V, onesweep_shape Shape>
struct reshaped_onesweep {
  static constexpr bool ONESWEEP = Cub::ONESWEEP;
  static constexpr bool cub_bits = Shape.radix_bits == 0;
  static constexpr int ONESWEEP_RADIX_BITS = cub_bits ? int(Cub::ONESWEEP_RADIX_BITS) : Shape.radix_bits;
  using dominant = std::conditional_t<(sizeof(V) > sizeof(K)) && !std::is_same_v<V, cub::NullType>, V, K>;
  using OnesweepPolicy = std::conditional_t<
      Shape.threads == 0, typename Cub::OnesweepPolicy,
      cub::AgentRadixSortOnesweepPolicy<Shape.threads, Shape.items, dominant, 1,
                                        cub::RADIX_RANK_MATCH_EARLY_COUNTS_ANY,
                                        cub::BLOCK_SCAN_RAKING_MEMOIZE, Shape.store, ONESWEEP_RADIX_BITS>>;
  // The histogram and its scan count digits of the pass's width.
  using HistogramPolicy =
      std::conditional_t<cub_bits, typename Cub::HistogramPolicy,
                         cub::AgentRadixSortHistogramPolicy<128, 16, 1, K, ONESWEEP_RADIX_BITS>>;
  using ExclusiveSumPolicy =
      std::conditional_t<cub_bits, typename Cub::ExclusiveSumPolicy,
                         cub::AgentRadixSortExclusiveSumPolicy<256, ONESWEEP_RADIX_BITS>>;
  using ScanPolicy = typename Cub::ScanPolicy;
  using DownsweepPolicy = typename Cub::DownsweepPolicy;
  using AltDownsweepPolicy = typename Cub::AltDownsweepPolicy;
  using UpsweepPolicy = typename Cub::UpsweepPolicy;
  using AltUpsweepPolicy = typename Cub::AltUpsweepPolicy;
  using SingleTilePolicy = typename Cub::SingleTilePolicy;
  using SegmentedPolicy = typename Cub::SegmentedPolicy;
  using AltSegmentedPolicy = typename Cub::AltSegmentedPolicy;
};

// The chain: sm_100 and up CUB's own, sm_90 ours, below that CUB's chain from sm_80 down.
template <class K, class V, class Offset>
struct policy_hub {
  using cub_hub = cub::detail::radix::policy_hub<K, V, Offset>;
  struct Policy900 : cub::ChainedPolicy<900, Policy900, typename cub_hub::Policy800>,
                     reshaped_onesweep<typename cub_hub::Policy900, K, V, sm90_onesweep<K, V>()> {};
  struct Policy1000 : cub::ChainedPolicy<1000, Policy1000, Policy900>,
                      reshaped_onesweep<typename cub_hub::Policy1000, K, V, onesweep_shape{}> {};
  using MaxPolicy = Policy1000;
};

}  // namespace gpusort::detail::device::radix
