// PNG figures of benchmark CSVs: the canvas, the PNG encoder, a bitmap font, and the two
// figures (rate against n, spread across distributions). See plot.hpp.
#include "plot.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numbers>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "cli.hpp"
#include "records.hpp"

namespace gpusort::tools {

using namespace plot_detail;

// ---- canvas -------------------------------------------------------------------------

image::image(int width, int height, color background)
    : width_(width),
      height_(height),
      pixels_(static_cast<std::size_t>(width) * static_cast<std::size_t>(height), background) {
  if (width < 1 || height < 1) throw std::invalid_argument("an image needs at least one pixel");
}

void image::set(int x, int y, color c) {
  if (x >= 0 && y >= 0 && x < width_ && y < height_)
    pixels_[static_cast<std::size_t>(y) * width_ + x] = c;
}

void image::blend(int x, int y, color c, double coverage) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const color old = at(x, y);
  const auto mix = [coverage](std::uint8_t from, std::uint8_t to) {
    return static_cast<std::uint8_t>(std::lround(from + (to - from) * coverage));
  };
  set(x, y, {mix(old.r, c.r), mix(old.g, c.g), mix(old.b, c.b)});
}

void image::fill_rect(int x0, int y0, int x1, int y1, color c) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, width_);
  y1 = std::min(y1, height_);
  for (int y = y0; y < y1; ++y)
    std::fill_n(pixels_.begin() + static_cast<std::ptrdiff_t>(y) * width_ + x0,
                std::max(x1 - x0, 0), c);
}

// ---- checksums ----------------------------------------------------------------------

namespace {

// The reflected CRC-32 polynomial 0x04C11DB7, one table entry per byte value.
constexpr std::array<std::uint32_t, 256> crc_table = [] {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    table[byte] = crc;
  }
  return table;
}();

}  // namespace

std::uint32_t crc32(std::span<const std::uint8_t> bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::uint8_t byte : bytes) crc = crc_table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t adler32(std::span<const std::uint8_t> bytes) {
  constexpr std::uint32_t modulus = 65521;
  // 5552 bytes is the most that can be summed before the 32-bit sums could overflow.
  constexpr std::size_t run = 5552;
  std::uint32_t a = 1, b = 0;
  for (std::size_t start = 0; start < bytes.size(); start += run) {
    for (std::uint8_t byte : bytes.subspan(start, std::min(run, bytes.size() - start))) {
      a += byte;
      b += a;
    }
    a %= modulus;
    b %= modulus;
  }
  return (b << 16) | a;
}

// ---- PNG ----------------------------------------------------------------------------

namespace {

void append_be32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>(value >> shift));
}

// length, type, data, CRC of type and data.
void append_chunk(std::vector<std::uint8_t>& png, std::string_view type,
                  const std::vector<std::uint8_t>& data) {
  append_be32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t type_at = png.size();
  png.insert(png.end(), type.begin(), type.end());
  png.insert(png.end(), data.begin(), data.end());
  append_be32(png, crc32(std::span(png).subspan(type_at)));
}

// Bits into bytes from the least significant bit up, as deflate packs them (RFC 1951, 3.1.1).
class bit_writer {
 public:
  explicit bit_writer(std::vector<std::uint8_t>& out) : out_(out) {}

  // The low `count` bits of `value`, least significant first: header fields and extra bits.
  void put(std::uint32_t value, int count) {
    buffer_ |= std::uint64_t{value & ((1u << count) - 1)} << filled_;
    for (filled_ += count; filled_ >= 8; filled_ -= 8, buffer_ >>= 8)
      out_.push_back(static_cast<std::uint8_t>(buffer_));
  }
  // A Huffman code of `length` bits, which deflate packs from its most significant bit.
  void put_code(std::uint32_t code, int length) {
    std::uint32_t reversed = 0;
    for (int i = 0; i < length; ++i) reversed |= ((code >> i) & 1) << (length - 1 - i);
    put(reversed, length);
  }
  // Fills the last byte with zero bits.
  void flush() {
    if (filled_ > 0) put(0, 8 - filled_);
  }

 private:
  std::vector<std::uint8_t>& out_;
  std::uint64_t buffer_ = 0;
  int filled_ = 0;
};

// A literal byte (0-255), the end of the block (256) or a length symbol (257-285) in the fixed
// literal/length code (RFC 1951, 3.2.6).
void put_literal_length(bit_writer& bits, unsigned symbol) {
  if (symbol < 144)
    bits.put_code(0x30 + symbol, 8);
  else if (symbol < 256)
    bits.put_code(0x190 + symbol - 144, 9);
  else if (symbol < 280)
    bits.put_code(symbol - 256, 7);
  else
    bits.put_code(0xC0 + symbol - 280, 8);
}

// A match length, 3 to 258 (RFC 1951, 3.2.5). 3-10 and 258 have a symbol each; in between,
// each group of 4 symbols covers twice the lengths of the group before, one more extra bit,
// so the highest set bit of length - 3 picks the group and the two bits below it the symbol.
void put_length(bit_writer& bits, unsigned length) {
  if (length == 258) return put_literal_length(bits, 285);
  if (length <= 10) return put_literal_length(bits, 254 + length);
  const unsigned offset = length - 3;          // 8 to 254
  const int top = std::bit_width(offset) - 1;  // 3 to 7
  const int extra = top - 2;                   // 1 to 5 extra bits
  put_literal_length(bits, 257 + 4 * (top - 1) + ((offset >> extra) & 3));
  bits.put(offset, extra);
}

// A match distance, 1 to 32768, by the same scheme: 1-4 have a code each, then each pair of
// codes covers twice the distances of the pair before. Distance codes are 5 bits, fixed.
void put_distance(bit_writer& bits, unsigned distance) {
  if (distance <= 4) return bits.put_code(distance - 1, 5);
  const unsigned offset = distance - 1;        // 4 to 32767
  const int top = std::bit_width(offset) - 1;  // 2 to 14
  const int extra = top - 1;                   // 1 to 13 extra bits
  bits.put_code(2 * top + ((offset >> extra) & 1), 5);
  bits.put(offset, extra);
}

