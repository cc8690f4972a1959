// Index math of the approximate sort (Xiao et al.: interval projection), shared by the device
// and CPU backends and tested on the CPU.
//
// Every key gets an interval index in [0, intervals), non-decreasing in the key's total order
// (key_traits.hpp), so that sorting by interval index alone leaves the keys approximately
// sorted: every key of interval i precedes every key of interval i + 1.
//  * linear: the paper's projection of [min, max] onto equal-width intervals. Integers are
//    projected on their exact distance from min; floats on their value, with min and max
//    taken over the finite keys: -inf goes to the first interval, +inf and NaN to the last.
//    min == max (or no finite key) puts every finite key in interval 0.
//  * sampled: intervals - 1 splitters taken from a sorted sample of the keys; a key goes to
//    the number of splitters below it. Keys are ordered by (key, position), so equal keys
//    spread over intervals by position and the intervals stay balanced on any input.
// Descending order mirrors the index: interval i becomes intervals - 1 - i.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "gpusort/detail/core/config.hpp"
#include "gpusort/detail/index_math/bitonic.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::index_math {

// The interval count when options::intervals is 0 (the paper's NUM_INTERVAL).
inline constexpr std::uint32_t default_intervals = 10000;
// Intervals whose per-tile counters fit in shared memory; more use global counters.
inline constexpr std::uint32_t shared_intervals_max = 1u << 14;
// Sampled mode: samples per interval, and the most intervals (the splitter tree lives in
// shared memory).
inline constexpr std::uint32_t samples_per_interval = 8;
inline constexpr std::uint32_t sampled_intervals_max = 1u << 14;

template <class K>
using ordered_t = typename key_traits<K>::ordered_type;

// The inverse of key_traits<K>::ordered for keys that are not NaN.
template <class K>
GPUSORT_HD constexpr K from_ordered(ordered_t<K> u) {
  using U = ordered_t<K>;
  constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_integral_v<K>) {
    return static_cast<K>(std::is_signed_v<K> ? u ^ sign : u);
  } else {
    return bit_cast<K>(static_cast<U>((u & sign) ? (u & ~sign) : ~u));
  }
}

// What the min/max reduction of the linear mode keeps per key: the key's ordered bits, or for
// a non-finite float a value that changes neither extreme (`low` for min, `high` for max).
template <class K>
GPUSORT_HD constexpr bool finite_key(K k) {
  if constexpr (std::is_integral_v<K>) {
    return true;
  } else {
    using U = ordered_t<K>;
    constexpr U exponent =
        static_cast<U>(std::is_same_v<K, float> ? 0x7f800000ull : 0x7ff0000000000000ull);
    return (bit_cast<U>(k) & exponent) != exponent;
  }
}

// The linear projection of [lo, hi] (ordered bits of the finite extremes) onto `intervals`.
template <class K>
struct linear_projection {
  using U = ordered_t<K>;
  U lo_bits = 0;
  double origin = 0;  // floats: lo / 2
  double scale = 0;   // intervals per unit of distance from lo
  std::uint32_t intervals = 1;

  // lo_bits > hi_bits means no finite key was seen.
  GPUSORT_HD static constexpr linear_projection make(U lo_bits, U hi_bits,
                                                    std::uint32_t intervals) {
    linear_projection p;
    p.intervals = intervals;
    p.lo_bits = lo_bits;
    if (lo_bits >= hi_bits) return p;  // scale 0: every finite key in interval 0
    if constexpr (std::is_integral_v<K>) {
      p.scale = intervals / (static_cast<double>(static_cast<U>(hi_bits - lo_bits)) + 1.0);
    } else {
      // Halves keep hi - lo finite for any finite pair.
      p.origin = static_cast<double>(from_ordered<K>(lo_bits)) * 0.5;
      const double width = static_cast<double>(from_ordered<K>(hi_bits)) * 0.5 - p.origin;
      p.scale = width > 0 ? intervals / width : 0.0;
    }
    return p;
  }

  // Non-decreasing in the key's total order: every operation below is monotone.
  GPUSORT_HD constexpr std::uint32_t operator()(K k) const {
    double x;
    if constexpr (std::is_integral_v<K>) {
      const U u = key_traits<K>::ordered(k);
      if (u <= lo_bits) return 0;
      x = static_cast<double>(static_cast<U>(u - lo_bits)) * scale;
    } else {
      if (!finite_key(k)) return key_traits<K>::ordered(k) >> (sizeof(U) * 8 - 1) ? intervals - 1 : 0;
      x = (static_cast<double>(k) * 0.5 - origin) * scale;
      if (!(x > 0)) return 0;
    }
    const double last = intervals - 1;
    return static_cast<std::uint32_t>(x < last ? x : last);
  }
};

