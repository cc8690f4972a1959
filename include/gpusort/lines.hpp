// Text lines sorted as `LC_ALL=C sort` sorts them: bytes in the C locale's order, GNU sort's
// keys (-k with the flags b, n, r; -t), -n, -r, -u, -s, -b and -z, with GNU's output byte for
// byte (docs/cpp.md, "Text lines").
//
// The lines' first keys become 64-bit codes that keep their order (the first 8 bytes of a byte
// key, big-endian; a number's correctly rounded double), sorted with the line indices by
// gpusort::sort (on the GPU when there is one, else the CPU backend); a long run of equal
// codes of a byte key is sorted again by its keys' next 8 bytes (up to 128 bytes in); then
// each run of equal codes is ordered by GNU's comparison, and -u keeps the first line of each
// run of equal keys. The host's steps run on all cores.
//
//   std::string out = gpusort::sort_text(csv, {.keys = {gpusort::parse_line_key("3,3n")},
//                                              .separator = ','});  // sort -t, -k3,3n
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpusort {

// One -k POS1[,POS2] with its flags. Fields and characters count from 1, as GNU's do. The key
// runs from character char1 of field field1 to character char2 of field field2 (char2 = 0: to
// the field's end; field2 = 0: no POS2, to the line's end).
struct line_key {
  std::size_t field1 = 1, char1 = 1, field2 = 0, char2 = 0;
  bool numeric = false;            // n
  bool reverse = false;            // r
  bool skip_blanks_start = false;  // b after POS1: POS1 counts from the field's first non-blank
  bool skip_blanks_end = false;    // b after POS2: likewise for POS2 (only with char2 > 0)
};

// What a `sort` command line asks for. A key with no flags at all takes the global -n, -r and
// -b; a key with any flag takes none of them (GNU's rule). With no keys, -n or -b make the
// whole line the key.
struct line_order {
  std::vector<line_key> keys;     // -k, in order of precedence
  std::optional<char> separator;  // -t; none: a field is a run of non-blanks after its blanks
  bool numeric = false;           // -n
  bool reverse = false;           // -r: the keys that take it and the last-resort comparison
  bool skip_blanks = false;       // -b
  bool unique = false;            // -u: the first line (in input order) of each equal run
  bool stable = false;            // -s: no last-resort comparison of whole lines
  char terminator = '\n';         // -z: '\0'
};

// Parses GNU's -k argument: F[.C][bnr][,F[.C][bnr]]. Throws gpusort::invalid_request
// (gpusort/error.hpp) for anything else, and for flags GNU has but sort_lines does not (d, f,
// g, h, i, M, R, V).
line_key parse_line_key(std::string_view spec);

// Where each line of `text` starts, and one entry more: line i is the bytes
// [starts[i], starts[i + 1] - 1), its terminator excluded. A last line without a terminator
// counts (the entry after it is text.size() + 1, as if it had one). Empty text: {0}.
std::vector<std::uint64_t> line_starts(std::string_view text, char terminator = '\n');

// Line i of `text` without its terminator.
std::string_view line_at(std::string_view text, std::span<const std::uint64_t> starts,
                         std::uint64_t i);

// The order in which GNU sort outputs the lines (indices into `starts`); with -u only those it
// keeps. Throws gpusort::invalid_request for starts that are not line_starts' shape or keys
// with a field or start character of 0.
std::vector<std::uint64_t> sort_lines(std::string_view text,
                                      std::span<const std::uint64_t> starts,
                                      const line_order& order = {});

// The lines named by `lines`, in that order, each followed by `terminator`.
std::string gather_lines(std::string_view text, std::span<const std::uint64_t> starts,
                         std::span<const std::uint64_t> lines, char terminator = '\n');
// The same into `out`, which must hold gathered_bytes(starts, lines) (else invalid_request);
// the bytes written. On all cores.
std::uint64_t gathered_bytes(std::span<const std::uint64_t> starts,
                             std::span<const std::uint64_t> lines);
std::uint64_t gather_lines(std::string_view text, std::span<const std::uint64_t> starts,
                           std::span<const std::uint64_t> lines, std::span<char> out,
                           char terminator = '\n');

// The bytes `LC_ALL=C sort` writes for `text`: line_starts, sort_lines and gather_lines.
std::string sort_text(std::string_view text, const line_order& order = {});

// GNU sort's comparison of two lines (without terminators): negative, 0 or positive. With
// -u or -s and keys, lines whose keys are equal compare equal; otherwise whole lines decide.
class line_comparator {
 public:
  explicit line_comparator(const line_order& order);
  int operator()(std::string_view a, std::string_view b) const;
  // The keys compared, in order, after the global options were handed to the keys that take
  // them; empty when only whole lines are compared.
  const std::vector<line_key>& keys() const { return keys_; }

 private:
  std::vector<line_key> keys_;
  std::optional<char> separator_;
  bool last_resort_;
  bool reverse_;
};

// The pieces of the comparison and of the codes, for tests and for other front ends.
namespace lines_detail {

// The part of `line` that `key` selects (GNU's begfield and limfield); empty where the end
// comes before the start.
std::string_view key_text(std::string_view line, const line_key& key,
                          std::optional<char> separator);

// -n: leading blanks, an optional '-', digits with an optional '.'; compared by exact
// decimal value; anything else is 0, and -0 is 0. Where char is signed, bytes 0x80 in the
// integer part are skipped, as GNU sort skips them there (src/lines.cpp says why).
int compare_numbers(std::string_view a, std::string_view b);

// Codes that never invert the order: a < b implies code(a) <= code(b).
std::uint64_t bytes_code(std::string_view key);    // the first 8 bytes, big-endian, 0-padded
std::uint64_t numeric_code(std::string_view key);  // the code of the number's nearest double

}  // namespace lines_detail

}  // namespace gpusort