constexpr std::size_t window = 32768;  // the farthest a match may reach back
constexpr std::size_t shortest_match = 3, longest_match = 258;
constexpr int hash_bits = 15;
// How many earlier places of the same 3 bytes are tried: figures gain little beyond this.
constexpr int chain_steps = 32;

// One deflate block (BFINAL set) of `data` in fixed Huffman codes. At each position the
// longest match wins, the nearest of equally long ones (fewer extra bits): among the earlier
// places of the next 3 bytes (runs are found there at distance 1) and `row_length` bytes back.
void deflate_fixed(std::span<const std::uint8_t> data, std::size_t row_length,
                   std::vector<std::uint8_t>& out) {
  bit_writer bits(out);
  bits.put(1, 1);  // BFINAL
  bits.put(1, 2);  // BTYPE 01: fixed Huffman codes

  // The places of 3-byte sequences in hash chains: head[hash] is the latest, previous[place %
  // window] the one before it with the same hash. -1: none.
  constexpr std::ptrdiff_t none = -1;
  std::vector<std::ptrdiff_t> head(std::size_t{1} << hash_bits, none), previous(window, none);
  const auto hash_at = [&](std::size_t at) {
    const std::uint32_t three = std::uint32_t{data[at]} << 16 | std::uint32_t{data[at + 1]} << 8 |
                                data[at + 2];
    return (three * 2654435761u) >> (32 - hash_bits);  // Knuth's multiplicative hash
  };
  const auto insert = [&](std::size_t at) {
    if (at + shortest_match > data.size()) return;
    const std::uint32_t hash = hash_at(at);
    previous[at % window] = head[hash];
    head[hash] = static_cast<std::ptrdiff_t>(at);
  };

  for (std::size_t at = 0; at < data.size();) {
    const std::size_t most = std::min(longest_match, data.size() - at);
    std::size_t best_length = 0, best_distance = 0;
    const auto try_match = [&](std::size_t from) {
      std::size_t length = 0;
      while (length < most && data[from + length] == data[at + length]) ++length;
      if (length > best_length || (length == best_length && at - from < best_distance)) {
        best_length = length;
        best_distance = at - from;
      }
    };
    if (most >= shortest_match) {
      int steps = chain_steps;
      // Every place in a chain is older than the one before, and window bytes back at most
      // (previous[] has not been overwritten that far), so the walk stops.
      for (std::ptrdiff_t from = head[hash_at(at)];
           from != none && at - static_cast<std::size_t>(from) <= window && steps-- > 0;
           from = previous[static_cast<std::size_t>(from) % window])
        try_match(static_cast<std::size_t>(from));
      if (row_length > 0 && row_length <= std::min(at, window)) try_match(at - row_length);
    }
    if (best_length < shortest_match) {
      put_literal_length(bits, data[at]);
      insert(at++);
      continue;
    }
    put_length(bits, static_cast<unsigned>(best_length));
    put_distance(bits, static_cast<unsigned>(best_distance));
    for (const std::size_t end = at + best_length; at < end; ++at) insert(at);
  }
  put_literal_length(bits, 256);  // the end of the block
  bits.flush();
}

// `data` in stored deflate blocks (BTYPE 00) of at most 65,535 bytes, the last with BFINAL.
void deflate_stored(std::span<const std::uint8_t> data, std::vector<std::uint8_t>& out) {
  constexpr std::size_t most = 65535;  // LEN is 16 bits
  std::size_t start = 0;
  do {
    const std::size_t length = std::min(most, data.size() - start);
    const bool last = start + length == data.size();
    out.push_back(last ? 1 : 0);  // BFINAL, BTYPE 00, then padding to the byte boundary
    out.push_back(static_cast<std::uint8_t>(length));
    out.push_back(static_cast<std::uint8_t>(length >> 8));
    out.push_back(static_cast<std::uint8_t>(~length));
    out.push_back(static_cast<std::uint8_t>(~length >> 8));
    const auto first = data.begin() + static_cast<std::ptrdiff_t>(start);
    out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(length));
    start += length;
  } while (start < data.size());
}

std::uint32_t packed(color c) {
  return (std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | c.b;
}

}  // namespace

std::vector<std::uint8_t> plot_detail::zlib_compress(std::span<const std::uint8_t> data,
                                                     std::size_t row_length) {
  // CMF 0x78: deflate with a 32 KiB window; FLG 0x01 makes CMF * 256 + FLG a multiple of 31.
  std::vector<std::uint8_t> out{0x78, 0x01};
  deflate_fixed(data, row_length, out);
  // Fixed codes spend 8 or 9 bits on a literal: data without repeats is smaller stored, at
  // 5 bytes per block of 65,535.
  const std::size_t blocks = std::max<std::size_t>(1, (data.size() + 65534) / 65535);
  if (out.size() - 2 > data.size() + 5 * blocks) {
    out.resize(2);
    deflate_stored(data, out);
  }
  append_be32(out, adler32(data));
  return out;
}

