// Text lines in GNU sort's order (gpusort/lines.hpp). The index math follows coreutils'
// sort.c (begfield, limfield, keycompare, compare) and gnulib's strnumcmp, which
// tests/cpu/test_cpu_lines.cpp checks against `LC_ALL=C sort` itself.
#include "gpusort/lines.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <string>

#include "gpusort/detail/cpu/parallel_for.hpp"
#include "gpusort/error.hpp"
#include "gpusort/sort.hpp"

namespace gpusort {

namespace lines_detail {
namespace {

// GNU's blanks: isblank() in the C locale, and the newline, which only -z lines can hold.
constexpr bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
// The C locale has no thousands separator, which GNU sort spells NON_CHAR, CHAR_MAX + 1. Where
// char is signed (x86-64) that is the byte 0x80 read as unsigned char, so GNU's -n skips 0x80
// bytes in a number's integer part; this gives the same output as GNU built here.
constexpr bool is_thousands_separator(char c) {
  return static_cast<unsigned char>(c) == CHAR_MAX + 1;
}

std::size_t skip_blanks(std::string_view line, std::size_t p) {
  while (p < line.size() && is_blank(line[p])) ++p;
  return p;
}

// Past one field from p. With -t: past its separator too, when `take_separator`. Without:
// its leading blanks, then its non-blanks (the blanks after it belong to the next field).
std::size_t past_field(std::string_view line, std::size_t p, std::optional<char> separator,
                       bool take_separator) {
  if (separator) {
    while (p < line.size() && line[p] != *separator) ++p;
    return p < line.size() && take_separator ? p + 1 : p;
  }
  p = skip_blanks(line, p);
  while (p < line.size() && !is_blank(line[p])) ++p;
  return p;
}

// GNU's begfield.
std::size_t key_begin(std::string_view line, const line_key& key, std::optional<char> separator) {
  std::size_t p = 0;
  for (std::size_t f = 1; f < key.field1 && p < line.size(); ++f)
    p = past_field(line, p, separator, true);
  if (key.skip_blanks_start) p = skip_blanks(line, p);
  return p + std::min(line.size() - p, key.char1 - 1);
}

// GNU's limfield. Without char2 the whole of field2 is in the key, and the end stops before
// the separator that follows it.
std::size_t key_end(std::string_view line, const line_key& key, std::optional<char> separator) {
  if (key.field2 == 0) return line.size();
  const std::size_t fields = key.char2 == 0 ? key.field2 : key.field2 - 1;
  std::size_t p = 0;
  for (std::size_t f = 1; f <= fields && p < line.size(); ++f)
    p = past_field(line, p, separator, f < fields || key.char2 != 0);
  if (key.char2 != 0) {
    if (key.skip_blanks_end) p = skip_blanks(line, p);
    p += std::min(line.size() - p, key.char2);
  }
  return p;
}

// A -n number: the integer part from its first nonzero digit to its last digit (thousands
// separators included, `digits` of them digits), the fraction without trailing zeros. Zero
// (however written) is not negative.
struct decimal {
  bool negative = false;
  std::string_view integer, fraction;
  std::size_t digits = 0;
};

decimal parse_decimal(std::string_view key) {
  std::size_t p = skip_blanks(key, 0);
  const bool minus = p < key.size() && key[p] == '-';
  if (minus) ++p;
  while (p < key.size() && (key[p] == '0' || is_thousands_separator(key[p]))) ++p;
  decimal d;
  std::size_t begin = p, end = p;
  for (; p < key.size() && (is_digit(key[p]) || is_thousands_separator(key[p])); ++p) {
    if (is_digit(key[p])) {
      ++d.digits;
      end = p + 1;
    }
  }
  d.integer = key.substr(begin, end - begin);
  if (p < key.size() && key[p] == '.') {
    begin = ++p;
    while (p < key.size() && is_digit(key[p])) ++p;
    d.fraction = key.substr(begin, p - begin);
    while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.remove_suffix(1);
  }
  d.negative = minus && !(d.digits == 0 && d.fraction.empty());
  return d;
}

int compare_bytes(std::string_view a, std::string_view b) {
  const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c;
  return (a.size() > b.size()) - (a.size() < b.size());
}

int compare_magnitudes(const decimal& a, const decimal& b) {
  if (a.digits != b.digits) return a.digits < b.digits ? -1 : 1;
  // Digit by digit, past the separators.
  for (std::size_t i = 0, j = 0;; ++i, ++j) {
    while (i < a.integer.size() && is_thousands_separator(a.integer[i])) ++i;
    while (j < b.integer.size() && is_thousands_separator(b.integer[j])) ++j;
    if (i == a.integer.size()) break;  // and so is j: as many digits
    if (a.integer[i] != b.integer[j]) return a.integer[i] < b.integer[j] ? -1 : 1;
  }
  return compare_bytes(a.fraction, b.fraction);  // no trailing zeros: a prefix is smaller
}

// Ascending unsigned codes of doubles: negatives bit-flipped below the positives.
std::uint64_t double_code(double d) {
  const auto bits = std::bit_cast<std::uint64_t>(d == 0 ? 0.0 : d);  // -0 is 0
  return bits >> 63 ? ~bits : bits | (std::uint64_t{1} << 63);
}

}  // namespace

std::string_view key_text(std::string_view line, const line_key& key,
                          std::optional<char> separator) {
  const std::size_t begin = key_begin(line, key, separator);
  const std::size_t end = std::max(begin, key_end(line, key, separator));
  return line.substr(begin, end - begin);
}

int compare_numbers(std::string_view a, std::string_view b) {
  const decimal x = parse_decimal(a), y = parse_decimal(b);
  if (x.negative != y.negative) return x.negative ? -1 : 1;
  const int c = compare_magnitudes(x, y);
  return x.negative ? -c : c;
}

std::uint64_t bytes_code(std::string_view key) {
  std::uint64_t code = 0;
  for (std::size_t i = 0; i < 8; ++i)
    code = code << 8 | (i < key.size() ? static_cast<unsigned char>(key[i]) : 0u);
  return code;
}

// Rounding to nearest is monotone, so unequal codes keep the order of their numbers; equal
// codes are ties for the exact comparison.
std::uint64_t numeric_code(std::string_view key) {
  const decimal d = parse_decimal(key);
  if (d.digits == 0 && d.fraction.empty()) return double_code(0.0);
  std::string number;
  std::copy_if(d.integer.begin(), d.integer.end(), std::back_inserter(number), is_digit);
  if (!d.fraction.empty()) (number += '.') += d.fraction;
  double magnitude = 0;
  if (std::from_chars(number.data(), number.data() + number.size(), magnitude,
                      std::chars_format::fixed).ec != std::errc{})
    // Out of range: beyond the largest double, or below the smallest (which rounds to 0).
    magnitude = d.digits == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return double_code(d.negative ? -magnitude : magnitude);
}

}  // namespace lines_detail

namespace {

[[noreturn]] void bad_key(std::string_view spec, const char* why) {
  throw invalid_request("invalid key '" + std::string(spec) + "': " + why);
}

void check_key(const line_key& key) {
  if (key.field1 == 0) throw invalid_request("sort_lines: a key's field number is zero");
  if (key.char1 == 0) throw invalid_request("sort_lines: a key's start character is zero");
}

using detail::cpu::parallel_for;
using detail::cpu::piece_count;

// The steps over every line or byte run on all cores, in pieces of at least these.
constexpr std::uint64_t piece_bytes = std::uint64_t{1} << 20;
constexpr std::uint64_t piece_lines = std::uint64_t{1} << 14;

// f(p, begin, end) for each piece p of [0, count) cut into `pieces`, on all cores.
template <class F>
void for_each_piece(std::uint64_t count, std::uint64_t pieces, F&& f) {
  parallel_for(pieces, 0, [&](std::uint64_t p) { f(p, count * p / pieces, count * (p + 1) / pieces); });
}

// Sorts [first, last) by `before` on all cores: pieces by std::sort, then merged in pairs.
template <class It, class Before>
void parallel_sort(It first, It last, Before before) {
  const std::uint64_t n = static_cast<std::uint64_t>(last - first);
  const std::uint64_t pieces = piece_count(n, piece_lines);
  const auto at = [&](std::uint64_t p) { return first + n * std::min(p, pieces) / pieces; };
  parallel_for(pieces, 0, [&](std::uint64_t p) { std::sort(at(p), at(p + 1), before); });
  for (std::uint64_t width = 1; width < pieces; width *= 2) {
    parallel_for((pieces + 2 * width - 1) / (2 * width), 0, [&](std::uint64_t m) {
      const std::uint64_t p = 2 * width * m;
      std::inplace_merge(at(p), at(p + width), at(p + 2 * width), before);
    });
  }
}

}  // namespace

line_key parse_line_key(std::string_view spec) {
  std::size_t p = 0;
  // GNU reads each count with strtoumax: white space and a '+' may come first.
  const auto number = [&](const char* missing) {
    while (p < spec.size() && (spec[p] == ' ' || (spec[p] >= '\t' && spec[p] <= '\r'))) ++p;
    if (p < spec.size() && spec[p] == '+') ++p;
    std::size_t value = 0;
    const auto [end, ec] = std::from_chars(spec.data() + p, spec.data() + spec.size(), value);
    if (ec == std::errc::invalid_argument) bad_key(spec, missing);
    // GNU takes counts too large for size_t as the largest: past every line.
    if (ec == std::errc::result_out_of_range) value = std::numeric_limits<std::size_t>::max();
    p = end - spec.data();
    return value;
  };
  const auto flags = [&](line_key& key, bool at_end) {
    for (; p < spec.size() && spec[p] != ','; ++p) {
      switch (spec[p]) {
        case 'b': (at_end ? key.skip_blanks_end : key.skip_blanks_start) = true; break;
        case 'n': key.numeric = true; break;
        case 'r': key.reverse = true; break;
        case 'd': case 'f': case 'g': case 'h': case 'i': case 'M': case 'R': case 'V':
          bad_key(spec, "only the flags b, n and r are supported");
        default: bad_key(spec, "stray character in field spec");
      }
    }
  };
  line_key key;
  key.field1 = number("invalid number at field start");
  if (key.field1 == 0) bad_key(spec, "field number is zero");
  if (p < spec.size() && spec[p] == '.') {
    ++p;
    key.char1 = number("invalid number after '.'");
    if (key.char1 == 0) bad_key(spec, "character offset is zero");
  }
  flags(key, false);
  if (p < spec.size()) {  // a ','
    ++p;
    key.field2 = number("invalid number after ','");
    if (key.field2 == 0) bad_key(spec, "field number is zero");
    if (p < spec.size() && spec[p] == '.') {
      ++p;
      key.char2 = number("invalid number after '.'");
    }
    flags(key, true);
    if (p < spec.size()) bad_key(spec, "stray character in field spec");
  }
  return key;
}

std::vector<std::uint64_t> line_starts(std::string_view text, char terminator) {
  // Each piece of the text counts its terminators, then writes its lines' starts from where
  // the counts before it end.
  const std::uint64_t size = text.size(), pieces = piece_count(size, piece_bytes);
  std::vector<std::uint64_t> ends_before(pieces + 1, 0);
  for_each_piece(size, pieces, [&](std::uint64_t p, std::uint64_t begin, std::uint64_t end) {
    ends_before[p + 1] = std::count(text.begin() + begin, text.begin() + end, terminator);
  });
  for (std::uint64_t p = 0; p < pieces; ++p) ends_before[p + 1] += ends_before[p];
  const bool open_last_line = size > 0 && text.back() != terminator;
  std::vector<std::uint64_t> starts(1 + ends_before[pieces] + (open_last_line ? 1 : 0));
  starts[0] = 0;
  for_each_piece(size, pieces, [&](std::uint64_t p, std::uint64_t begin, std::uint64_t end) {
    std::uint64_t* out = starts.data() + 1 + ends_before[p];
    const char* const base = text.data();
    for (const char* q = base + begin; q != base + end;) {
      const void* found = std::memchr(q, terminator, base + end - q);
      if (!found) break;
      q = static_cast<const char*>(found) + 1;
      *out++ = static_cast<std::uint64_t>(q - base);
    }
  });
  if (open_last_line) starts.back() = size + 1;  // as if it had its terminator
  return starts;
}

std::string_view line_at(std::string_view text, std::span<const std::uint64_t> starts,
                         std::uint64_t i) {
  return text.substr(starts[i], starts[i + 1] - starts[i] - 1);
}

line_comparator::line_comparator(const line_order& order)
    : keys_(order.keys), separator_(order.separator), reverse_(order.reverse) {
  // GNU gives the global options to the keys without flags; with no keys, -n or -b make one
  // key of the whole line (-r alone only reverses the whole-line comparison).
  if (keys_.empty() && (order.numeric || order.skip_blanks)) keys_.emplace_back();
  for (line_key& key : keys_) {
    check_key(key);
    if (key.numeric || key.reverse || key.skip_blanks_start || key.skip_blanks_end) continue;
    key.numeric = order.numeric;
    key.reverse = order.reverse;
    key.skip_blanks_start = key.skip_blanks_end = order.skip_blanks;
  }
  // Without keys -u and -s change nothing: whole lines decide (GNU's compare()).
  last_resort_ = keys_.empty() || !(order.unique || order.stable);
}

int line_comparator::operator()(std::string_view a, std::string_view b) const {
  for (const line_key& key : keys_) {
    const std::string_view x = lines_detail::key_text(a, key, separator_);
    const std::string_view y = lines_detail::key_text(b, key, separator_);
    const int c = key.numeric ? lines_detail::compare_numbers(x, y)
                              : lines_detail::compare_bytes(x, y);
    if (c != 0) return key.reverse ? -c : c;
  }
  if (!last_resort_) return 0;
  const int c = lines_detail::compare_bytes(a, b);
  return reverse_ ? -c : c;
}

std::vector<std::uint64_t> sort_lines(std::string_view text,
                                      std::span<const std::uint64_t> starts,
                                      const line_order& order) {
  if (starts.empty() || starts.front() != 0 || starts.back() > text.size() + 1 ||
      std::adjacent_find(starts.begin(), starts.end(), std::greater_equal<>()) != starts.end())
    throw invalid_request("sort_lines: starts are not line_starts of the text");
  const line_comparator compare(order);
  const std::uint64_t n = starts.size() - 1;
  const auto line = [&](std::uint64_t i) { return line_at(text, starts, i); };

  // The first key compared (the whole line when there are none), as codes.
  const line_key first = compare.keys().empty() ? line_key{.reverse = order.reverse}
                                                : compare.keys().front();
  std::vector<std::uint64_t> codes(n), lines(n);
  for_each_piece(n, piece_count(n, piece_lines), [&](std::uint64_t, std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t i = b; i < e; ++i) {
      const std::string_view key = lines_detail::key_text(line(i), first, order.separator);
      codes[i] = first.numeric ? lines_detail::numeric_code(key) : lines_detail::bytes_code(key);
      lines[i] = i;
    }
  });
  options by_code;
  by_code.direction = first.reverse ? gpusort::order::descending : gpusort::order::ascending;
  gpusort::sort(codes, lines, by_code);

