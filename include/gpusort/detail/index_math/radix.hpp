// Index math of an LSD radix sort over keys' ordered bits (key_traits<K>::ordered: unsigned
// integers whose order is the keys' total order): how many digit passes a key width takes,
// and each key's digit in a pass, least significant first. Descending order sorts the
// complemented bits, which keeps equal keys in input order (the sort stays stable).
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// Passes of digit_bits each over a U (the last one may hold fewer bits).
template <class U>
GPUSORT_HD constexpr int radix_passes(int digit_bits) {
  return (static_cast<int>(sizeof(U)) * 8 + digit_bits - 1) / digit_bits;
}

// The digit of `ordered` in pass `pass` (0: the least significant digit_bits bits).
template <class U>
GPUSORT_HD constexpr unsigned radix_digit(U ordered, int pass, int digit_bits, bool descending) {
  const U bits = descending ? static_cast<U>(~ordered) : ordered;
  const std::uint64_t wide = static_cast<std::uint64_t>(bits) >> (pass * digit_bits);
  return static_cast<unsigned>(wide & ((std::uint64_t{1} << digit_bits) - 1));
}

// A most-significant-digit split (issue 77's hybrid for 8-byte keys, docs/notes-radix-sort.md):
// the keys sorted by the bits [low_bit, low_bit + bits) of their ordered codes, every key
// sharing the bits above, fall into 2^bits buckets in order, each then sorted on its own.

// The window of `bits` bits under the highest bit where any two codes differ, given the OR
// of every code XOR one of them (`differing`): its lowest bit (0 when the differing bits fit
// in `bits`), and how wide it is (0 when every code is the same).
struct msd_window {
  int low_bit = 0, bits = 0;
};
GPUSORT_HD constexpr msd_window msd_window_for(std::uint64_t differing, int bits) {
  int top = 0;  // bits up to the highest differing one
  while (top < 64 && (differing >> top) != 0) ++top;
  return top > bits ? msd_window{top - bits, bits} : msd_window{0, top};
}

// The bucket of an ordered code in the window.
GPUSORT_HD constexpr std::uint64_t msd_bucket(std::uint64_t ordered, msd_window w) {
  return w.bits == 0 ? 0 : (ordered >> w.low_bit) & ((std::uint64_t{1} << w.bits) - 1);
}

// When automatic splits (options::wait_for_key_bits, 8-byte integer keys): from 2^24
// keys up to CUB's 32-bit count. The window is log2(n) - 2 bits, 16 to 24: about 4 keys a
// bucket, 16 where 24 bits cap it. On one H200 (1ccc890; u64, i64 and u64 + u32, uniform)
// 2^24 keys split best at 22 bits (1.29-1.31x CUB's radix sort; 20 bits 1.22-1.25x), 2^26
// at 24 (1.30-1.34x; 22 bits 1.24-1.26x), 2^28 at 24 (1.22-1.26x; 20 bits, 256 keys a
// bucket, 0.78-0.93x).
GPUSORT_HD constexpr bool msd_split_applies(std::uint64_t n) {
  return n >= (std::uint64_t{1} << 24) && n < (std::uint64_t{1} << 32);
}
GPUSORT_HD constexpr int msd_split_bits(std::uint64_t n) {
  int log2 = 0;  // floor(log2(n))
  while (log2 < 63 && (n >> (log2 + 1)) != 0) ++log2;
  return log2 - 2 < 16 ? 16 : (log2 - 2 > 24 ? 24 : log2 - 2);
}

// The buckets whose first position is i, in the keys sorted by bucket (bucket(i - 1) and
// bucket(i) given; i = 0 has none before it): [first, last). Empty buckets start where the
// next key does.
struct bucket_range {
  std::uint64_t first = 0, last = 0;
};
GPUSORT_HD constexpr bucket_range buckets_starting_at(std::uint64_t i, std::uint64_t previous,
                                                       std::uint64_t bucket) {
  return i == 0 ? bucket_range{0, bucket + 1} : bucket_range{previous + 1, bucket + 1};
}

// The buckets after the last key's, and the list's end (bucket `buckets`): they start at n.
// With buckets_starting_at of every position, each of the buckets + 1 starts is written
// exactly once.
GPUSORT_HD constexpr bucket_range buckets_after_last(std::uint64_t last_bucket,
                                                      std::uint64_t buckets) {
  return {last_bucket + 1, buckets + 1};
}

}  // namespace gpusort::detail::index_math
