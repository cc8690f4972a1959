// gpusort::sort_lines (gpusort/lines.hpp): its index math and comparison checked on cases
// worked out from GNU sort's rules, then its output checked byte for byte against
// `LC_ALL=C sort` with the same options, on generated text of many shapes, every option alone
// and in random combinations. Without a GPU the codes are sorted by the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/scratch_dir.hpp"
#include "gpusort/error.hpp"
#include "gpusort/lines.hpp"

namespace {

using gpusort::line_key;
using gpusort::line_order;
using gpusort::parse_line_key;
namespace ld = gpusort::lines_detail;
using namespace std::string_literals;

std::string_view key_of(std::string_view line, const std::string& spec,
                        std::optional<char> separator = std::nullopt) {
  return ld::key_text(line, parse_line_key(spec), separator);
}

TEST(LineKeys, ParsesGnuKeySyntax) {
  const line_key k = parse_line_key("2.3bn,4.5br");
  EXPECT_EQ(k.field1, 2u);
  EXPECT_EQ(k.char1, 3u);
  EXPECT_EQ(k.field2, 4u);
  EXPECT_EQ(k.char2, 5u);
  EXPECT_TRUE(k.numeric && k.reverse && k.skip_blanks_start && k.skip_blanks_end);
  const line_key whole_from_2 = parse_line_key("2");
  EXPECT_EQ(whole_from_2.char1, 1u);
  EXPECT_EQ(whole_from_2.field2, 0u);
  EXPECT_FALSE(whole_from_2.numeric || whole_from_2.reverse || whole_from_2.skip_blanks_start);
  EXPECT_EQ(parse_line_key("1,1.0").char2, 0u);
  EXPECT_TRUE(parse_line_key("1,2b").skip_blanks_end);
  EXPECT_FALSE(parse_line_key("1,2b").skip_blanks_start);
  EXPECT_EQ(parse_line_key(" +2.+3, 4").field2, 4u);  // counts as strtoumax reads them
  // GNU refuses these; f, M, V and the other flags are GNU's but not sort_lines'.
  for (const char* bad : {"0", "1.0", "", "x", "1,", "1,0", "1.", "2,3x", "1,2,3", "2f", "1,1M",
                          "-1", "+-1", "2 "})
    EXPECT_THROW(parse_line_key(bad), gpusort::invalid_request) << bad;
}

TEST(LineKeys, FieldsWithoutSeparatorStartWithTheirBlanks) {
  const std::string line = "  ab  cd\tef";
  EXPECT_EQ(key_of(line, "1,1"), "  ab");
  EXPECT_EQ(key_of(line, "2,2"), "  cd");
  EXPECT_EQ(key_of(line, "2b,2"), "cd");
  EXPECT_EQ(key_of(line, "3,3"), "\tef");
  EXPECT_EQ(key_of(line, "2"), "  cd\tef");
  EXPECT_EQ(key_of(line, "2.2,2.3"), " c");     // characters count the field's blanks ...
  EXPECT_EQ(key_of(line, "2.2b,2.3b"), "d\t");  // ... unless b skips them; ends run on
  EXPECT_EQ(key_of(line, "1.2,1"), " ab");
  EXPECT_EQ(key_of(line, "4"), "");
  EXPECT_EQ(key_of(line, "1.50"), "");  // past the line's end
  EXPECT_EQ(key_of(line, "3,2"), "");   // the end before the start: empty
  EXPECT_EQ(key_of(line, "2,2.0"), "  cd");
  EXPECT_EQ(key_of(line, "1,2.1"), "  ab ");
}

TEST(LineKeys, FieldsWithSeparator) {
  const std::string line = "a,,b c, d";
  EXPECT_EQ(key_of(line, "1,1", ','), "a");
  EXPECT_EQ(key_of(line, "2,2", ','), "");
  EXPECT_EQ(key_of(line, "3,3", ','), "b c");
  EXPECT_EQ(key_of(line, "4,4", ','), " d");
  EXPECT_EQ(key_of(line, "4b,4", ','), "d");
  EXPECT_EQ(key_of(line, "2", ','), ",b c, d");
  EXPECT_EQ(key_of(line, "3,4.1", ','), "b c, ");  // POS2 with a character: past the separator
  EXPECT_EQ(key_of(line, "5", ','), "");
  EXPECT_EQ(key_of("x y", "2", ' '), "y");  // -t ' ': one space separates, blanks are not runs
  EXPECT_EQ(key_of("x  y", "2", ' '), " y");
}

TEST(LineStarts, CountALastLineWithoutTerminator) {
  using v = std::vector<std::uint64_t>;
  EXPECT_EQ(gpusort::line_starts(""), v{0});
  EXPECT_EQ(gpusort::line_starts("\n"), (v{0, 1}));
  EXPECT_EQ(gpusort::line_starts("a"), (v{0, 2}));
  EXPECT_EQ(gpusort::line_starts("a\n"), (v{0, 2}));
  EXPECT_EQ(gpusort::line_starts("ab\n\nc"), (v{0, 3, 4, 6}));
  EXPECT_EQ(gpusort::line_starts("a\nb\0c\0"s, '\0'), (v{0, 4, 6}));
  const std::string text = "ab\n\nc";
  const auto starts = gpusort::line_starts(text);
  EXPECT_EQ(gpusort::line_at(text, starts, 0), "ab");
  EXPECT_EQ(gpusort::line_at(text, starts, 1), "");
  EXPECT_EQ(gpusort::line_at(text, starts, 2), "c");
}

TEST(Numbers, CompareByExactDecimalValue) {
  // Each row in ascending order, by GNU's rules; "=" rows are equal throughout.
  const std::vector<std::vector<std::string>> ascending = {
      {"-10", "-9.99", "-1", "-0.5", "-.05", "0", "0.01", ".5", "1", "1.5", "9", "10", "010.5"},
      {"-1" + std::string(40, '0') + "1", "-1" + std::string(41, '0'), "-1e9", "2",
       std::string(40, '9') + ".9", "1" + std::string(40, '0')},
      {"0.1000001", "0.10000011", "0.1000002", "0.2"},
      {"0." + std::string(400, '0') + "1", "0." + std::string(399, '0') + "1"},
  };
  for (const auto& row : ascending)
    for (std::size_t i = 0; i + 1 < row.size(); ++i) {
      EXPECT_LT(ld::compare_numbers(row[i], row[i + 1]), 0) << row[i] << " < " << row[i + 1];
      EXPECT_GT(ld::compare_numbers(row[i + 1], row[i]), 0) << row[i + 1] << " > " << row[i];
    }
  // Zero however written, and what is no number at all; then equal values.
  const std::vector<std::vector<std::string>> equal = {
      {"0", "-0", "-", "", "abc", ".", "-.", "-0.000", "+5", " \t x", "00", "-00.0e7", "\r1"},
      {"1", "01", "1.", "1.000", " 1", "\t1x", "1.0.5", "\n1"},
      {"-.5", "-0.50", " -0.5000z"},
  };
  for (const auto& row : equal)
    for (const std::string& x : row)
      for (const std::string& y : row) EXPECT_EQ(ld::compare_numbers(x, y), 0) << x << " = " << y;
}

// GNU's C-locale "no thousands separator" is CHAR_MAX + 1, the byte 0x80 where char is
// signed: there GNU skips it in the integer part (not in the fraction).
TEST(Numbers, ByteSeparatorAsGnuHasIt) {
  const bool skipped = std::numeric_limits<char>::is_signed;
  EXPECT_EQ(ld::compare_numbers("1\x80" "000", "1000") == 0, skipped);
  EXPECT_EQ(ld::compare_numbers("\x80\x80" "0\x80" "7\x80.5", "7.5") == 0, skipped);
  EXPECT_EQ(ld::compare_numbers("-\x80" "5", "-5") == 0, skipped);
  EXPECT_EQ(ld::compare_numbers("1.\x80" "5", "1"), 0);
  EXPECT_EQ(ld::numeric_code("1\x80" "000") == ld::numeric_code("1000"), skipped);
}

// Numbers of many shapes: signs, blanks, leading and trailing zeros, long digit runs, values
// beyond double's range and below it.
std::string random_number(std::mt19937_64& rng) {
  const auto pick = [&](std::uint64_t n) { return rng() % n; };
  std::string s = std::string(pick(3), ' ');
  if (pick(3) == 0) s += '-';
  const auto digits = [&](std::size_t n) {
    std::string d;
    for (std::size_t i = 0; i < n; ++i) d += static_cast<char>('0' + (pick(3) == 0 ? 0 : pick(10)));
    return d;
  };
  const auto length = [&]() -> std::size_t {
    const std::size_t lengths[] = {0, 1, 2, 3, 17, 40};
    return pick(20) == 0 ? 400 : lengths[pick(6)];
  };
  s += digits(length());
  if (pick(2) == 0) s += '.' + (pick(20) == 0 ? std::string(330, '0') : "") + digits(length());
  if (pick(6) == 0) s += "x";
  return s;
}

TEST(Numbers, CodesNeverInvertTheOrder) {
  std::mt19937_64 rng(75);
  for (int i = 0; i < 20000; ++i) {
    const std::string a = random_number(rng), b = random_number(rng);
    const int c = ld::compare_numbers(a, b);
    const std::uint64_t x = ld::numeric_code(a), y = ld::numeric_code(b);
    EXPECT_TRUE(c < 0 ? x <= y : c > 0 ? x >= y : x == y) << "'" << a << "' vs '" << b << "'";
  }
  // Codes tell apart what a double tells apart, and -0 is 0.
  EXPECT_LT(ld::numeric_code("-1"), ld::numeric_code("-0.5"));
  EXPECT_LT(ld::numeric_code("-0.5"), ld::numeric_code("0"));
  EXPECT_EQ(ld::numeric_code("-0"), ld::numeric_code("abc"));
  EXPECT_LT(ld::numeric_code("0"), ld::numeric_code("0.001"));
  // Beyond double's range numbers tie, and the exact comparison orders them.
  EXPECT_EQ(ld::numeric_code("1" + std::string(400, '0')),
            ld::numeric_code("2" + std::string(400, '0')));
  EXPECT_EQ(ld::numeric_code("0." + std::string(400, '0') + "1"), ld::numeric_code("0"));
}

TEST(BytesCode, NeverInvertsTheOrder) {
  std::mt19937_64 rng(76);
  for (int i = 0; i < 20000; ++i) {
    std::string a(rng() % 12, '\0'), b(rng() % 12, '\0');
    for (char& ch : a) ch = static_cast<char>(rng() % 3 == 0 ? 0 : 0x7e + rng() % 4);
    for (char& ch : b) ch = static_cast<char>(rng() % 3 == 0 ? 0 : 0x7e + rng() % 4);
    const std::uint64_t x = ld::bytes_code(a), y = ld::bytes_code(b);
    EXPECT_TRUE(a < b ? x <= y : a > b ? x >= y : x == y);  // std::string compares unsigned
    // Without NUL bytes, the padding tells a short key from a longer one.
    const bool no_nul = a.find('\0') == a.npos && b.find('\0') == b.npos;
    EXPECT_TRUE(!no_nul || (x == y) == (a.substr(0, 8) == b.substr(0, 8)));
  }
  EXPECT_EQ(ld::bytes_code("ab"), 0x6162000000000000u);
  EXPECT_LT(ld::bytes_code("\x7f"), ld::bytes_code("\x80"));  // bytes are unsigned
}

TEST(LineComparator, GlobalOptionsGoOnlyToKeysWithoutFlags) {
  const gpusort::line_comparator compare(
      {.keys = {parse_line_key("1,1"), parse_line_key("2,2b"), parse_line_key("3,3r")},
       .numeric = true, .reverse = true, .skip_blanks = true});
  ASSERT_EQ(compare.keys().size(), 3u);
  EXPECT_TRUE(compare.keys()[0].numeric && compare.keys()[0].reverse &&
              compare.keys()[0].skip_blanks_start && compare.keys()[0].skip_blanks_end);
  EXPECT_FALSE(compare.keys()[1].numeric || compare.keys()[1].reverse);
  EXPECT_FALSE(compare.keys()[2].numeric || compare.keys()[2].skip_blanks_start);
  // No keys: -n and -b make the whole line one; -r alone does not.
  EXPECT_EQ(gpusort::line_comparator({.numeric = true}).keys().size(), 1u);
  EXPECT_EQ(gpusort::line_comparator({.skip_blanks = true}).keys().size(), 1u);
  EXPECT_TRUE(gpusort::line_comparator({.reverse = true}).keys().empty());
  // The last-resort comparison: reversed by -r, dropped by -s and -u when there are keys.
  EXPECT_LT(gpusort::line_comparator({.keys = {parse_line_key("1,1")}})("a x", "a y"), 0);
  EXPECT_GT(gpusort::line_comparator({.keys = {parse_line_key("1,1r")}, .reverse = true})(
                "a x", "a y"), 0);
  EXPECT_EQ(gpusort::line_comparator({.keys = {parse_line_key("1,1")}, .stable = true})(
                "a x", "a y"), 0);
  EXPECT_LT(gpusort::line_comparator({.stable = true})("a x", "a y"), 0);
  EXPECT_EQ(gpusort::line_comparator({.numeric = true, .unique = true})("01", "1"), 0);
}

// line_starts cuts a text of several megabytes into pieces for the cores: the same starts as
// one scan, whether the pieces end inside lines or on terminators, with and without a last
// terminator, and with lines longer than a piece.
TEST(LineStarts, ManyPiecesGiveOneScansStarts) {
  std::mt19937_64 rng(21);
  std::string text;
  while (text.size() < (std::size_t{6} << 20)) {
    const std::size_t length = rng() % 16 == 0 ? rng() % (3 << 20) / 8 : rng() % 200;
    text += std::string(length, static_cast<char>('a' + rng() % 26)) + '\n';
  }
  text += std::string(3 << 20, 'x') + '\n';  // one line across whole pieces
  for (const bool last_terminator : {true, false}) {
    if (!last_terminator) text += "no terminator";
    std::vector<std::uint64_t> expected{0};
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') expected.push_back(i + 1);
    if (!last_terminator) expected.push_back(text.size() + 1);
    EXPECT_EQ(gpusort::line_starts(text), expected);
  }
}

// gather_lines into a caller's buffer (the tool's output) on all cores: the bytes of the
// string version, in several pieces of lines; a buffer one byte short is refused.
TEST(SortLines, GathersIntoABufferOfItsSize) {
  std::mt19937_64 rng(22);
  std::string text;
  for (int i = 0; i < 60000; ++i) text += std::string(rng() % 40, static_cast<char>('a' + rng() % 26)) + '\n';
  text += "open last line";
  const auto starts = gpusort::line_starts(text);
  std::vector<std::uint64_t> lines(starts.size() - 1);
  for (std::uint64_t i = 0; i < lines.size(); ++i) lines[i] = lines.size() - 1 - i;
  lines.resize(lines.size() - 7);  // not every line
  const std::string expected = gpusort::gather_lines(text, starts, lines, ';');
  ASSERT_EQ(gpusort::gathered_bytes(starts, lines), expected.size());
  std::string out(expected.size() + 1, '#');  // poisoned, one byte more than needed
  EXPECT_EQ(gpusort::gather_lines(text, starts, lines, std::span<char>(out), ';'), expected.size());
  EXPECT_EQ(out, expected + '#');
  EXPECT_THROW(gpusort::gather_lines(text, starts, lines, std::span<char>(out).first(expected.size() - 1), ';'),
               gpusort::invalid_request);
  std::string one_line = "x";
  EXPECT_EQ(gpusort::gather_lines(text, starts, {}, std::span<char>(one_line).first(0)), 0u)
      << "no lines: nothing written";
}

TEST(SortLines, ReturnsTheOrderAndKeepsTheFirstOfEqualLines) {
  const std::string text = "b 1\na 2\nb 0\na 2";
  const auto starts = gpusort::line_starts(text);
  using v = std::vector<std::uint64_t>;
  EXPECT_EQ(gpusort::sort_lines(text, starts), (v{1, 3, 2, 0}));
  EXPECT_EQ(gpusort::sort_lines(text, starts, {.unique = true}), (v{1, 2, 0}));
  EXPECT_EQ(gpusort::sort_lines(text, starts, {.keys = {parse_line_key("1,1")}, .unique = true}),
            (v{1, 0}));
  EXPECT_EQ(gpusort::sort_lines(text, starts, {.keys = {parse_line_key("1,1")}, .reverse = true,
                                               .stable = true}),
            (v{0, 2, 1, 3}));
  EXPECT_EQ(gpusort::gather_lines(text, starts, v{3, 0}), "a 2\nb 1\n");
  EXPECT_EQ(gpusort::sort_text(""), "");
  EXPECT_EQ(gpusort::sort_text("b\na"), "a\nb\n");
  const std::vector<std::uint64_t> not_starts{0, 3, 3};
  EXPECT_THROW(gpusort::sort_lines(text, not_starts), gpusort::invalid_request);
  EXPECT_THROW(gpusort::sort_text(text, {.keys = {line_key{.field1 = 0}}}),
               gpusort::invalid_request);
}

// ----- Against GNU sort -----

// The line_order of a GNU sort command line made of the options sort_lines has.
line_order order_of(const std::vector<std::string>& args) {
  line_order order;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.starts_with("-k")) {
      order.keys.push_back(parse_line_key(a.size() > 2 ? a.substr(2) : args.at(++i)));
    } else if (a.starts_with("-t")) {
      order.separator = a.size() > 2 ? a[2] : args.at(++i).at(0);
    } else {
      for (const char flag : a.substr(1)) {
        switch (flag) {
          case 'b': order.skip_blanks = true; break;
          case 'n': order.numeric = true; break;
          case 'r': order.reverse = true; break;
          case 's': order.stable = true; break;
          case 'u': order.unique = true; break;
          case 'z': order.terminator = '\0'; break;
          default: ADD_FAILURE() << "no such option in these tests: " << a;
        }
      }
    }
  }
  return order;
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? "'\\''" : std::string(1, c);
  return q + "'";
}