  // Equal codes may hide any order: GNU's comparison decides, then the input order, which
  // is GNU's for lines that compare equal (-s, and the one -u keeps).
  const auto before = [&](std::uint64_t i, std::uint64_t j) {
    const int c = compare(line(i), line(j));
    return c != 0 ? c < 0 : i < j;
  };
  // Codes of the next 8 bytes of the first key for the lines of a run [b, e), whose keys agree
  // on their first 8 * depth bytes, sorted with them: whether any key went on that far.
  const auto refine = [&](std::uint64_t b, std::uint64_t e, std::uint64_t depth) {
    std::atomic<bool> longer{false};
    for_each_piece(e - b, piece_count(e - b, piece_lines), [&](std::uint64_t, std::uint64_t x, std::uint64_t y) {
      bool any = false;
      for (std::uint64_t i = b + x; i < b + y; ++i) {
        const std::string_view key = lines_detail::key_text(line(lines[i]), first, order.separator);
        const std::string_view rest = key.size() > 8 * depth ? key.substr(8 * depth) : std::string_view();
        codes[i] = lines_detail::bytes_code(rest);
        any = any || !rest.empty();
      }
      if (any) longer = true;
    });
    if (!longer) return false;
    std::vector<std::uint64_t> run_codes(codes.begin() + b, codes.begin() + e),
        run_lines(lines.begin() + b, lines.begin() + e);
    gpusort::sort(run_codes, run_lines, by_code);
    std::copy(run_codes.begin(), run_codes.end(), codes.begin() + b);
    std::copy(run_lines.begin(), run_lines.end(), lines.begin() + b);
    return true;
  };
  // Orders lines [lo, hi), whose first keys agree on their first 8 * depth bytes and whose
  // codes hold the next 8 (or the numbers): each piece of the range orders the runs of equal
  // codes that start in it by the comparison. A run too long for one core is refined by its
  // keys' next 8 bytes (a byte key, a few rounds at most), else ordered on all cores.
  constexpr std::uint64_t most_refined_depth = 16;  // 128 bytes of common prefix
  const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> order_runs =
      [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t depth) {
        std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> long_runs(
            piece_count(hi - lo, piece_lines));
        for_each_piece(hi - lo, long_runs.size(), [&](std::uint64_t p, std::uint64_t x, std::uint64_t y) {
          std::uint64_t b = lo + x;
          const std::uint64_t end = lo + y;
          while (b > lo && b < end && codes[b] == codes[b - 1]) ++b;  // its run began before
          for (std::uint64_t e = b; b < end; b = e) {
            for (e = b + 1; e < hi && codes[e] == codes[b];) ++e;
            if (e - b > piece_lines)
              long_runs[p].emplace_back(b, e);
            else if (e - b > 1)
              std::sort(lines.begin() + b, lines.begin() + e, before);
          }
        });
        for (const auto& runs : long_runs)
          for (const auto& [b, e] : runs) {
            if (!first.numeric && depth < most_refined_depth && refine(b, e, depth + 1))
              order_runs(b, e, depth + 1);
            else
              parallel_sort(lines.begin() + b, lines.begin() + e, before);
          }
      };
  order_runs(0, n, 0);
  if (!order.unique) return lines;
  // -u: a line equal to the one before it goes (equality is transitive: the first of each run
  // stays). Each piece marks its lines and counts those it keeps, then moves them down.
  const std::uint64_t pieces = piece_count(n, piece_lines);
  std::vector<std::uint8_t> kept(n);
  std::vector<std::uint64_t> kept_before(pieces + 1, 0);
  for_each_piece(n, pieces, [&](std::uint64_t p, std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t j = b; j < e; ++j) {
      kept[j] = j == 0 || compare(line(lines[j - 1]), line(lines[j])) != 0;
      kept_before[p + 1] += kept[j];
    }
  });
  for (std::uint64_t p = 0; p < pieces; ++p) kept_before[p + 1] += kept_before[p];
  std::vector<std::uint64_t> unique_lines(kept_before[pieces]);
  for_each_piece(n, pieces, [&](std::uint64_t p, std::uint64_t b, std::uint64_t e) {
    std::uint64_t to = kept_before[p];
    for (std::uint64_t j = b; j < e; ++j)
      if (kept[j]) unique_lines[to++] = lines[j];
  });
  return unique_lines;
}

