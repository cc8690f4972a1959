// The tool's text records (`gpusort gen|sort|check --text`): one `key` or `key value` per line,
// floats in their shortest exact form (NaN payloads are lost), the 16-bit floats through
// float. A format of the shape the library's in-memory sorts take (binary_records,
// src/external/records.hpp), and read/write calls for either format.
#pragma once

#include <locale.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/key_traits.hpp"
#include "records.hpp"

namespace gpusort::detail::external {

// A float `token` too small in magnitude for T (1e-50 as an f32), rounded as the C library
// rounds it (to zero or a subnormal) into `out`; false for anything else (1e50: too large).
template <class T>
bool parse_underflow(std::string_view token, T& out) {
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", nullptr);  // not the caller's
  const std::string text(token);
  char* end = nullptr;
  errno = 0;
  const T value = std::is_same_v<T, float> ? ::strtof_l(text.c_str(), &end, c_locale)
                                           : ::strtod_l(text.c_str(), &end, c_locale);
  if (c_locale == nullptr || end != text.c_str() + text.size() || std::isinf(value) ||
      std::fabs(value) >= std::numeric_limits<T>::min())
    return false;
  out = value;
  return true;
}

// One number of a text file, or invalid_request saying, after `where` (the file and line), why
// `token` is not one: "'x' is not a u32 key", "'-1' is out of the range of u32 keys".
// `what` starts with a type name: "u32 key", "i64 key", "u32 value".
template <class T>
T parse_text_number(std::string_view token, const std::string& where, const std::string& what) {
  const auto parse_all = [](std::string_view text, T& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return end == text.data() + text.size() ? ec : std::errc::invalid_argument;
  };
  T number;
  std::errc error = parse_all(token, number);
  if (error == std::errc{}) return number;
  if constexpr (std::is_floating_point_v<T>)
    if (error == std::errc::result_out_of_range && parse_underflow(token, number)) return number;
  // from_chars reads no minus sign into an unsigned type: a negative integer is out of range.
  if (std::is_unsigned_v<T> && token.starts_with('-') &&
      parse_all(token.substr(1), number) != std::errc::invalid_argument)
    error = std::errc::result_out_of_range;
  const std::string article = what.starts_with('u') ? "a " : "an ";  // a u32, an i64, an f32
  throw invalid_request(where + quote_input(token) +
                    (error == std::errc::result_out_of_range
                         ? " is out of the range of " + what + "s"
                         : " is not " + article + what));
}

// A text key: the number itself, or for the 16-bit floats a float rounded to the format (one
// beyond its finite range is out of range).
template <class K>
K parse_text_key(std::string_view token, const std::string& where) {
  const std::string what = std::string(key_name<K>) + " key";
  if constexpr (float16_key<K>) {
    const float value = parse_text_number<float>(token, where, what);
    K key;
    float back;
    if constexpr (std::is_same_v<K, __half>) {
      key = __float2half_rn(value);
      back = __half2float(key);
    } else {
      key = __float2bfloat16_rn(value);
      back = __bfloat162float(key);
    }
    if (std::isinf(back) && !std::isinf(value))
      throw invalid_request(where + quote_input(token) + " is out of the range of " + what + "s");
    return key;
  } else {
    return parse_text_number<K>(token, where, what);
  }
}

// Text: one record per line; floats in their shortest exact form (NaN payloads are lost).
template <class K>
records<K> read_text(const std::string& path, bool pairs, progress_sink& meter) {
  const std::uint64_t size = input_file_size(path);
  std::string text(size, '\0');
  const file_handle f = open_input(path);
  in_chunks(size, meter, [&](std::uint64_t offset, std::size_t length) {
    read_bytes(f.get(), text.data() + offset, length, path);
  });
  meter.phase("parsing", true);
  records<K> r{{}, {}, pairs};
  std::uint64_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    meter.advance(start, text.size());
    std::vector<std::string_view> tokens;
    for (std::size_t pos = 0; pos < line.size();) {
      pos = line.find_first_not_of(" \t\r", pos);
      if (pos == std::string_view::npos) break;
      const std::size_t stop = std::min(line.find_first_of(" \t\r", pos), line.size());
      tokens.push_back(line.substr(pos, stop - pos));
      pos = stop;
    }
    if (tokens.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (tokens.size() != (pairs ? 2u : 1u))
      throw invalid_request(where + (pairs ? "expected 'key value'" : "expected one key") + ", got " +
                        quote_input(line));
    r.keys.push_back(parse_text_key<K>(tokens[0], where));
    if (pairs) r.values.push_back(parse_text_number<std::uint32_t>(tokens[1], where, "u32 value"));
  }
  return r;
}

template <class K>
void write_text(std::FILE* f, const records<K>& r, const std::string& path, progress_sink& meter) {
  std::string buffer;
  char number[64];
  auto append_number = [&](auto value) {
    const auto result = std::to_chars(number, number + sizeof number, value);
    buffer.append(number, result.ptr);
  };
  auto append = [&](auto value) {
    using T = decltype(value);
    if constexpr (std::is_same_v<T, __half>)
      append_number(__half2float(value));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      append_number(__bfloat162float(value));
    else
      append_number(value);
  };
  for (std::size_t i = 0; i < r.keys.size(); ++i) {
    append(r.keys[i]);
    if (r.pairs) {
      buffer += ' ';
      append(r.values[i]);
    }
    buffer += '\n';
    if (buffer.size() > (1 << 20)) {
      write_bytes(f, buffer.data(), buffer.size(), path);
      buffer.clear();
      meter.advance(i + 1, r.keys.size());
    }
  }
  write_bytes(f, buffer.data(), buffer.size(), path);
}

}  // namespace gpusort::detail::external

namespace gpusort::tools {

struct text_records {
  static constexpr bool binary = false;
  template <class K>
  gpusort::detail::external::records<K> read(const std::string& path, bool pairs,
                                             gpusort::detail::external::progress_sink& meter) const {
    meter.phase("reading", true);
    return gpusort::detail::external::read_text<K>(path, pairs, meter);
  }
  template <class K>
  void write(gpusort::detail::external::pending_file& out,
             const gpusort::detail::external::records<K>& r,
             gpusort::detail::external::progress_sink& meter) const {
    meter.phase("writing", true);
    gpusort::detail::external::write_text(out.get(), r, out.path(), meter);
    out.commit();
  }
};

// f(format) with the text format or the library's binary one.
template <class F>
decltype(auto) with_records_format(bool text, F&& f) {
  return text ? f(text_records{}) : f(gpusort::detail::external::binary_records{});
}

}  // namespace gpusort::tools
