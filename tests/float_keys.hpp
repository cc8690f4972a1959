// Shared by the CPU and GPU tests of float keys: every class of bits (±0, ±inf, denormals,
// normals, NaNs of both signs with many payloads), inputs full of them, and checks of a
// sorted result against std::stable_sort in gpusort's order, bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gpusort/detail/core/float_order.hpp"
#include "gpusort/key_traits.hpp"
#include "reference.hpp"

namespace gpusort::testing {

template <class F>
using float_bits = typename detail::float_order<F>::U;

template <class F>
F float_of_bits(float_bits<F> b) {
  F f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}
template <class F>
float_bits<F> bits_of(F f) {
  float_bits<F> b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

template <class F>
bool is_nan_bits(float_bits<F> b) {
  using order = detail::float_order<F>;
  const float_bits<F> magnitude = b & ~order::sign;
  return magnitude > order::infinity_bits;
}

// One of each class, both signs: zeros, smallest and largest denormals, smallest and largest
// normals, a few ordinary values, infinities, and NaNs: quiet, signalling, payload 1, all ones.
template <class F>
std::vector<float_bits<F>> special_float_bits() {
  using U = float_bits<F>;
  using order = detail::float_order<F>;
  const U quiet = U{1} << (order::mantissa_bits - 1);
  const U exponent = order::infinity_bits;
  const U magnitudes[] = {
      0,                                            // zero
      1,                                            // smallest denormal
      order::negative_nans >> 1,                    // a denormal in the middle
      order::negative_nans,                         // largest denormal
      order::negative_nans + 1,                     // smallest normal
      bits_of(F(1)), bits_of(F(1.5)), bits_of(F(3.25)),
      exponent - 1,                                 // largest normal
      exponent,                                     // infinity
      exponent | 1,                                 // signalling NaN, payload 1
      exponent | quiet,                             // the quiet NaN
      exponent | quiet | 1,                         // quiet with payload
      exponent | (quiet >> 1),                      // signalling, high payload bit
      exponent | order::negative_nans,              // every mantissa bit: all ones
      exponent | (order::negative_nans & ~quiet),   // largest signalling
  };
  std::vector<U> out;
  for (U m : magnitudes) {
    out.push_back(m);
    out.push_back(m | order::sign);
  }
  return out;
}

// n keys for sort tests: about half special classes (and many NaN payloads), a quarter random
// bit patterns (any class), a quarter values from a small set (long runs of equal keys).
template <class F>
std::vector<F> special_float_input(std::size_t n, std::uint64_t seed) {
  using U = float_bits<F>;
  using order = detail::float_order<F>;
  const std::vector<U> specials = special_float_bits<F>();
  std::mt19937_64 rng(seed);
  std::vector<F> keys(n);
  for (auto& k : keys) {
    const std::uint64_t r = rng();
    U b;
    switch (r % 8) {
      case 0: case 1: case 2:
        b = specials[(r >> 8) % specials.size()];
        break;
      case 3:  // a NaN of any sign and payload
        b = static_cast<U>(order::infinity_bits | (static_cast<U>(rng()) & order::negative_nans) |
                           ((r >> 8) & 1 ? order::sign : U{0}));
        if (!is_nan_bits<F>(b)) b |= 1;
        break;
      case 4: case 5:
        b = static_cast<U>(rng());
        break;
      default:
        b = bits_of(static_cast<F>(static_cast<int>((r >> 8) % 17) - 8) / F(4));
    }
    k = float_of_bits<F>(b);
  }
  return keys;
}

// Keys with many ties for stability tests: floats full of specials (NaNs of both signs and
// many payloads), integers from 23 values around zero.
template <class K>
std::vector<K> tied_keys(std::size_t n, std::uint64_t seed) {
  if constexpr (std::is_floating_point_v<K>) {
    return special_float_input<K>(n, seed);
  } else {
    std::mt19937_64 rng(seed);
    std::vector<K> keys(n);
    for (auto& k : keys) k = static_cast<K>(static_cast<std::int64_t>(rng() % 23) - 11);
    return keys;
  }
}

// The input positions of std::stable_sort's order (sort_order), for keys of any type.
template <class K>
std::vector<std::uint64_t> stable_positions(const std::vector<K>& input, bool descending,
                                            nan_order nans = nan_order::last) {
  std::vector<std::uint64_t> index(input.size());
  std::iota(index.begin(), index.end(), std::uint64_t{0});
  const sort_order<K> before{descending, nans};
  std::stable_sort(index.begin(), index.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return before(input[a], input[b]); });
  return index;
}

// The positions of input keys in std::stable_sort's order (sort_order).
template <class F>
std::vector<std::size_t> stable_order(const std::vector<F>& input, bool descending,
                                      nan_order nans = nan_order::last) {
  const std::vector<std::uint64_t> p = stable_positions(input, descending, nans);
  return std::vector<std::size_t>(p.begin(), p.end());
}

// `got` is `input` sorted: every non-NaN key bit for bit where std::stable_sort puts it; the
// NaNs in the block the reference gives them, as the same multiset of bit patterns, and for a
// stable sort in input order. With `origins` (the input position of each output key, from
// a pairs sort's values), each key must be the one its value came with, and a stable sort
// must give exactly the reference permutation.
template <class F>
::testing::AssertionResult sorted_like_reference(const std::vector<F>& input,
                                                 const std::vector<F>& got, bool descending,
                                                 bool stable,
                                                 const std::vector<std::uint64_t>* origins = nullptr,
                                                 nan_order nans = nan_order::last) {
  using U = float_bits<F>;
  if (got.size() != input.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << input.size();
  const std::vector<std::size_t> ref = stable_order(input, descending, nans);
  std::vector<U> got_nans, want_nans;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const U want = bits_of(input[ref[i]]);
    const U have = bits_of(got[i]);
    if (is_nan_bits<F>(want) != is_nan_bits<F>(have))
      return ::testing::AssertionFailure()
             << "at " << i << ": bits " << std::hex << have << " where " << want << " belongs";
    if (is_nan_bits<F>(want) && !stable) {
      got_nans.push_back(have);
      want_nans.push_back(want);
    } else if (want != have) {
      return ::testing::AssertionFailure()
             << "at " << i << ": bits " << std::hex << have << " instead of " << want;
    }
  }
  std::sort(got_nans.begin(), got_nans.end());
  std::sort(want_nans.begin(), want_nans.end());
  if (got_nans != want_nans) return ::testing::AssertionFailure() << "NaN payloads changed";
  if (origins) {
    if (origins->size() != got.size()) return ::testing::AssertionFailure() << "value count";
    std::vector<bool> seen(got.size(), false);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::uint64_t o = (*origins)[i];
      if (o >= got.size() || seen[o])
        return ::testing::AssertionFailure() << "value at " << i << " lost or repeated: " << o;
      seen[o] = true;
      if (bits_of(input[o]) != bits_of(got[i]))
        return ::testing::AssertionFailure() << "value " << o << " left its key (at " << i << ")";
      if (stable && o != ref[i])
        return ::testing::AssertionFailure()
               << "not stable at " << i << ": input " << o << " instead of " << ref[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Keys of any type sorted with u32 positions as values: floats as sorted_like_reference says,
// integers equal to the reference's keys; every value next to its own key; with `stable`,
// exactly the reference's permutation.
template <class K>
::testing::AssertionResult pairs_like_reference(const std::vector<K>& input,
                                                const std::vector<K>& keys,
                                                const std::vector<std::uint32_t>& positions,
                                                bool descending, bool stable, nan_order nans) {
  const std::vector<std::uint64_t> origins(positions.begin(), positions.end());
  if constexpr (std::is_floating_point_v<K>) {
    return sorted_like_reference(input, keys, descending, stable, &origins, nans);
  } else {
    const std::vector<std::uint64_t> want = stable_positions(input, descending, nans);
    if (keys.size() != input.size() || origins.size() != input.size())
      return ::testing::AssertionFailure() << "sizes differ";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != input[want[i]]) return ::testing::AssertionFailure() << "key at " << i;
      if (origins[i] >= input.size() || keys[i] != input[origins[i]])
        return ::testing::AssertionFailure() << "value left its key at " << i;
      if (stable && origins[i] != want[i])
        return ::testing::AssertionFailure() << "not stable at " << i;
    }
    return ::testing::AssertionSuccess();
  }
}

}  // namespace gpusort::testing
