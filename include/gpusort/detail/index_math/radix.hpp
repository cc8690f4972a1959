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
// the keys sorted by the top bits of their codes framed (below), fall into 2^bits buckets in
// order, each then sorted on its own.

// Leading zero bits of a word (64 for 0), in six steps on host and device.
GPUSORT_HD constexpr int leading_zero_bits(std::uint64_t x) {
  if (x == 0) return 64;
  int zeros = 0;
  for (int step = 32; step > 0; step /= 2)
    if ((x >> (64 - step)) == 0) zeros += step, x <<= step;
  return zeros;
}

// The frame: given the OR of every code XOR one of them (`differing`), the codes' common
// prefix shifted out, so that the highest bit where any two differ is bit 63 and the split's
// window is always the top `bits` bits, which CUB can be told before any key is read. The
// shift keeps the codes' order; 0 (nothing to do) where the top bit differs or none does.
GPUSORT_HD constexpr int msd_shift(std::uint64_t differing) {
  return differing == 0 ? 0 : leading_zero_bits(differing);
}
// The prefix every code shares above the differing bits, in place (any code gives it).
GPUSORT_HD constexpr std::uint64_t msd_prefix(std::uint64_t code, int shift) {
  return shift == 0 ? 0 : code & (~std::uint64_t{0} << (64 - shift));
}
GPUSORT_HD constexpr std::uint64_t to_frame(std::uint64_t code, int shift) {
  return code << shift;
}
GPUSORT_HD constexpr std::uint64_t from_frame(std::uint64_t framed, int shift,
                                              std::uint64_t prefix) {
  return shift == 0 ? framed : (framed >> shift) | prefix;
}
// The bucket of a framed code: its top `bits` bits (1 to 63).
GPUSORT_HD constexpr std::uint64_t framed_bucket(std::uint64_t framed, int bits) {
  return framed >> (64 - bits);
}
// The buckets the split's finish sorts by ranking each key against its bucket (a read of
// each key of it, cached): up to 64 keys, where that costs less than listing the bucket for
// the segmented sort. The split's window holds about 4-16 keys a bucket.
inline constexpr std::uint64_t msd_rank_max = 64;

// A key's place in its bucket [first, last) of the split (its code and position i given;
// code_at(j) the code at position j): the keys that come before it in the order asked, and
// the equal ones before it in the split, so that each position is taken once.
template <class CodeAt>
GPUSORT_HD constexpr std::uint64_t rank_in_bucket(std::uint64_t code, std::uint64_t i,
                                                  std::uint64_t first, std::uint64_t last,
                                                  bool descending, CodeAt code_at) {
  std::uint64_t rank = 0;
  for (std::uint64_t j = first; j < last; ++j) {
    const std::uint64_t c = code_at(j);
    rank += (descending ? c > code : c < code) || (c == code && j < i);
  }
  return rank;
}

// When automatic splits (options::msd_split, 8-byte integer keys): from 2^24
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

// The rescue of large buckets (docs/notes-radix-sort.md). A bucket the finish lists (its keys
// not all equal) of `long_min` keys or more, the segmented sort's long class, would go to
// that sort's passes over the whole array: one outlier far above the other keys puts them all
// in one bucket. Where the call may wait once (not under graph capture), such buckets are
// taken off the list and sorted together instead: their keys gathered in bucket order into the
// second key buffer, one radix sort of them on the bits below the codes' common prefix (the
// whole key orders the buckets too), and scattered back. The gathered keys, CUB's second
// buffer for them and the scan of the buckets' sizes (32-bit, at the buffer's end) must fit in
// the second buffer of n keys; where they do not, the whole array is radix-sorted instead.
GPUSORT_HD constexpr bool msd_rescues(std::uint64_t size, bool listed, std::uint64_t long_min) {
  return listed && size >= long_min;
}
// Where the sizes go in the second key buffer (n keys of key_bytes): each bucket's, then the
// total (4 bytes each, scanned in place), at the end, on a 256-byte boundary; 0 where they
// do not fit.
GPUSORT_HD constexpr std::uint64_t msd_rescue_sizes_at(std::uint64_t n, std::uint64_t key_bytes,
                                                       std::uint64_t buckets) {
  const std::uint64_t bytes = 4 * (buckets + 1), room = n * key_bytes;
  return bytes > room ? 0 : (room - bytes) / 256 * 256;
}
GPUSORT_HD constexpr bool msd_rescue_gathers(std::uint64_t rescued, std::uint64_t n,
                                             std::uint64_t key_bytes, std::uint64_t buckets) {
  return 2 * rescued * key_bytes <= msd_rescue_sizes_at(n, key_bytes, buckets);
}
// The bits the rescue's radix sort reads: those below the codes' common prefix.
GPUSORT_HD constexpr int msd_rescue_end_bit(int shift) { return 64 - shift; }

// The buckets' starts in the keys sorted by bucket, from their ends: in a table of
// buckets + 1 entries, zeroed, entry b + 1 is set to the position after bucket b's last key
// (by the thread of the position that ends its bucket); the table's running maximum is then
// every bucket's start (an empty bucket starts where the next key does) and entry `buckets`
// is n. One write a bucket, however the keys fall: no thread fills a run of empty buckets.
GPUSORT_HD constexpr bool ends_its_bucket(std::uint64_t i, std::uint64_t n, std::uint64_t bucket,
                                          std::uint64_t next_bucket) {
  return i + 1 == n || bucket != next_bucket;
}

}  // namespace gpusort::detail::index_math
