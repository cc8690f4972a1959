// Index math of top-k by rows with a radix select per row (device/row_select.cuh), tested on
// the CPU. A row's k-th code is found a digit of up to row_digit_bits bits at a time from the
// top; several blocks share a row when rows are too few to fill the GPU.
#pragma once

#include <cstdint>

#include "gpusort/detail/core/config.hpp"

namespace gpusort::detail::network {

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

// Whether top-k of rows goes to the per-row select: k up to what one block sorts, rows long
// enough to pay for its passes, and columns that fit 32 bits.
GPUSORT_HD constexpr bool row_select_fits(std::uint64_t row_length, std::uint64_t k) {
  return k <= row_select_most_k && row_length >= row_select_least_row &&
         row_length < (std::uint64_t{1} << 32);
}

}  // namespace gpusort::detail::network