std::vector<std::uint8_t> encode_png(const image& img) {
  // The palette, in order of first appearance, while there are at most 256 colors.
  std::unordered_map<std::uint32_t, std::uint8_t> index_of;
  std::vector<color> palette;
  for (int y = 0; y < img.height() && palette.size() <= 256; ++y) {
    for (int x = 0; x < img.width() && palette.size() <= 256; ++x) {
      const color c = img.at(x, y);
      if (index_of.try_emplace(packed(c), static_cast<std::uint8_t>(palette.size())).second)
        palette.push_back(c);
    }
  }
  const bool indexed = palette.size() <= 256;
  // Every scanline starts with its filter type, 0 (none): the row above is matched as it is.
  const std::size_t scanline = 1 + static_cast<std::size_t>(img.width()) * (indexed ? 1 : 3);
  std::vector<std::uint8_t> raw;
  raw.reserve(static_cast<std::size_t>(img.height()) * scanline);
  for (int y = 0; y < img.height(); ++y) {
    raw.push_back(0);
    for (int x = 0; x < img.width(); ++x) {
      const color c = img.at(x, y);
      if (indexed)
        raw.push_back(index_of.at(packed(c)));
      else
        raw.insert(raw.end(), {c.r, c.g, c.b});
    }
  }

  std::vector<std::uint8_t> png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<std::uint8_t> header;
  append_be32(header, static_cast<std::uint32_t>(img.width()));
  append_be32(header, static_cast<std::uint32_t>(img.height()));
  // Bit depth 8; color type 3 (palette) or 2 (RGB); deflate; filter method 0; no interlace.
  header.insert(header.end(), {8, static_cast<std::uint8_t>(indexed ? 3 : 2), 0, 0, 0});
  append_chunk(png, "IHDR", header);
  if (indexed) {
    std::vector<std::uint8_t> entries;
    for (const color& c : palette) entries.insert(entries.end(), {c.r, c.g, c.b});
    append_chunk(png, "PLTE", entries);
  }
  append_chunk(png, "IDAT", plot_detail::zlib_compress(raw, scanline));
  append_chunk(png, "IEND", {});
  return png;
}

color algorithm_color(std::size_t index) {
  static constexpr std::array<color, 16> colors{{{0, 90, 200},
                                                 {230, 120, 0},
                                                 {0, 150, 60},
                                                 {210, 30, 40},
                                                 {130, 70, 180},
                                                 {125, 80, 40},
                                                 {225, 80, 170},
                                                 {90, 90, 90},
                                                 {165, 165, 0},
                                                 {0, 170, 190},
                                                 {0, 40, 110},
                                                 {245, 180, 0},
                                                 {100, 200, 80},
                                                 {150, 0, 40},
                                                 {120, 140, 255},
                                                 {255, 110, 110}}};
  return colors[index % colors.size()];
}