std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 200)) {
    if (c == '\n') out += "\\n";
    else if (c == '\0') out += "\\0";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return s.size() > 200 ? out + "..." : out;
}

// A random GNU sort command line: global flags, maybe -t, and up to three keys with flags.
std::vector<std::string> random_args(std::mt19937_64& rng) {
  const auto pick = [&](std::uint64_t n) { return rng() % n; };
  std::vector<std::string> args;
  std::string flags = "-";
  for (const char f : std::string("rnusb"))
    if (pick(4) == 0) flags += f;
  if (flags.size() > 1) args.push_back(flags);
  if (pick(3) == 0) args.push_back("-t"s + ",: "[pick(3)]);
  const auto key_flags = [&] {
    std::string f;
    for (const char c : std::string("bnr"))
      if (pick(5) == 0) f += c;
    return f;
  };
  for (std::uint64_t k = pick(4); k > 0; --k) {
    std::string spec = std::to_string(1 + pick(4));
    if (pick(3) == 0) spec += "." + std::to_string(1 + pick(3));
    spec += key_flags();
    if (pick(3) != 0) {
      spec += "," + std::to_string(1 + pick(4));
      if (pick(3) == 0) spec += "." + std::to_string(pick(4));
      spec += key_flags();
    }
    args.push_back("-k" + spec);
  }
  return args;
}

