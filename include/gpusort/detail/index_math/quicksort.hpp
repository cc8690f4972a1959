// Index and pivot math of the GPU quicksort (Cederman & Tsigas), shared by the device
// kernels and the CPU backend, tested on the CPU.
//
// The sort runs in rounds. A round takes every sequence that is still too large for one
// block and partitions it three ways around its pivot (< pivot, == pivot, > pivot), many
// blocks per sequence, from the buffer that holds it into the other one. Keys are compared
// as their ordered bits (key_traits), so a pivot is a number: the first one is the median of
// the first, middle and last keys; every later one is the midpoint of the part's smallest
// and largest key, which the partition finds as it counts (the paper's choice). A midpoint
// halves the range of ordered bits that a part spans, so after at most `bits` midpoint
// rounds every part holds equal keys: max_rounds bounds the rounds whatever the input, and
// the device runs that many without asking the host (no synchronization).
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math::quicksort {

using index_t = std::uint64_t;

// Items a block sorts on chip to finish a part (the paper's phase two uses a bitonic sort in
// shared memory for the small sequences, too).
inline constexpr int finish_threads = 256;
inline constexpr int finish_items = 8;
inline constexpr index_t finish_size = index_t{finish_threads} * finish_items;
// Keys one block of a round partitions.
inline constexpr int partition_threads = 256;
inline constexpr int partition_items = 16;
inline constexpr index_t chunk_size = index_t{partition_threads} * partition_items;

// Rounds that suffice for keys of `key_bits` ordered bits: the first round (median of three)
// leaves parts spanning at most 2^bits - 1; each midpoint round halves that (floor), down to
// 0 after `bits` rounds; a part of equal keys left in the spare buffer takes one more round
// to move back.
GPUSORT_HD constexpr int max_rounds(int key_bits) { return key_bits + 2; }

template <class U>
GPUSORT_HD constexpr U median_of_three(U a, U b, U c) {
  const U lo = a < b ? a : b, hi = a < b ? b : a;
  return c < lo ? lo : (c > hi ? hi : c);
}

// The pivot of a part whose ordered keys lie in [lo, hi]: their midpoint, rounded down, so
// that hi > pivot whenever lo < hi (the part above the pivot is never the whole part).
template <class U>
GPUSORT_HD constexpr U midpoint(U lo, U hi) {
  return lo + (hi - lo) / 2;
}

// What becomes of one part (< pivot, == pivot or > pivot) of a partitioned sequence.
enum class fate : unsigned char {
  done,       // empty, or equal keys already in the keys buffer: in their final place
  finish,     // small enough for one block: sorted on chip into the keys buffer
  partition,  // partitioned again in the next round
};

// `uniform`: every key of the part is equal; `in_spare`: it lies in the spare buffer.
GPUSORT_HD constexpr fate part_fate(index_t size, bool uniform, bool in_spare) {
  if (size == 0 || (uniform && !in_spare)) return fate::done;
  return size <= finish_size ? fate::finish : fate::partition;
}

// Sequences to partition in one round: they are disjoint and each holds more than
// finish_size keys.
GPUSORT_HD constexpr index_t max_sequences(index_t n) { return n / (finish_size + 1) + 1; }
// Blocks of one round: a chunk per chunk_size keys of each sequence, rounded up.
GPUSORT_HD constexpr index_t max_chunks(index_t n) {
  return n / chunk_size + max_sequences(n);
}
// Parts finished after one round: at most three per sequence partitioned.
GPUSORT_HD constexpr index_t max_finishes(index_t n) { return 3 * max_sequences(n); }
GPUSORT_HD constexpr index_t chunks_of(index_t size) { return (size + chunk_size - 1) / chunk_size; }

// The next round's list grows by one 64-bit atomic add that reserves a sequence slot and its
// chunks at once, so that slots in list order have increasing first chunks (a block finds
// its sequence by binary search). Sequences in the high 24 bits, chunks in the low 40.
inline constexpr int chunk_bits = 40;
inline constexpr index_t max_keys = index_t{1} << chunk_bits;
GPUSORT_HD constexpr std::uint64_t reservation(index_t chunks) {
  return (std::uint64_t{1} << chunk_bits) + chunks;
}
GPUSORT_HD constexpr index_t reserved_sequences(std::uint64_t packed) { return packed >> chunk_bits; }
GPUSORT_HD constexpr index_t reserved_chunks(std::uint64_t packed) {
  return packed & ((std::uint64_t{1} << chunk_bits) - 1);
}

// Per-element ranks of a tile: the counts of keys below, equal to and above the pivot,
// packed 21 bits apart so that one prefix sum ranks all three classes (a tile holds fewer
// than 2^21 keys).
inline constexpr int class_bits = 21;
GPUSORT_HD constexpr std::uint64_t class_unit(int klass) {
  return std::uint64_t{1} << (class_bits * klass);
}
GPUSORT_HD constexpr index_t class_count(std::uint64_t packed, int klass) {
  return (packed >> (class_bits * klass)) & ((std::uint64_t{1} << class_bits) - 1);
}
// 0: below the pivot, 1: equal, 2: above.
template <class U>
GPUSORT_HD constexpr int class_of(U key, U pivot) {
  return key < pivot ? 0 : (key == pivot ? 1 : 2);
}

}  // namespace gpusort::detail::index_math::quicksort