namespace {

// ---- font ---------------------------------------------------------------------------

// Printable ASCII (32 to 126) in cells 5 pixels wide and 9 high: capitals and digits on rows
// 0-6, the lowercase x-height on rows 2-6, descenders on rows 7-8. Rows top to bottom, '#'
// for a pixel; rows left out are blank.
constexpr std::array<std::string_view, 95> glyph_rows = {
    "",                                                       // space
    "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",              // !
    ".#.#. .#.#. .#.#.",                                      // "
    ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",              // #
    "..#.. .#### #.#.. .###. ..#.# ####. ..#..",              // $
    "##... ##..# ...#. ..#.. .#... #..## ...##",              // %
    ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#",              // &
    "..#.. ..#.. .#...",                                      // '
    "...#. ..#.. .#... .#... .#... ..#.. ...#.",              // (
    ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",              // )
    "..... ..#.. #.#.# .###. #.#.# ..#..",                    // *
    "..... ..#.. ..#.. ##### ..#.. ..#..",                    // +
    "..... ..... ..... ..... ..... ..##. ..##. ...#. ..#..",  // ,
    "..... ..... ..... .###.",                                // -
    "..... ..... ..... ..... ..... .##.. .##..",              // .
    "..... ....# ...#. ..#.. .#... #....",                    // /
    ".###. #...# #..## #.#.# ##..# #...# .###.",              // 0
    "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",              // 1
    ".###. #...# ....# ...#. ..#.. .#... #####",              // 2
    "##### ...#. ..#.. ...#. ....# #...# .###.",              // 3
    "...#. ..##. .#.#. #..#. ##### ...#. ...#.",              // 4
    "##### #.... ####. ....# ....# #...# .###.",              // 5
    "..##. .#... #.... ####. #...# #...# .###.",              // 6
    "##### ....# ...#. ..#.. .#... .#... .#...",              // 7
    ".###. #...# #...# .###. #...# #...# .###.",              // 8
    ".###. #...# #...# .#### ....# ...#. .##..",              // 9
    "..... .##.. .##.. ..... .##.. .##..",                    // :
    "..... .##.. .##.. ..... .##.. .##.. ..#.. .#...",        // ;
    "...#. ..#.. .#... #.... .#... ..#.. ...#.",              // <
    "..... ..... ##### ..... #####",                          // =
    ".#... ..#.. ...#. ....# ...#. ..#.. .#...",              // >
    ".###. #...# ....# ...#. ..#.. ..... ..#..",              // ?
    ".###. #...# ....# .##.# #.#.# #.#.# .###.",              // @
    ".###. #...# #...# ##### #...# #...# #...#",              // A
    "####. #...# #...# ####. #...# #...# ####.",              // B
    ".###. #...# #.... #.... #.... #...# .###.",              // C
    "###.. #..#. #...# #...# #...# #..#. ###..",              // D
    "##### #.... #.... ####. #.... #.... #####",              // E
    "##### #.... #.... ####. #.... #.... #....",              // F
    ".###. #...# #.... #.### #...# #...# .####",              // G
    "#...# #...# #...# ##### #...# #...# #...#",              // H
    ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",              // I
    "..### ...#. ...#. ...#. ...#. #..#. .##..",              // J
    "#...# #..#. #.#.. ##... #.#.. #..#. #...#",              // K
    "#.... #.... #.... #.... #.... #.... #####",              // L
    "#...# ##.## #.#.# #.#.# #...# #...# #...#",              // M
    "#...# #...# ##..# #.#.# #..## #...# #...#",              // N
    ".###. #...# #...# #...# #...# #...# .###.",              // O
    "####. #...# #...# ####. #.... #.... #....",              // P
    ".###. #...# #...# #...# #.#.# #..#. .##.#",              // Q
    "####. #...# #...# ####. #.#.. #..#. #...#",              // R
    ".#### #.... #.... .###. ....# ....# ####.",              // S
    "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",              // T
    "#...# #...# #...# #...# #...# #...# .###.",              // U
    "#...# #...# #...# #...# #...# .#.#. ..#..",              // V
    "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",              // W
    "#...# #...# .#.#. ..#.. .#.#. #...# #...#",              // X
    "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",              // Y
    "##### ....# ...#. ..#.. .#... #.... #####",              // Z
    ".###. .#... .#... .#... .#... .#... .###.",              // [
    "..... #.... .#... ..#.. ...#. ....#",                    // backslash
    ".###. ...#. ...#. ...#. ...#. ...#. .###.",              // ]
    "..#.. .#.#. #...#",                                      // ^
    "..... ..... ..... ..... ..... ..... ..... #####",        // _ (below the baseline)
    ".#... ..#.. ...#.",                                      // `
    "..... ..... .###. ....# .#### #...# .####",              // a
    "#.... #.... #.##. ##..# #...# #...# ####.",              // b
    "..... ..... .###. #.... #.... #...# .###.",              // c
    "....# ....# .##.# #..## #...# #...# .####",              // d
    "..... ..... .###. #...# ##### #.... .###.",              // e
    "..##. .#..# .#... ###.. .#... .#... .#...",              // f
    "..... ..... .#### #...# #...# #...# .#### ....# .###.",  // g
    "#.... #.... #.##. ##..# #...# #...# #...#",              // h
    "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.",              // i
    "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##..",  // j
    "#.... #.... #..#. #.#.. ##... #.#.. #..#.",              // k
    ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",              // l
    "..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#",              // m
    "..... ..... #.##. ##..# #...# #...# #...#",              // n
    "..... ..... .###. #...# #...# #...# .###.",              // o
    "..... ..... ####. #...# #...# #...# ####. #.... #....",  // p
    "..... ..... .#### #...# #...# #...# .#### ....# ....#",  // q
    "..... ..... #.##. ##..# #.... #.... #....",              // r
    "..... ..... .#### #.... .###. ....# ####.",              // s
    ".#... .#... ###.. .#... .#... .#..# ..##.",              // t
    "..... ..... #...# #...# #...# #..## .##.#",              // u
    "..... ..... #...# #...# #...# .#.#. ..#..",              // v
    "..... ..... #...# #...# #.#.# #.#.# .#.#.",              // w
    "..... ..... #...# .#.#. ..#.. .#.#. #...#",              // x
    "..... ..... #...# #...# #...# #...# .#### ....# .###.",  // y
    "..... ..... ##### ...#. ..#.. .#... #####",              // z
    "...#. ..#.. ..#.. .#... ..#.. ..#.. ...#.",              // {
    "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",              // |
    ".#... ..#.. ..#.. ...#. ..#.. ..#.. .#...",              // }
    "..... ..... .#... #.#.# ...#.",                          // ~
};

constexpr int cap_height = 7;
constexpr int glyph_advance = glyph_width + 1;  // one blank column between letters

// Evaluated at compile time, so a malformed row fails the build.
constexpr std::array<glyph, 95> parse_font() {
  std::array<glyph, 95> font{};
  for (std::size_t c = 0; c < glyph_rows.size(); ++c) {
    std::string_view rows = glyph_rows[c];
    for (int row = 0; !rows.empty(); ++row) {
      if (row == glyph_height || rows.size() < glyph_width ||
          (rows.size() > glyph_width && rows[glyph_width] != ' '))
        throw std::logic_error("a glyph row is not 5 pixels");
      for (int x = 0; x < glyph_width; ++x) {
        if (rows[x] == '#')
          font[c][row] |= static_cast<std::uint8_t>(1 << (glyph_width - 1 - x));
        else if (rows[x] != '.')
          throw std::logic_error("a glyph row holds something other than '#' and '.'");
      }
      rows.remove_prefix(std::min<std::size_t>(rows.size(), glyph_width + 1));
    }
  }
  return font;
}
constexpr std::array<glyph, 95> font = parse_font();

bool glyph_pixel(char c, int x, int y) { return (glyph_of(c)[y] >> (glyph_width - 1 - x)) & 1; }

// Whether the pixel (u, v) of `text` drawn at `scale` from (0, 0) is set.
bool text_pixel(std::string_view text, int scale, int u, int v) {
  if (u < 0 || v < 0 || v >= glyph_height * scale) return false;
  const std::size_t index = static_cast<std::size_t>(u / (glyph_advance * scale));
  const int column = u % (glyph_advance * scale) / scale;
  return index < text.size() && column < glyph_width && glyph_pixel(text[index], column, v / scale);
}

// `text` turned counterclockwise by `degrees`, placed so that the point of the text at
// `anchor` (that fraction of its width, halfway up its capitals) lands on (x, y). Edges are
// smoothed: each pixel is covered by the share of its 4x4 sample points that fall on the text.
void draw_text_rotated(image& img, int x, int y, std::string_view text, int scale, color c,
                       double degrees, double anchor) {
  const double angle = degrees * std::numbers::pi / 180, cosine = std::cos(angle),
               sine = std::sin(angle);
  const double anchor_u = anchor * text_width(text, scale), anchor_v = cap_height * scale / 2.0;
  // The canvas offset of the text point (u, v) from (x, y) is (du cos + dv sin, dv cos - du sin)
  // with du = u - anchor_u, dv = v - anchor_v; the corners bound the pixels to visit.
  double left = 1e9, right = -1e9, top = 1e9, bottom = -1e9;
  for (const double u : {0.0, double(text_width(text, scale))}) {
    for (const double v : {0.0, double(glyph_height * scale)}) {
      const double du = u - anchor_u, dv = v - anchor_v;
      left = std::min(left, du * cosine + dv * sine);
      right = std::max(right, du * cosine + dv * sine);
      top = std::min(top, dv * cosine - du * sine);
      bottom = std::max(bottom, dv * cosine - du * sine);
    }
  }
  constexpr int samples = 4;
  for (int py = y + static_cast<int>(std::floor(top)); py <= y + std::ceil(bottom); ++py) {
    for (int px = x + static_cast<int>(std::floor(left)); px <= x + std::ceil(right); ++px) {
      int hits = 0;
      for (int sy = 0; sy < samples; ++sy) {
        for (int sx = 0; sx < samples; ++sx) {
          const double dx = px + (sx + 0.5) / samples - x, dy = py + (sy + 0.5) / samples - y;
          const double u = anchor_u + dx * cosine - dy * sine;
          const double v = anchor_v + dx * sine + dy * cosine;
          hits += text_pixel(text, scale, static_cast<int>(std::floor(u)),
                             static_cast<int>(std::floor(v)));
        }
      }
      if (hits > 0) img.blend(px, py, c, double(hits) / (samples * samples));
    }
  }
}

}  // namespace