// Each option alone and in the combinations GNU has special rules for.
const std::vector<std::vector<std::string>> fixed_cases = {
    {}, {"-r"}, {"-n"}, {"-nr"}, {"-u"}, {"-s"}, {"-b"}, {"-nu"}, {"-ru"}, {"-nrs"}, {"-bu"},
    {"-k2"}, {"-k2,2"}, {"-k2,2n"}, {"-k2,2nr"}, {"-k2b,2"}, {"-k1.2,1.3"}, {"-k2.2b,3.1b"},
    {"-k3,1"}, {"-k1,1n", "-k2"}, {"-k2,2r", "-r"}, {"-k2b", "-r"}, {"-n", "-k2,2"},
    {"-b", "-k2,2"}, {"-s", "-k1,1"}, {"-u", "-k1,1"}, {"-r", "-k2,2"}, {"-rs", "-k2,2"},
    {"-ru", "-k1,1"}, {"-su", "-k2n"}, {"-t,", "-k3,3n"}, {"-t,", "-k2,2", "-k1,1r"},
    {"-t,", "-k2n"}, {"-t:", "-k2"}, {"-t", " ", "-k2,2"}, {"-t,", "-u", "-k1,1"},
    {"-t,", "-k2.2,2.3"}, {"-k1,1.0"}, {"-k2,2.2b"}};