namespace {

// Where each piece of `lines` starts in the gathered output, and its end: each piece sums its
// lines' bytes (terminators included), then the sums are added up.
std::vector<std::uint64_t> gathered_offsets(std::span<const std::uint64_t> starts,
                                            std::span<const std::uint64_t> lines,
                                            std::uint64_t pieces) {
  std::vector<std::uint64_t> offsets(pieces + 1, 0);
  for_each_piece(lines.size(), pieces, [&](std::uint64_t p, std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t j = b; j < e; ++j) offsets[p + 1] += starts[lines[j] + 1] - starts[lines[j]];
  });
  for (std::uint64_t p = 0; p < pieces; ++p) offsets[p + 1] += offsets[p];
  return offsets;
}

}  // namespace

std::uint64_t gathered_bytes(std::span<const std::uint64_t> starts,
                             std::span<const std::uint64_t> lines) {
  return gathered_offsets(starts, lines, piece_count(lines.size(), piece_lines)).back();
}

std::uint64_t gather_lines(std::string_view text, std::span<const std::uint64_t> starts,
                           std::span<const std::uint64_t> lines, std::span<char> out,
                           char terminator) {
  const std::uint64_t pieces = piece_count(lines.size(), piece_lines);
  const std::vector<std::uint64_t> offsets = gathered_offsets(starts, lines, pieces);
  if (offsets.back() > out.size())
    throw invalid_request("gather_lines: the output holds " + std::to_string(out.size()) +
                          " bytes, the lines " + std::to_string(offsets.back()));
  for_each_piece(lines.size(), pieces, [&](std::uint64_t p, std::uint64_t b, std::uint64_t e) {
    char* to = out.data() + offsets[p];
    for (std::uint64_t j = b; j < e; ++j) {
      const std::string_view line = line_at(text, starts, lines[j]);
      std::memcpy(to, line.data(), line.size());
      to += line.size();
      *to++ = terminator;
    }
  });
  return offsets.back();
}

std::string gather_lines(std::string_view text, std::span<const std::uint64_t> starts,
                         std::span<const std::uint64_t> lines, char terminator) {
  std::string out(gathered_bytes(starts, lines), '\0');
  gather_lines(text, starts, lines, std::span<char>(out), terminator);
  return out;
}

std::string sort_text(std::string_view text, const line_order& order) {
  const std::vector<std::uint64_t> starts = line_starts(text, order.terminator);
  return gather_lines(text, starts, sort_lines(text, starts, order), order.terminator);
}

}  // namespace gpusort
