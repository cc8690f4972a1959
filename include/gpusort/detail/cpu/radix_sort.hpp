// The CPU backend's radix sort (algorithm::cub_radix, and automatic, as on the device): a
// stable LSD sort of 8-bit digits of the keys' ordered bits (index_math/radix.hpp) on all
// cores. Each pass counts the digits of every thread's share, gives each (digit, thread) its
// place in the output, then each thread scatters its share there in order. A pass whose digit
// is the same for every key moves nothing. Takes a second buffer of the keys (and values).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpusort/detail/core/types.hpp"  // no_value
#include "gpusort/detail/cpu/parallel_for.hpp"
#include "gpusort/detail/index_math/radix.hpp"
#include "gpusort/key_traits.hpp"

namespace gpusort::detail::cpu {

template <class K, class V>
void radix_sort(K* keys, V* values, std::uint64_t n, bool descending) {
  using U = typename key_traits<K>::ordered_type;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  constexpr int digit_bits = 8;
  constexpr unsigned digits = 1u << digit_bits;
  if (n < 2) return;
  const std::uint64_t shares = piece_count(n, std::uint64_t{1} << 16);
  const auto share = [&](std::uint64_t t) { return std::pair{n * t / shares, n * (t + 1) / shares}; };
  const auto digit = [&](K key, int pass) {
    return index_math::radix_digit(key_traits<K>::ordered(key), pass, digit_bits, descending);
  };
  std::vector<K> key_buffer(n);
  std::vector<V> value_buffer(has_values ? n : 0);
  K* from = keys;
  K* to = key_buffer.data();
  V* values_from = values;
  V* values_to = value_buffer.data();
  std::vector<std::uint64_t> places(shares * digits);  // [thread][digit]
  for (int pass = 0; pass < index_math::radix_passes<U>(digit_bits); ++pass) {
    parallel_for(shares, 0, [&](std::uint64_t t) {
      std::uint64_t* count = &places[t * digits];
      std::fill(count, count + digits, 0);
      const auto [begin, end] = share(t);
      for (std::uint64_t i = begin; i < end; ++i) ++count[digit(from[i], pass)];
    });
    // Exclusive sums in (digit, thread) order: a thread's keys of a digit follow the earlier
    // threads' keys of it, so the pass is stable.
    std::uint64_t sum = 0;
    bool one_digit = false;
    for (unsigned d = 0; d < digits; ++d) {
      std::uint64_t of_digit = 0;
      for (std::uint64_t t = 0; t < shares; ++t) {
        const std::uint64_t count = places[t * digits + d];
        places[t * digits + d] = sum + of_digit;
        of_digit += count;
      }
      one_digit = one_digit || of_digit == n;
      sum += of_digit;
    }
    if (one_digit) continue;  // every key has this digit: the order stands
    parallel_for(shares, 0, [&](std::uint64_t t) {
      std::uint64_t* place = &places[t * digits];
      const auto [begin, end] = share(t);
      for (std::uint64_t i = begin; i < end; ++i) {
        const std::uint64_t at = place[digit(from[i], pass)]++;
        to[at] = from[i];
        if constexpr (has_values) values_to[at] = values_from[i];
      }
    });
    std::swap(from, to);
    if constexpr (has_values) std::swap(values_from, values_to);
  }
  if (from != keys) {
    parallel_for(shares, 0, [&](std::uint64_t t) {
      const auto [begin, end] = share(t);
      std::copy(from + begin, from + end, keys + begin);
      if constexpr (has_values) std::copy(values_from + begin, values_from + end, values + begin);
    });
  }
}

}  // namespace gpusort::detail::cpu