class LinesVsGnuSort : public gpusort::testing::ScratchDirTest {
 protected:
  // Sorts `text` with sort_text and with `LC_ALL=C sort ARGS` (plus -z if `records`), once
  // for each case, and expects the same bytes.
  void expect_gnu_output(const std::string& text,
                         const std::vector<std::vector<std::string>>& cases, bool records = false) {
    const std::string in = (dir_ / "in.txt").string(), out = (dir_ / "out.txt").string();
    std::ofstream(in, std::ios::binary) << text;
    for (std::vector<std::string> args : cases) {
      if (records) args.push_back("-z");
      std::string command = "LC_ALL=C sort";
      for (const std::string& a : args) command += " " + shell_quoted(a);
      command += " " + in + " > " + out;
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      std::ifstream file(out, std::ios::binary);
      const std::string expected{std::istreambuf_iterator<char>(file), {}};
      const std::string got = gpusort::sort_text(text, order_of(args));
      if (got == expected) continue;
      std::size_t at = 0;
      while (at < got.size() && at < expected.size() && got[at] == expected[at]) ++at;
      const std::size_t from = expected.rfind(records ? '\0' : '\n', at == 0 ? 0 : at - 1);
      const std::size_t line_begin = from == std::string::npos ? 0 : from + 1;
      ADD_FAILURE() << command << "\nfirst difference at byte " << at << " of " << expected.size()
                    << " (got " << got.size() << ")\n  GNU: "
                    << printable(std::string_view(expected).substr(line_begin))
                    << "\n  ours: "
                    << printable(std::string_view(got).substr(std::min(line_begin, got.size())));
      return;
    }
  }