const glyph& plot_detail::glyph_of(char c) { return font[(c >= ' ' && c <= '~' ? c : '?') - ' ']; }

int plot_detail::text_width(std::string_view text, int scale) {
  return text.empty() ? 0 : (static_cast<int>(text.size()) * glyph_advance - 1) * scale;
}

void plot_detail::draw_text(image& img, int x, int y, std::string_view text, int scale, color c) {
  for (std::size_t i = 0; i < text.size(); ++i)
    for (int row = 0; row < glyph_height; ++row)
      for (int column = 0; column < glyph_width; ++column)
        if (glyph_pixel(text[i], column, row)) {
          const int left = x + (static_cast<int>(i) * glyph_advance + column) * scale;
          img.fill_rect(left, y + row * scale, left + scale, y + (row + 1) * scale, c);
        }
}

// ---- shapes -------------------------------------------------------------------------

void plot_detail::draw_line(image& img, int x0, int y0, int x1, int y1, color c, double radius) {
  const int reach = static_cast<int>(radius);
  const auto stamp = [&](int x, int y) {
    for (int dy = -reach; dy <= reach; ++dy)
      for (int dx = -reach; dx <= reach; ++dx)
        if (dx * dx + dy * dy <= radius * radius) img.set(x + dx, y + dy, c);
  };
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int step_x = x0 < x1 ? 1 : -1, step_y = y0 < y1 ? 1 : -1;
  // Every step moves along the longer side, so there are exactly that many; counting them
  // (rather than waiting to meet the end) cannot loop forever.
  const int steps = std::max(dx, -dy);
  for (int error = dx + dy, step = 0; step <= steps; ++step) {
    stamp(x0, y0);
    const int twice = 2 * error;  // both steps are decided on the error before either
    if (twice >= dy) {
      error += dy;
      x0 += step_x;
    }
    if (twice <= dx) {
      error += dx;
      y0 += step_y;
    }
  }
}

namespace {

enum class marker { circle, square, triangle, diamond };

// The rate figure's fourth distinction beyond 16 colors: colors repeat, shapes move on.
marker marker_of(std::size_t algorithm) {
  return static_cast<marker>((algorithm + algorithm / 16) % 4);
}

bool inside_marker(marker shape, int dx, int dy, int size) {
  switch (shape) {
    case marker::circle:
      return dx * dx + dy * dy <= size * size + size;
    case marker::square:
      return std::abs(dx) < size && std::abs(dy) < size;
    case marker::triangle:
      return dy >= -size && dy < size && 2 * std::abs(dx) <= dy + size;
    case marker::diamond:
      return std::abs(dx) + std::abs(dy) <= size;
  }
  return false;
}

// A filled marker centred on (x, y), with a white rim that sets it off from the lines.
void draw_marker(image& img, int x, int y, marker shape, int size, color c) {
  for (int dy = -size - 1; dy <= size + 1; ++dy)
    for (int dx = -size - 1; dx <= size + 1; ++dx) {
      if (inside_marker(shape, dx, dy, size))
        img.set(x + dx, y + dy, c);
      else if (inside_marker(shape, dx, dy, size + 1))
        img.set(x + dx, y + dy, {255, 255, 255});
    }
}

}  // namespace

// ---- the benchmark CSV --------------------------------------------------------------

std::vector<csv_record> plot_detail::parse_csv(std::string_view text, const std::string& path) {
  std::vector<csv_record> records;
  csv_record record{1, {}};
  std::string field;
  std::size_t line = 1;
  bool quoted = false;
  const auto end_record = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    if (record.fields.size() > 1 || !record.fields[0].empty()) records.push_back(std::move(record));
    record = {line, {}};
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quoted) {
      if (c != '"')
        field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += text[++i];
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      end_record();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted)
    throw usage_error(path + ":" + std::to_string(record.line) + ": a quoted field never ends");
  if (!field.empty() || !record.fields.empty()) end_record();
  return records;
}