// Intervals for top_k and approx_refine when options::intervals is 0 (with sampled
// splitters): about 4096 keys each (2048 for slots over 4 bytes), so that most fit one block
// of the segmented sort, up to the shared counters' limit.
GPUSORT_HD constexpr std::uint32_t exact_intervals(index_t n, int slot_bytes) {
  const index_t wanted = n / (slot_bytes <= 4 ? 4096 : 2048);
  return wanted < 1 ? 1 : wanted > shared_intervals_max ? shared_intervals_max
                                                         : static_cast<std::uint32_t>(wanted);
}

// Interval index in the requested direction.
GPUSORT_HD constexpr std::uint32_t directed_interval(std::uint32_t i, std::uint32_t intervals,
                                                    bool descending) {
  return descending ? intervals - 1 - i : i;
}

// ---- sampled splitters ------------------------------------------------------------------

// Sample j of `count` (stratified): a position in the j-th of `count` equal strata of [0, n),
// picked by a hash so that periodic inputs do not alias with the stride.
GPUSORT_HD constexpr index_t sample_position(index_t j, index_t count, index_t n) {
  const index_t begin = j * n / count, end = (j + 1) * n / count;
  index_t h = (j + 1) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return begin + (end > begin ? h % (end - begin) : 0);
}

GPUSORT_HD constexpr index_t sample_count(index_t n, std::uint32_t intervals) {
  const index_t wanted = index_t{intervals} * samples_per_interval;
  return n < wanted ? n : wanted;
}

// Splitters live in an implicit search tree (Eytzinger order, root at 1) of 2^levels - 1
// nodes, levels = ceil(log2 intervals); the splitter of rank r (1-based, of intervals - 1)
// sits at the node whose in-order number is r; missing ones are +infinity.
GPUSORT_HD constexpr int tree_levels(std::uint32_t intervals) {
  return ceil_log2(intervals);
}

// In-order number (1-based) of tree node `node` in a tree of `levels` levels.
GPUSORT_HD constexpr std::uint64_t in_order_rank(std::uint64_t node, int levels) {
  int depth = 0;
  while ((node >> (depth + 1)) != 0) ++depth;
  const int below = levels - 1 - depth;  // levels under the node
  const std::uint64_t first = node - (std::uint64_t{1} << depth);  // place within its level
  return (2 * first + 1) << below;
}

// Which sorted sample is splitter r (1-based): rank r * S / intervals of the S samples.
GPUSORT_HD constexpr index_t splitter_sample(std::uint64_t r, index_t samples,
                                             std::uint32_t intervals) {
  return r * samples / intervals;
}

// Which sorted samples become approx_sort's splitters: splitter r is sample
// splitter_sample(r).
struct splitter_plan {
  index_t samples = 0;
  std::uint32_t intervals = 1;
  GPUSORT_HD constexpr index_t sample_of(std::uint64_t r) const {
    return splitter_sample(r, samples, intervals);
  }
};

// Samples that top_k takes: one per 4096 keys, at least 4096 and at most 65536 (their sort
// costs tens of microseconds). The splitter then stands about 4096 (5 + 4 sqrt(t)) keys
// past the k-th key (t below), so fewer keys per sample means fewer candidates to sort.
inline constexpr index_t focus_samples_least = 4096, focus_samples_most = 65536;
constexpr index_t focus_sample_count(index_t n) {
  const index_t wanted = n >> 12;
  const index_t clamped = wanted < focus_samples_least   ? focus_samples_least
                          : wanted > focus_samples_most ? focus_samples_most
                                                         : wanted;
  return clamped < n ? clamped : n;
}

// The rank, among S sorted samples of n keys, of top_k's upper splitter for the k-th key
// (ascending): the expected sample rank t = k S / n, widened by four standard deviations
// (sqrt(t)) plus four, so that the k-th key lies below it with high probability.
inline index_t focused_upper_rank(index_t k, index_t n, index_t samples) {
  const double t = static_cast<double>(k) * static_cast<double>(samples) / static_cast<double>(n);
  const index_t hi = static_cast<index_t>(t + 4.0 + 4.0 * std::sqrt(t)) + 1;
  return hi < samples - 1 ? hi : samples - 1;
}

// top_k's splitter for the k-th of n keys (descending: the k-th largest): the rank, among S
// sorted samples, of the sample that bounds its candidates, focused_upper_rank (mirrored for
// descending order, whose k largest lie above rank S - t). If the k-th key lies past it, top_k
// falls back to an exact radix select, never to a wrong answer.
inline index_t splitter_rank(index_t k, index_t n, index_t samples, bool descending) {
  const index_t upper = focused_upper_rank(k, n, samples);
  return descending ? samples - 1 - upper : upper;
}