  void expect_gnu_output_everywhere(const std::string& text, std::uint64_t seed, int random_cases,
                                    bool records = false) {
    std::vector<std::vector<std::string>> cases = fixed_cases;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < random_cases; ++i) cases.push_back(random_args(rng));
    expect_gnu_output(text, cases, records);
  }
};

std::string random_word(std::mt19937_64& rng, std::size_t max_length = 6) {
  std::string w(rng() % (max_length + 1), 'a');
  for (char& c : w) c = static_cast<char>('a' + rng() % 5);
  return w;
}

std::string blanks(std::mt19937_64& rng) { return std::string(rng() % 3, " \t"[rng() % 2]); }

TEST_F(LinesVsGnuSort, RandomWords) {
  std::mt19937_64 rng(1);
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    text += blanks(rng);
    for (std::uint64_t w = 1 + rng() % 4; w > 0; --w)
      text += random_word(rng) + (w > 1 ? " " + blanks(rng) : blanks(rng));
    text += '\n';
  }
  expect_gnu_output_everywhere(text, 101, 150);
}

TEST_F(LinesVsGnuSort, CsvWithNumericColumns) {
  std::mt19937_64 rng(2);
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    text += random_word(rng, 3) + "," + random_number(rng) + "," + random_number(rng);
    if (rng() % 2) text += "," + random_word(rng, 2) + ":" + random_number(rng);
    text += '\n';
  }
  expect_gnu_output_everywhere(text, 102, 150);
}