std::vector<row> plot_detail::read_rows(const std::string& path) {
  const std::uint64_t size = input_file_size(path);
  std::string text(size, '\0');
  read_bytes(open_input(path).get(), text.data(), size, path);
  const std::vector<csv_record> records = parse_csv(text, path);
  if (records.empty()) throw usage_error(path + ": empty, not a benchmark CSV");

  static constexpr std::array<std::string_view, 7> needed = {
      "algorithm", "key_type", "value_type", "distribution", "n", "segment_size", "keys_per_s"};
  const std::vector<std::string>& header = records[0].fields;
  const auto column = [&](std::string_view name) -> std::ptrdiff_t {
    const auto it = std::ranges::find(header, name);
    return it == header.end() ? -1 : it - header.begin();
  };
  std::array<std::size_t, needed.size()> at{};
  for (std::size_t i = 0; i < needed.size(); ++i) {
    if (column(needed[i]) < 0)
      throw usage_error(path + ": no column '" + std::string(needed[i]) +
                        "' (a CSV of gpusort bench --csv has algorithm,key_type,value_type,"
                        "distribution,n,segment_size,...,keys_per_s)");
    at[i] = static_cast<std::size_t>(column(needed[i]));
  }
  const std::ptrdiff_t gpu_at = column("gpu");  // optional: only titles and file names use it

  std::vector<row> rows;
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::uint64_t,
                      std::string, std::string>,
           std::size_t>
      index_of;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const std::vector<std::string>& fields = records[r].fields;
    const std::string where = path + ":" + std::to_string(records[r].line) + ": ";
    if (fields.size() < header.size())
      throw usage_error(where + std::to_string(fields.size()) + " fields, the header has " +
                        std::to_string(header.size()));
    row x{fields[at[0]], fields[at[1]], fields[at[2]],
          fields[at[3]], fields[at[5]], gpu_at < 0 ? "" : fields[static_cast<std::size_t>(gpu_at)]};
    if (!parse_number(fields[at[4]], x.n))
      throw usage_error(where + "n '" + fields[at[4]] + "' is not a count");
    if (!parse_number(fields[at[6]], x.keys_per_s))
      throw usage_error(where + "keys_per_s '" + fields[at[6]] + "' is not a number");
    // inf or nan (a run too short to time) has no place on the axes.
    if (!std::isfinite(x.keys_per_s) || x.keys_per_s < 0) continue;
    const auto [it, fresh] =
        index_of.try_emplace(std::tuple(x.algorithm, x.key_type, x.value_type, x.distribution, x.n,
                                        x.segment_size, x.gpu),
                             rows.size());
    if (fresh)
      rows.push_back(std::move(x));
    else
      rows[it->second] = std::move(x);
  }
  if (rows.empty()) throw usage_error(path + ": no rows with a keys_per_s to draw");
  return rows;
}

namespace {

// Groups of rows by `key_of(row)`, in order of each group's first row.
template <class KeyOf>
std::vector<std::vector<const row*>> group_rows(const std::vector<row>& rows, KeyOf key_of) {
  std::vector<std::vector<const row*>> groups;
  std::map<decltype(key_of(rows[0])), std::size_t> index_of;
  for (const row& r : rows) {
    const auto [it, fresh] = index_of.try_emplace(key_of(r), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  return groups;
}

// ---- figures ------------------------------------------------------------------------

constexpr int figure_width = 1000, figure_height = 650;
constexpr color white{255, 255, 255}, muted{105, 105, 105}, grid{225, 225, 225};  // ink: plot.hpp
constexpr int text_scale = 2;  // font pixels are 2x2: 10x14-pixel capitals
// Longer legend entries and axis names are drawn at half the size, so that the plot keeps room.
constexpr std::size_t longest_at_full_size = 28;

struct plot_area {
  int left, top, right, bottom;
};

// Maps values linearly onto canvas coordinates.
struct linear_map {
  double from0, from1, to0, to1;
  int operator()(double value) const {
    return static_cast<int>(std::lround(to0 + (value - from0) * (to1 - to0) / (from1 - from0)));
  }
};

// Title lines centred from the top, the first in ink, the others muted; a line too wide for
// the canvas at text_scale is drawn at half the size. Returns the row below them.
int draw_titles(image& img, const std::vector<std::string>& lines) {
  int y = 12;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int scale = text_width(lines[i], text_scale) <= img.width() - 20 ? text_scale : 1;
    draw_text(img, (img.width() - text_width(lines[i], scale)) / 2, y, lines[i], scale,
              i == 0 ? ink : muted);
    y += 24;
  }
  return y;
}

// A tick step of 1, 2, 2.5 or 5 times a power of ten that cuts [0, top] into at most about
// `ticks` steps.
double nice_step(double top, int ticks) {
  const double raw = top / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 2.5, 5.0})
    if (m * power >= raw * (1 - 1e-9)) return m * power;
  return 10 * power;
}

// The digits after the point that print every multiple of `step` exactly.
int decimals_of(double step) {
  int decimals = 0;
  for (double scaled = step; decimals < 6 && std::abs(scaled - std::round(scaled)) > 1e-6 * scaled;
       scaled *= 10)
    ++decimals;
  return decimals;
}

// The keys/s axis of both figures, in Gkeys/s from 0 to the first tick at or above `highest`
// keys/s: grid lines, labelled ticks and the axis title. Returns the map from keys/s to rows.
linear_map draw_rate_axis(image& img, const plot_area& area, double highest) {
  const double top_g = highest > 0 ? highest * 1e-9 * 1.02 : 1.0;
  const double step = nice_step(top_g, 6);
  const int steps = static_cast<int>(std::ceil(top_g / step - 1e-9));
  const linear_map y{0, steps * step * 1e9, double(area.bottom), double(area.top)};
  for (int i = 0; i <= steps; ++i) {
    const int row = y(i * step * 1e9);
    if (i > 0) img.fill_rect(area.left + 1, row, area.right + 1, row + 1, grid);
    img.fill_rect(area.left - 6, row, area.left, row + 1, ink);
    char label[32];
    std::snprintf(label, sizeof label, "%.*f", decimals_of(step), i * step);
    draw_text(img, area.left - 10 - text_width(label, text_scale),
              row - cap_height * text_scale / 2, label, text_scale, ink);
  }
  draw_text_rotated(img, 16, (area.top + area.bottom) / 2, "Gkeys/s", text_scale, ink, 90, 0.5);
  img.fill_rect(area.left - 1, area.top, area.left + 1, area.bottom + 1, ink);
  img.fill_rect(area.left - 1, area.bottom, area.right + 1, area.bottom + 2, ink);
  return y;
}

std::string describe_types(const row& r) {
  return r.key_type +
         (r.value_type == "none" ? " keys only" : " keys, " + r.value_type + " values");
}

std::string describe_segments(const row& r) {
  if (r.segment_size == "0") return "";
  return r.segment_size == "powerlaw" ? ", power-law segments"
                                      : ", segments of " + r.segment_size + " keys";
}