// How many candidates top_k makes room for: the keys before the upper splitter (rank hi)
// number about n (hi + 1) / S, give or take n sqrt(hi + 1) / S; room for five of those
// deviations more, at least k and at most n. The candidate sort is planned for this many
// keys, not for n; more (or fewer than k) and the radix select takes over.
inline index_t candidate_capacity(index_t k, index_t n, index_t samples) {
  if (samples == 0) return k;
  const double hi = static_cast<double>(focused_upper_rank(k, n, samples)) + 1.0;
  const double per_sample = static_cast<double>(n) / static_cast<double>(samples);
  const double room = per_sample * (hi + 5.0 * std::sqrt(hi) + 5.0);
  if (room >= static_cast<double>(n)) return n;
  const index_t capacity = static_cast<index_t>(room) + 1;
  return capacity < k ? k : capacity > n ? n : capacity;
}

// ---- radix select -------------------------------------------------------------------------

// One step of a radix select: of the keys counted per digit value, the digit whose bucket
// holds the rank-th key (1-based). With `before` the keys of the buckets below a bucket of
// `count` keys, whether it is that bucket: exactly one bucket is, for a rank from 1 to the
// total. The device asks it of every bucket at once, after a block scan of the counts.
GPUSORT_HD constexpr bool bucket_holds_rank(std::uint64_t before, std::uint64_t count,
                                            std::uint64_t rank) {
  return before < rank && rank <= before + count;
}

// The code that radix select orders keys by: the ordered bits (every NaN the same, as in
// less<K>), complemented for descending order, so that the k first keys have the k smallest
// codes.
template <class K>
GPUSORT_HD GPUSORT_FORCEINLINE constexpr ordered_t<K> select_code(K key, bool descending) {
  const ordered_t<K> code = key_traits<K>::ordered(key);
  return descending ? static_cast<ordered_t<K>>(~code) : code;
}

// top_k's candidates: the keys before its bound, in the order of their select codes and then
// of their positions (ascending: up to the bound's position; descending: after it): the keys
// up to the splitter (splitter_rank) in sorted order. The keys' own `<` against the bound's key decides
// nearly every key with no code map (a key strictly before or after it in that order is so in
// code order too); only keys equal to it (both zeros included) and NaNs, for which `<` says
// neither, need holds(). (For the rows' gather the same fast compare measured slower than the
// codes, most for 16-bit keys, whose `<` is a code map anyway: docs/performance.md.)
template <class K>
struct candidate_bound {
  using U = ordered_t<K>;
  K key;
  bool descending;
  U code;
  index_t pos;

  GPUSORT_HD static constexpr candidate_bound at(K key, index_t pos, bool descending) {
    return {key, descending, select_code(key, descending), pos};
  }
  // The key type's own `<` (a NaN is below nothing); other keys (the 16-bit floats' bits)
  // by their ordered bits, which decide all but equal keys.
  GPUSORT_HD GPUSORT_FORCEINLINE static constexpr bool below(K a, K b) {
    if constexpr (std::is_arithmetic_v<K>)
      return a < b;
    else
      return key_traits<K>::ordered(a) < key_traits<K>::ordered(b);
  }
  GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool surely_before(K k) const {
    return descending ? below(key, k) : below(k, key);
  }
  GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool surely_after(K k) const {
    return descending ? below(k, key) : below(key, k);
  }
  // The exact test: whether the key of code key_code at position i is a candidate.
  GPUSORT_HD GPUSORT_FORCEINLINE constexpr bool holds(U key_code, index_t i) const {
    return key_code < code || (key_code == code && (descending ? i > pos : i <= pos));
  }
};

// Descends the tree: `right_of(node)` says whether the key lies after that node's splitter.
// Returns the interval: how many splitters lie before the key.
template <class RightOf>
GPUSORT_HD GPUSORT_FORCEINLINE std::uint32_t descend(int levels, RightOf right_of) {
  std::uint32_t node = 1;
  for (int l = 0; l < levels; ++l) node = 2 * node + (right_of(node) ? 1u : 0u);
  return node - (1u << levels);
}

// ---- quality ----------------------------------------------------------------------------

// How far a key at position p is from the places where the exact sort may put it, [lo, hi).
GPUSORT_HD constexpr std::uint64_t distance_to(std::uint64_t p, std::uint64_t lo,
                                               std::uint64_t hi) {
  return p < lo ? lo - p : p >= hi ? p - (hi - 1) : 0;
}

}  // namespace gpusort::detail::index_math