TEST_F(LinesVsGnuSort, NumbersWithSignsBlanksAndDecimals) {
  std::mt19937_64 rng(3);
  std::string text;
  const std::vector<std::string> odd = {"-", ".", "-.", "-0", "0", "+4", "1e5", "abc", "",
                                        " ", "1,000", "0x10", "-.0", "\t-7", " - 7", "5.",
                                        "1\x80" "000", "\x80-5", "-\x80" "5", "5.\x80" "1"};
  for (int i = 0; i < 1500; ++i) {
    text += rng() % 4 == 0 ? odd[rng() % odd.size()] : random_number(rng);
    if (rng() % 3 == 0) text += " " + random_number(rng);
    text += '\n';
  }
  expect_gnu_output_everywhere(text, 103, 150);
}

TEST_F(LinesVsGnuSort, HeavyDuplicates) {
  std::mt19937_64 rng(4);
  const std::vector<std::string> first = {"a", "b", "a ", "10", "9", "-1", " b"};
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += first[rng() % first.size()] + " " + std::to_string(rng() % 3) + " " +
            std::string(1, "xyz"[rng() % 3]) + "\n";
  expect_gnu_output_everywhere(text, 104, 100);
}

// Empty and blank lines, CRLF, NUL bytes, bytes above 0x7f, no final newline.
TEST_F(LinesVsGnuSort, AwkwardBytes) {
  std::mt19937_64 rng(5);
  const std::vector<std::string> pieces = {"", " ", "\t", "\r", "\0"s, "\x80", "\xff", "a",
                                           "b", "1", "-2", ".5", ",", ":", "  "};
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    for (std::uint64_t p = rng() % 6; p > 0; --p) text += pieces[rng() % pieces.size()];
    text += rng() % 4 == 0 ? "\r\n" : "\n";
  }
  text += "no final newline";
  expect_gnu_output_everywhere(text, 105, 150);
  expect_gnu_output("", {{}, {"-u"}, {"-n"}});
  expect_gnu_output("\n", {{}, {"-u"}, {"-n"}, {"-k2"}});
  expect_gnu_output("x", {{}, {"-r"}});
}