std::string describe_count(std::uint64_t n) {
  return std::has_single_bit(n) ? "2^" + std::to_string(std::countr_zero(n)) : std::to_string(n);
}

}  // namespace

image plot_detail::rate_figure(const std::vector<const row*>& rows,
                               const algorithm_numbers& numbers) {
  image img(figure_width, figure_height, white);
  const row& first = *rows.front();
  const int top = draw_titles(img, {"Sorting rate vs n: " + describe_types(first) + ", " +
                                        first.distribution + describe_segments(first),
                                    first.gpu.empty() ? "median of the timed runs"
                                                      : first.gpu + ", median of the timed runs"});

  // The legend: one entry per algorithm, in their numbering, right of the plot.
  std::map<std::size_t, std::vector<const row*>> series;
  for (const row* r : rows) series[numbers.find(r->algorithm)->second].push_back(r);
  std::size_t longest = 0;
  for (const auto& [number, points] : series)
    longest = std::max(longest, points[0]->algorithm.size());
  const int plot_height = figure_height - 60 - (top + 16);
  const int legend_scale =
      longest <= longest_at_full_size && static_cast<int>(series.size()) * 22 <= plot_height
          ? text_scale
          : 1;
  const int entry_height = legend_scale == text_scale ? 22 : 12;
  const std::string widest(longest, 'x');  // every glyph is equally wide
  const int legend_width = 42 + text_width(widest, legend_scale) + 10;
  const plot_area area{90, top + 16, figure_width - legend_width - 36, figure_height - 60};

  std::uint64_t smallest = ~std::uint64_t{0}, largest = 0;
  double fastest = 0;
  for (const row* r : rows) {
    smallest = std::min(smallest, r->n);
    largest = std::max(largest, r->n);
    fastest = std::max(fastest, r->keys_per_s);
  }
  // Every power of two in range gets a grid line and a tick; sizes between powers of two sit
  // at their own log2.
  const int low_power = static_cast<int>(std::floor(std::log2(double(smallest))));
  const int high_power = static_cast<int>(std::ceil(std::log2(double(largest))));
  const linear_map x{low_power - 0.4, high_power + 0.4, double(area.left), double(area.right)};
  const int label_room = text_width("2", text_scale) + 2 + text_width("99", 1) + 10;
  const int label_every = std::max(
      1, static_cast<int>(std::ceil(label_room / double(x(low_power + 1) - x(low_power)))));
  for (int power = low_power; power <= high_power; ++power) {
    const int column = x(power);
    img.fill_rect(column, area.top, column + 1, area.bottom, grid);
    img.fill_rect(column, area.bottom, column + 1, area.bottom + 7, ink);
    if (power % label_every != 0) continue;
    // 2 with the exponent raised at half size.
    const std::string exponent = std::to_string(power);
    const int width = text_width("2", text_scale) + 2 + text_width(exponent, 1);
    const int left = column - width / 2;
    draw_text(img, left, area.bottom + 14, "2", text_scale, ink);
    draw_text(img, left + text_width("2", text_scale) + 2, area.bottom + 8, exponent, 1, ink);
  }
  const std::string x_title = "n (keys, log2 scale)";
  draw_text(img, (area.left + area.right - text_width(x_title, text_scale)) / 2, area.bottom + 36,
            x_title, text_scale, ink);
  const linear_map y = draw_rate_axis(img, area, fastest);

  for (auto& [number, points] : series) {
    std::ranges::sort(points, {}, &row::n);
    const auto at = [&](const row* r) {
      return std::pair(x(std::log2(double(r->n))), y(r->keys_per_s));
    };
    for (std::size_t i = 1; i < points.size(); ++i) {
      const auto [x0, y0] = at(points[i - 1]);
      const auto [x1, y1] = at(points[i]);
      draw_line(img, x0, y0, x1, y1, algorithm_color(number), 1);
    }
    for (const row* r : points) {
      const auto [px, py] = at(r);
      draw_marker(img, px, py, marker_of(number), 4, algorithm_color(number));
    }
  }

  const int legend_left = area.right + 24, legend_top = area.top;
  const int legend_bottom = legend_top + static_cast<int>(series.size()) * entry_height + 12;
  img.fill_rect(legend_left, legend_top, legend_left + legend_width, legend_bottom, grid);
  img.fill_rect(legend_left + 1, legend_top + 1, legend_left + legend_width - 1, legend_bottom - 1,
                white);
  int entry_top = legend_top + 8;
  for (const auto& [number, points] : series) {
    const int middle = entry_top + cap_height * legend_scale / 2;
    draw_line(img, legend_left + 10, middle, legend_left + 34, middle, algorithm_color(number), 1);
    draw_marker(img, legend_left + 22, middle, marker_of(number), 4, algorithm_color(number));
    draw_text(img, legend_left + 42, entry_top, points[0]->algorithm, legend_scale, ink);
    entry_top += entry_height;
  }
  return img;
}

namespace {

// The value at fraction p of sorted values, interpolated linearly between neighbours.
double quantile(const std::vector<double>& sorted, double p) {
  const double position = p * static_cast<double>(sorted.size() - 1);
  const std::size_t below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - static_cast<double>(below));
}

struct candle {
  std::size_t number;         // the algorithm's
  std::string label;          // its name and how many distributions it ran on
  std::vector<double> rates;  // ascending
};

