// Command-line plumbing of the gpusort tool: the parsed arguments (arguments.hpp), counts
// such as 2^20, byte counts, and the key-type names.
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "common/segments.hpp"
#include "gpusort/error.hpp"
#include "gpusort/key_traits.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::detail::external {}

namespace gpusort::tools {

// The library's file machinery (record files, pending outputs, the out-of-core sort) is the
// tool's vocabulary.
using namespace gpusort::detail::external;

inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Parses all of `token` as a number of type T (integer or floating point).
template <class T>
bool parse_number(std::string_view token, T& out) {
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc{} && end == token.data() + token.size();
}

inline usage_error not_a_count(std::string_view text, std::string_view what) {
  return usage_error(std::string(what) + ": '" + std::string(text) + "' is not a count");
}

inline std::uint64_t parse_unsigned(std::string_view text, std::string_view what) {
  std::uint64_t value = 0;
  if (!parse_number(text, value)) throw not_a_count(text, what);
  return value;
}

// A count: `1000`, `2^20`, or a power of two plus or minus a number (`2^20+1`, `2^16-1`).
inline std::uint64_t parse_count(std::string_view text, std::string_view what) {
  if (!text.starts_with("2^")) return parse_unsigned(text, what);
  const std::size_t sign = text.find_first_of("+-");
  std::uint64_t exponent = 0, offset = 0;
  if (!parse_number(text.substr(2, sign - 2), exponent) ||
      (sign != std::string_view::npos && !parse_number(text.substr(sign + 1), offset)))
    throw not_a_count(text, what);
  if (exponent > 62)
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is too large");
  const std::uint64_t power = std::uint64_t{1} << exponent;
  if (sign == std::string_view::npos || text[sign] == '+') {
    if (offset > std::numeric_limits<std::uint64_t>::max() - power)
      throw usage_error(std::string(what) + ": '" + std::string(text) + "' is too large");
    return power + offset;
  }
  if (offset > power)
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is negative");
  return power - offset;
}

// One item of a list of counts: a count, or a range `2^a..2^b` (every power of two from 2^a
// to 2^b), appended to `out`.
inline void append_counts(const std::string& item, std::string_view what,
                          std::vector<std::uint64_t>& out) {
  const std::size_t dots = item.find("..");
  if (dots == std::string::npos) {
    out.push_back(parse_count(item, what));
    return;
  }
  const std::uint64_t low = parse_count(item.substr(0, dots), what);
  const std::uint64_t high = parse_count(item.substr(dots + 2), what);
  if (!std::has_single_bit(low) || !std::has_single_bit(high) || low > high)
    throw usage_error(std::string(what) + ": range '" + item + "' must be 2^a..2^b with a <= b");
  for (std::uint64_t n = low;; n *= 2) {  // stops at high, which doubling reaches exactly
    out.push_back(n);
    if (n == high) break;
  }
}

// The most keys bench times in one run: 2^40 (4 TB of u32 keys) is more than any GPU holds.
inline constexpr std::uint64_t max_bench_keys = std::uint64_t{1} << 40;

// Sizes for bench: a comma list of counts and ranges.
inline std::vector<std::uint64_t> parse_sizes(std::string_view text) {
  std::vector<std::uint64_t> sizes;
  for (const std::string& item : split(text, ',')) append_counts(item, "--sizes", sizes);
  for (const std::uint64_t n : sizes)
    if (n > max_bench_keys)
      throw usage_error("--sizes: " + std::to_string(n) + " keys are more than a GPU holds "
                        "(at most 2^40)");
  return sizes;
}

// Segment layouts for bench: a comma list of fixed sizes (counts and ranges, as --sizes)
// and `powerlaw`.
inline std::vector<segment_spec> parse_segments(std::string_view text) {
  std::vector<segment_spec> specs;
  for (const std::string& item : split(text, ',')) {
    if (item == "powerlaw") {
      specs.push_back({.powerlaw = true});
      continue;
    }
    // Every count starts with a digit; anything else was meant as a name.
    if (item.empty() || item[0] < '0' || item[0] > '9')
      throw usage_error("--segments: '" + item + "' is neither a segment size nor powerlaw");
    std::vector<std::uint64_t> sizes;
    append_counts(item, "--segments", sizes);
    for (std::uint64_t size : sizes) {
      if (size == 0) throw usage_error("--segments: a segment size must be at least 1");
      specs.push_back({.size = size});
    }
  }
  return specs;
}

// Calls f.template operator()<K>() for the key type named `name` (u32 i32 f32 u64 i64 f64).
template <class F>
decltype(auto) with_key_type(std::string_view name, F&& f) {
  if (name == key_traits<std::uint32_t>::name) return f.template operator()<std::uint32_t>();
  if (name == key_traits<std::int32_t>::name) return f.template operator()<std::int32_t>();
  if (name == key_traits<float>::name) return f.template operator()<float>();
  if (name == key_traits<std::uint64_t>::name) return f.template operator()<std::uint64_t>();
  if (name == key_traits<std::int64_t>::name) return f.template operator()<std::int64_t>();
  if (name == key_traits<double>::name) return f.template operator()<double>();
  throw usage_error("unknown key type '" + std::string(name) + "' (u32 i32 f32 u64 i64 f64)");
}

// with_key_type's types and the narrow keys gen, sort and check take (i8 u8 i16 u16 f16
// bf16; their files sort on one GPU or the CPU, in memory or by the run path).
template <class F>
decltype(auto) with_file_key_type(std::string_view name, F&& f) {
  using gpusort::detail::narrow_format;
  if (name == narrow_format<std::int8_t>::name) return f.template operator()<std::int8_t>();
  if (name == narrow_format<std::uint8_t>::name) return f.template operator()<std::uint8_t>();
  if (name == narrow_format<std::int16_t>::name) return f.template operator()<std::int16_t>();
  if (name == narrow_format<std::uint16_t>::name) return f.template operator()<std::uint16_t>();
  if (name == narrow_format<__half>::name) return f.template operator()<__half>();
  if (name == narrow_format<__nv_bfloat16>::name) return f.template operator()<__nv_bfloat16>();
  if (name == "bool") throw usage_error("--type: bool keys are not taken by the tool (u8 holds them)");
  for (std::string_view wide : {"u32", "i32", "f32", "u64", "i64", "f64"})
    if (name == wide) return with_key_type(name, std::forward<F>(f));
  throw usage_error("unknown key type '" + std::string(name) +
                    "' (u32 i32 f32 u64 i64 f64 i8 u8 i16 u16 f16 bf16)");
}

// --pairs: the only value type is u32 (the record's original index in `gen`).
inline bool parse_pairs(const arguments& args) {
  if (!args.has("pairs")) return false;
  if (args.get("pairs") != "u32")
    throw usage_error("--pairs: unknown value type '" + args.get("pairs") + "' (u32)");
  return true;
}

// A byte count: a number with an optional binary suffix K, M, G or T (also k, KiB, KB...):
// 65536, 64K, 512M, 4G.
inline std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return usage_error(std::string(what) + ": '" + std::string(text) +
                       "' is not a byte count (a number, optionally followed by K, M, G or T)");
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) throw bad();
  std::uint64_t number = 0;
  if (!parse_number(text.substr(0, digits), number)) throw bad();
  std::string_view suffix = text.substr(digits);
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: throw bad();
    }
    suffix.remove_prefix(1);
    if (suffix != "" && suffix != "B" && suffix != "iB") throw bad();
  }
  if (shift > 0 && number > (std::numeric_limits<std::uint64_t>::max() >> shift))
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is too large");
  return number << shift;
}

}  // namespace gpusort::tools