// -z: records end in NUL and may hold newlines, which count as blanks.
TEST_F(LinesVsGnuSort, NulTerminatedRecords) {
  std::mt19937_64 rng(6);
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    for (std::uint64_t w = 1 + rng() % 3; w > 0; --w)
      text += std::string(rng() % 2, "\n "[rng() % 2]) + random_word(rng, 3) + " " +
              random_number(rng) + (rng() % 3 == 0 ? "\n" : " ");
    text += '\0';
  }
  text += "last record, no NUL";
  expect_gnu_output_everywhere(text, 106, 100, true);
}

// Runs of lines whose first 8 bytes are equal (one code), of every length: short ones, ones
// across the pieces the cores take, and one of 40,000 lines that is ordered on all cores.
TEST_F(LinesVsGnuSort, LongRunsOfEqualCodes) {
  std::mt19937_64 rng(8);
  std::vector<std::string> lines;
  for (int group = 0; lines.size() < 100000; ++group) {
    const std::string prefix = "group" + std::to_string(100 + group % 150);  // 8 bytes
    const std::size_t count = group == 7 ? 40000 : 1 + rng() % 3000;
    for (std::size_t i = 0; i < count; ++i)
      lines.push_back(prefix + random_word(rng, 4) + " " + random_number(rng));
  }
  std::shuffle(lines.begin(), lines.end(), rng);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  expect_gnu_output(text, {{}, {"-r"}, {"-u"}, {"-s", "-k1.1,1.8"}, {"-k1.1,1.8", "-k2,2n"},
                           {"-u", "-k1.1,1.9"}});
}

// A log's lines: 60,000 that share their first 17 bytes (a timestamp's date and hour), so the
// codes of the first 8 bytes make one run, refined by the next 8 and the 8 after; and lines
// equal for longer than the refinement goes (130 bytes), which the comparison orders.
TEST_F(LinesVsGnuSort, LongCommonPrefixesAreRefined) {
  std::mt19937_64 rng(9);
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    const int second = static_cast<int>(rng() % 60), micro = static_cast<int>(rng() % 1000);
    text += "2026-11-28 12:34:" + std::to_string(10 + second) + "." + std::to_string(100 + micro) +
            " " + random_word(rng) + "\n";
  }
  for (int i = 0; i < 20000; ++i) text += std::string(130, 'p') + random_word(rng) + "\n";
  expect_gnu_output(text, {{}, {"-r"}, {"-u"}, {"-k1,1"}, {"-s", "-k2,2"}, {"-k3", "-r"}});
}

// Lines of 1 MB that share long prefixes, so that only the exact comparison tells them apart.
TEST_F(LinesVsGnuSort, LongLines) {
  std::mt19937_64 rng(7);
  std::string text;
  for (int i = 0; i < 12; ++i) {
    text += std::string(1 << 20, 'a') + random_word(rng) + " " + random_number(rng) + "\n";
    text += random_word(rng) + "\n";
  }
  expect_gnu_output(text, {{}, {"-r"}, {"-u"}, {"-k2,2n"}, {"-k1.1048577"}, {"-s", "-k1.3,1.9"},
                           {"-n"}, {"-b", "-k2r"}});
}

}  // namespace