// The candles of one (key type, value type, n, segment size, GPU) group; `first` is a row of it.
image spread_figure(const std::vector<candle>& candles, const row& first) {
  image img(figure_width, figure_height, white);
  const int top = draw_titles(
      img,
      {"Keys/s across distributions: " + describe_types(first) +
           ", n = " + describe_count(first.n) + describe_segments(first),
       first.gpu.empty() ? "median of the timed runs" : first.gpu + ", median of the timed runs",
       "box: 25-75 %, bar: median, whiskers: min to max over the (count) distributions"});

  // Names slant up to the right, ending at their tick: the longest sets the room below the
  // axis, and the first ones (which reach furthest left) the room left of it.
  std::size_t longest = 0;
  for (const candle& c : candles) longest = std::max(longest, c.label.size());
  const int label_scale = longest <= longest_at_full_size ? text_scale : 1;
  const auto reach = [&](std::string_view label) {  // across and down, at 45 degrees
    return (text_width(label, label_scale) + glyph_height * label_scale) * std::numbers::sqrt2 / 2;
  };
  const std::string widest(longest, 'x');  // every glyph is equally wide
  plot_area area{90, top + 16, figure_width - 30,
                 figure_height - 34 - static_cast<int>(std::ceil(reach(widest)))};
  const auto slot = [&] { return double(area.right - area.left) / double(candles.size()); };
  // Widening the margin narrows the slots, so a second pass settles it.
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < candles.size(); ++i)
      area.left = std::max(area.left, static_cast<int>(std::ceil(reach(candles[i].label) + 12 -
                                                                 (double(i) + 0.5) * slot())));

  double fastest = 0;
  for (const candle& c : candles) fastest = std::max(fastest, c.rates.back());
  const linear_map y = draw_rate_axis(img, area, fastest);
  const int box_half = static_cast<int>(std::min(22.0, slot() * 0.28));
  for (std::size_t i = 0; i < candles.size(); ++i) {
    const candle& c = candles[i];
    const int center = area.left + static_cast<int>(std::lround((double(i) + 0.5) * slot()));
    const color fill = algorithm_color(c.number);
    const color tint{static_cast<std::uint8_t>((fill.r + 2 * 255) / 3),
                     static_cast<std::uint8_t>((fill.g + 2 * 255) / 3),
                     static_cast<std::uint8_t>((fill.b + 2 * 255) / 3)};
    const int high = y(c.rates.back()), low = y(c.rates.front());
    const int q3 = y(quantile(c.rates, 0.75)), q1 = y(quantile(c.rates, 0.25));
    const int median = y(quantile(c.rates, 0.5));
    img.fill_rect(center - 1, high, center + 1, low + 1, ink);
    img.fill_rect(center - box_half / 2, high - 1, center + box_half / 2 + 1, high + 1, ink);
    img.fill_rect(center - box_half / 2, low, center + box_half / 2 + 1, low + 2, ink);
    img.fill_rect(center - box_half, q3 - 1, center + box_half + 1, q1 + 2, fill);
    img.fill_rect(center - box_half + 2, q3 + 1, center + box_half - 1, q1, tint);
    img.fill_rect(center - box_half, median - 1, center + box_half + 1, median + 2, ink);
    img.fill_rect(center, area.bottom, center + 1, area.bottom + 7, ink);
    draw_text_rotated(img, center + 4, area.bottom + 14, c.label, label_scale, ink, 45, 1);
  }
  return img;
}

// Characters that are safe in a file name everywhere; anything else becomes '-'.
std::string file_name_part(std::string_view text) {
  std::string safe(text);
  for (char& c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  return safe;
}

void write_png(const image& img, const std::string& path) {
  const std::vector<std::uint8_t> png = encode_png(img);
  pending_file out(path);
  write_bytes(out.get(), png.data(), png.size(), path);
  out.commit();
}

}  // namespace

std::vector<std::string> write_plots(const std::string& csv_path, const std::string& dir) {
  const std::vector<row> rows = read_rows(csv_path);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw io_error(dir + ": cannot create the directory: " + ec.message());

  algorithm_numbers numbers;
  bool several_gpus = false;
  for (const row& r : rows) {
    numbers.try_emplace(r.algorithm, numbers.size());
    several_gpus |= r.gpu != rows[0].gpu;
  }
  const auto name_of = [&](const std::string& kind, const row& r, const std::string& what) {
    std::string name = kind + "_" + r.key_type + "_" + r.value_type + "_" + what;
    if (r.segment_size != "0") name += "_seg" + r.segment_size;
    if (several_gpus) name += "_" + r.gpu;
    return (std::filesystem::path(dir) / (file_name_part(name) + ".png")).string();
  };

  std::vector<std::string> written;
  // Rates against n; sizes of 0 have no place on a log axis.
  for (const std::vector<const row*>& group : group_rows(rows, [](const row& r) {
         return std::tuple(r.key_type, r.value_type, r.distribution, r.segment_size, r.gpu);
       })) {
    std::vector<const row*> sized;
    std::ranges::copy_if(group, std::back_inserter(sized), [](const row* r) { return r->n > 0; });
    if (std::ranges::any_of(sized, [&](const row* r) { return r->n != sized[0]->n; })) {
      written.push_back(name_of("rate", *sized[0], sized[0]->distribution));
      write_png(rate_figure(sized, numbers), written.back());
    }
  }
  // Spreads across distributions.
  for (const std::vector<const row*>& group : group_rows(rows, [](const row& r) {
         return std::tuple(r.key_type, r.value_type, r.n, r.segment_size, r.gpu);
       })) {
    std::map<std::size_t, std::vector<const row*>> by_algorithm;
    for (const row* r : group) by_algorithm[numbers.find(r->algorithm)->second].push_back(r);
    std::vector<candle> candles;
    for (const auto& [number, measured] : by_algorithm) {
      if (measured.size() < 2) continue;
      candle c{number, measured[0]->algorithm + " (" + std::to_string(measured.size()) + ")", {}};
      for (const row* r : measured) c.rates.push_back(r->keys_per_s);
      std::ranges::sort(c.rates);
      candles.push_back(std::move(c));
    }
    if (candles.empty()) continue;
    written.push_back(name_of("spread", *group[0], "n" + std::to_string(group[0]->n)));
    write_png(spread_figure(candles, *group[0]), written.back());
  }
  return written;
}

}  // namespace gpusort::tools
