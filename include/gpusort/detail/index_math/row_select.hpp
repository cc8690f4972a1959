// Index math of top-k by rows with a radix select per row (device/row_select.cuh), tested on
// the CPU. A row's k-th code is found a digit of up to row_digit_bits bits at a time from the
// top; several blocks share a row when rows are too few to fill the GPU.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::index_math {

// 2^11 counters per digit: 8 KB of shared memory per block, and three passes for 32-bit
// codes (two for 16-bit, six for 64-bit).
inline constexpr int row_digit_bits = 11;
inline constexpr std::uint32_t row_digit_buckets = 1u << row_digit_bits;

// The most k the per-row select takes (its candidates are sorted by one block), the least
// row it is worth its passes for, and the fewest keys a block of it reads.
inline constexpr std::uint64_t row_select_most_k = 2048;
inline constexpr std::uint64_t row_select_least_row = 2048;
inline constexpr std::uint64_t row_select_least_block_keys = 4096;

// Bits [shift, shift + bits) of a `width`-bit code: digit `pass`, counted from the top.
struct digit_window {
  int shift;
  int bits;
};
GPUSORT_HD constexpr int row_select_passes(int width) {
  return (width + row_digit_bits - 1) / row_digit_bits;
}
GPUSORT_HD constexpr digit_window row_select_digit(int width, int pass) {
  const int top = width - pass * row_digit_bits;
  const int shift = top > row_digit_bits ? top - row_digit_bits : 0;
  return {shift, top - shift};
}

// Blocks per row: about `want_blocks` over the whole matrix, no more than one per
// row_select_least_block_keys keys of the row (so a block reads at least half that many; a
// row shorter than that has one).
GPUSORT_HD constexpr std::uint64_t row_select_blocks(std::uint64_t rows, std::uint64_t row_length,
                                                     std::uint64_t want_blocks) {
  const std::uint64_t most = (row_length + row_select_least_block_keys - 1) / row_select_least_block_keys;
  const std::uint64_t wanted = rows >= want_blocks ? 1 : (want_blocks + rows - 1) / rows;
  const std::uint64_t blocks = wanted < most ? wanted : most;
  return blocks ? blocks : 1;
}

// Threads of the block that finishes a row (the sampled path's last kernel), and the keys
// each holds in its sort of the row's k: 1, 2 or 4, the fewest that hold k.
inline constexpr int row_finish_threads = 512;
GPUSORT_HD constexpr int row_finish_items(std::uint64_t k) {
  return k <= row_finish_threads ? 1 : k <= 2 * row_finish_threads ? 2 : 4;
}

// Whether top-k of rows goes to the per-row select: k up to what one block sorts, rows long
// enough to pay for its passes, and columns that fit 32 bits.
GPUSORT_HD constexpr bool row_select_fits(std::uint64_t row_length, std::uint64_t k) {
  return k <= row_select_most_k && row_length >= row_select_least_row &&
         row_length < (std::uint64_t{1} << 32);
}
static_assert(row_finish_items(row_select_most_k) * row_finish_threads >= row_select_most_k);

// ---- the sampled threshold: one pass over the keys instead of a pass per digit ----------
// A block takes row_samples evenly spaced keys of its row and finds the sample_rank-th
// smallest of their codes: the threshold. One pass gathers the columns of every key whose
// code is at most that (a candidate), and one block per row selects the k first among them.
// The rank is chosen so that fewer than k candidates is a 4-sigma event; where the expected
// candidates would not fit candidate_capacity, the radix passes above run instead, and they
// also run for any row whose candidates turn out fewer than k or too many.
inline constexpr std::uint32_t row_samples = 2048;

// Integer square root (floor), constexpr.
GPUSORT_HD constexpr std::uint64_t isqrt(std::uint64_t x) {
  std::uint64_t r = 0, bit = std::uint64_t{1} << 62;
  while (bit > x) bit >>= 2;
  while (bit) {
    if (x >= r + bit) {
      x -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

// The rank (1-based) of the threshold among the samples: mu + 4 sqrt(mu) + 4, mu = k S / n
// the samples expected among the k first keys; row_samples + 1 when it would be past them.
GPUSORT_HD constexpr std::uint32_t sample_rank(std::uint64_t k, std::uint64_t row_length) {
  if (row_length == 0) return row_samples + 1;
  const std::uint64_t mu = (k * row_samples + row_length - 1) / row_length;  // rounded up
  const std::uint64_t rank = mu + 4 * (isqrt(mu) + 1) + 4;
  return rank > row_samples ? row_samples + 1 : static_cast<std::uint32_t>(rank);
}

// The candidates a row expects: the keys per sample times the samples at or below the
// threshold.
GPUSORT_HD constexpr std::uint64_t expected_candidates(std::uint64_t k, std::uint64_t row_length) {
  return (sample_rank(k, row_length) + std::uint64_t{1}) * row_length / row_samples;
}

// Whether the sampled threshold is tried: rows of at least 4 samples' spacing apart, a rank
// within the samples, and the expected candidates at most three quarters of `capacity` (the
// count's spread is about its square root, so overflowing is a 3-sigma event).
GPUSORT_HD constexpr bool sampled_threshold_fits(std::uint64_t row_length, std::uint64_t k,
                                                 std::uint64_t capacity) {
  return row_length >= 4 * std::uint64_t{row_samples} && k >= 1 &&
         sample_rank(k, row_length) <= row_samples &&
         4 * expected_candidates(k, row_length) <= 3 * capacity;
}

}  // namespace gpusort::detail::index_math
