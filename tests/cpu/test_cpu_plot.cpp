// The benchmark figures: the checksums, deflate and the PNG encoder (decoded here by a reader
// of its own that checks every chunk, inflates the zlib stream by the RFC's tables and checks
// the pixels), the bitmap font, the CSV reader, write_plots on a small CSV, and `gpusort plot`
// run as a program.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cpu/tool_fixture.hpp"
// The test target compiles tools/plot.cpp in; plot_detail holds the internals tested here.
#include "plot.hpp"

namespace {

using namespace gpusort::tools;
using namespace gpusort::tools::plot_detail;

std::vector<std::uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

std::uint32_t be32(const std::vector<std::uint8_t>& data, std::size_t at) {
  if (at + 4 > data.size()) throw std::runtime_error("truncated at byte " + std::to_string(at));
  return std::uint32_t{data[at]} << 24 | std::uint32_t{data[at + 1]} << 16 |
         std::uint32_t{data[at + 2]} << 8 | data[at + 3];
}

std::vector<std::uint8_t> from_hex(std::string_view hex) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    const std::string digits(hex.substr(i, 2));
    bytes.push_back(static_cast<std::uint8_t>(std::stoul(digits, nullptr, 16)));
  }
  return bytes;
}

// Deflate's bits, from the least significant bit of each byte up (RFC 1951, 3.1.1).
class bit_reader {
 public:
  bit_reader(const std::vector<std::uint8_t>& bytes, std::size_t at) : bytes_(bytes), at_(at) {}

  unsigned bit() {
    if (at_ >= bytes_.size()) throw std::runtime_error("deflate data past the end");
    const unsigned value = (bytes_[at_] >> used_) & 1;
    if (++used_ == 8) {
      used_ = 0;
      ++at_;
    }
    return value;
  }
  // `count` bits, the first the least significant: header fields and extra bits.
  unsigned number(int count) {
    unsigned value = 0;
    for (int i = 0; i < count; ++i) value |= bit() << i;
    return value;
  }
  // A Huffman code goes on, most significant bit first: `code` with one more bit.
  unsigned longer(unsigned code) { return code << 1 | bit(); }
  // Skips the rest of the byte; returns the position of the next.
  std::size_t align() {
    if (used_ != 0) {
      used_ = 0;
      ++at_;
    }
    return at_;
  }
  void skip_bytes(std::size_t count) { at_ += count; }

 private:
  const std::vector<std::uint8_t>& bytes_;
  std::size_t at_;
  int used_ = 0;
};

// The bases and extra bits of the length symbols 257-285 and distance codes 0-29, as listed in
// RFC 1951, 3.2.5.
constexpr std::array<unsigned, 29> length_base{3,  4,  5,  6,  7,  8,  9,  10,  11,  13,
                                               15, 17, 19, 23, 27, 31, 35, 43,  51,  59,
                                               67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<int, 29> length_extra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                           2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<unsigned, 30> distance_base{
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<int, 30> distance_extra{0, 0, 0, 0, 1, 1, 2,  2,  3,  3,  4,  4,  5,  5,  6,
                                             6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

// A symbol of the fixed literal/length code (RFC 1951, 3.2.6), read a bit at a time: 7-bit
// codes 0000000-0010111 are 256-279; 8-bit 00110000-10111111 are 0-143 and 11000000-11000111
// 280-287; 9-bit 110010000-111111111 are 144-255.
unsigned read_literal_length(bit_reader& bits) {
  unsigned code = 0;
  for (int i = 0; i < 7; ++i) code = bits.longer(code);
  if (code <= 0b0010111) return 256 + code;
  code = bits.longer(code);
  if (code >= 0b00110000 && code <= 0b10111111) return code - 0b00110000;
  if (code >= 0b11000000 && code <= 0b11000111) return 280 + code - 0b11000000;
  return 144 + bits.longer(code) - 0b110010000;
}

struct inflated {
  std::vector<std::uint8_t> data;
  std::vector<unsigned> block_types;  // BTYPE of each block
  std::set<unsigned> distances;       // of the matches
  unsigned longest = 0;               // match length
};

// Inflates a zlib stream of stored and fixed-Huffman blocks, checking the header, every code
// and the Adler-32; throws on anything else.
inflated inflate_zlib(const std::vector<std::uint8_t>& zlib) {
  if (zlib.size() < 6 || (zlib[0] & 0x0F) != 8 || (zlib[0] >> 4) > 7 ||
      (zlib[0] * 256 + zlib[1]) % 31 != 0 || (zlib[1] & 0x20) != 0)
    throw std::runtime_error("bad zlib header");
  inflated out;
  bit_reader bits(zlib, 2);
  for (bool last = false; !last;) {
    last = bits.bit();
    out.block_types.push_back(bits.number(2));
    if (out.block_types.back() == 0) {
      const std::size_t at = bits.align();
      if (at + 4 > zlib.size()) throw std::runtime_error("stored block header past the end");
      const unsigned length = zlib[at] | zlib[at + 1] << 8;
      const unsigned complement = zlib[at + 2] | zlib[at + 3] << 8;
      if ((length ^ 0xFFFFu) != complement)
        throw std::runtime_error("LEN and NLEN disagree");
      if (at + 4 + length > zlib.size()) throw std::runtime_error("stored data past the end");
      out.data.insert(out.data.end(), zlib.begin() + at + 4, zlib.begin() + at + 4 + length);
      bits.skip_bytes(4 + length);
      continue;
    }
    if (out.block_types.back() != 1) throw std::runtime_error("neither stored nor fixed codes");
    for (unsigned symbol; (symbol = read_literal_length(bits)) != 256;) {
      if (symbol < 256) {
        out.data.push_back(static_cast<std::uint8_t>(symbol));
        continue;
      }
      if (symbol > 285) throw std::runtime_error("length symbol " + std::to_string(symbol));
      const unsigned length =
          length_base[symbol - 257] + bits.number(length_extra[symbol - 257]);
      unsigned code = 0;
      for (int i = 0; i < 5; ++i) code = bits.longer(code);
      if (code > 29) throw std::runtime_error("distance code " + std::to_string(code));
      const unsigned distance = distance_base[code] + bits.number(distance_extra[code]);
      if (distance > out.data.size()) throw std::runtime_error("distance past the start");
      for (unsigned i = 0; i < length; ++i) {
        const std::uint8_t byte = out.data[out.data.size() - distance];  // before push_back moves it
        out.data.push_back(byte);
      }
      out.distances.insert(distance);
      out.longest = std::max(out.longest, length);
    }
  }
  const std::size_t at = bits.align();
  if (at + 4 != zlib.size()) throw std::runtime_error("not 4 bytes of Adler-32 after the blocks");
  if (be32(zlib, at) != adler32(out.data)) throw std::runtime_error("bad Adler-32");
  return out;
}

struct decoded_png {
  std::uint32_t width = 0, height = 0;
  int color_type = 0;
  inflated stream;            // of the scanlines
  std::vector<color> pixels;  // rows from the top
  color at(std::uint32_t x, std::uint32_t y) const { return pixels[y * width + x]; }
};

// Reads what encode_png writes (8-bit indexed or RGB, no filters) and throws on anything wrong
// with it: signature, chunk CRCs and order, IHDR fields, the zlib stream, the filter bytes,
// the size of the pixel data.
decoded_png decode_png(const std::vector<std::uint8_t>& png) {
  const std::vector<std::uint8_t> signature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (png.size() < 8 || !std::equal(signature.begin(), signature.end(), png.begin()))
    throw std::runtime_error("no PNG signature");
  decoded_png out;
  std::vector<std::uint8_t> palette, zlib;
  std::vector<std::string> types;
  for (std::size_t at = 8; at < png.size();) {
    const std::uint32_t length = be32(png, at);
    if (at + 12 + length > png.size()) throw std::runtime_error("chunk past the end");
    const std::string type(png.begin() + at + 4, png.begin() + at + 8);
    const std::vector<std::uint8_t> data(png.begin() + at + 8, png.begin() + at + 8 + length);
    const std::vector<std::uint8_t> typed(png.begin() + at + 4, png.begin() + at + 8 + length);
    if (be32(png, at + 8 + length) != crc32(typed)) throw std::runtime_error(type + ": bad CRC");
    types.push_back(type);
    if (type == "IHDR") {
      if (length != 13) throw std::runtime_error("IHDR is not 13 bytes");
      out.width = be32(data, 0);
      out.height = be32(data, 4);
      out.color_type = data[9];
      if (data[8] != 8 || data[10] != 0 || data[11] != 0 || data[12] != 0)
        throw std::runtime_error("IHDR: not 8-bit, deflate, filter 0, no interlace");
    } else if (type == "PLTE") {
      palette = data;
    } else if (type == "IDAT") {
      zlib.insert(zlib.end(), data.begin(), data.end());
    }
    at += 12 + length;
  }
  if (types.empty() || types.front() != "IHDR" || types.back() != "IEND")
    throw std::runtime_error("IHDR must come first and IEND last");
  if (out.color_type != 2 && out.color_type != 3) throw std::runtime_error("not RGB nor indexed");

  out.stream = inflate_zlib(zlib);
  const std::vector<std::uint8_t>& raw = out.stream.data;
  const std::size_t pixel_bytes = out.color_type == 3 ? 1 : 3;
  const std::size_t stride = 1 + out.width * pixel_bytes;
  if (raw.size() != out.height * stride) throw std::runtime_error("wrong amount of pixel data");
  for (std::size_t y = 0; y < out.height; ++y) {
    if (raw[y * stride] != 0) throw std::runtime_error("a scanline filter other than none");
    for (std::size_t x = 0; x < out.width; ++x) {
      const std::uint8_t* p = &raw[y * stride + 1 + x * pixel_bytes];
      if (out.color_type == 2) {
        out.pixels.push_back({p[0], p[1], p[2]});
        continue;
      }
      if (3u * p[0] + 3 > palette.size()) throw std::runtime_error("index past the palette");
      out.pixels.push_back({palette[3u * p[0]], palette[3u * p[0] + 1], palette[3u * p[0] + 2]});
    }
  }
  return out;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count_color(const decoded_png& png, color c) {
  return static_cast<std::size_t>(std::ranges::count(png.pixels, c));
}

TEST(Checksums, KnownValues) {
  EXPECT_EQ(crc32(bytes_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32(bytes_of("")), 0u);
  EXPECT_EQ(adler32(bytes_of("Wikipedia")), 0x11E60398u);
  EXPECT_EQ(adler32(bytes_of("")), 1u);
  // Past the 5552 bytes after which the sums are reduced: 0xFF * 6000 bytes, by formula.
  const std::vector<std::uint8_t> ones(6000, 0xFF);
  std::uint64_t a = 1, b = 0;
  for (int i = 0; i < 6000; ++i) b += a += 0xFF;
  EXPECT_EQ(adler32(ones), ((b % 65521) << 16 | (a % 65521)));
}

TEST(Png, IndexedImageDecodesToThePixelsDrawn) {
  image img(37, 23, {255, 255, 255});
  img.fill_rect(5, 4, 17, 12, {200, 10, 30});
  img.set(36, 22, {0, 0, 0});
  img.set(40, 40, {0, 0, 0});  // outside: ignored
  const decoded_png png = decode_png(encode_png(img));
  EXPECT_EQ(png.width, 37u);
  EXPECT_EQ(png.height, 23u);
  EXPECT_EQ(png.color_type, 3);
  EXPECT_EQ(png.stream.block_types, std::vector<unsigned>{1});
  for (std::uint32_t y = 0; y < 23; ++y)
    for (std::uint32_t x = 0; x < 37; ++x) {
      const bool in_rect = x >= 5 && x < 17 && y >= 4 && y < 12;
      const color expected = in_rect              ? color{200, 10, 30}
                             : x == 36 && y == 22 ? color{0, 0, 0}
                                                  : color{255, 255, 255};
      ASSERT_EQ(png.at(x, y), expected) << x << "," << y;
    }
}

TEST(Png, ManyColorsAreRgbStoredInSeveralBlocks) {
  // 300 x 200 pixels of distinct colors: more than a palette holds, with hardly a repeat, so
  // the 180,200 bytes of scanlines are stored, in more than one block of 65,535.
  image img(300, 200, {});
  for (int y = 0; y < 200; ++y)
    for (int x = 0; x < 300; ++x)
      img.set(x, y,
              {static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y),
               static_cast<std::uint8_t>(x >> 8)});
  const decoded_png png = decode_png(encode_png(img));
  EXPECT_EQ(png.color_type, 2);
  EXPECT_EQ(png.stream.block_types, (std::vector<unsigned>{0, 0, 0}));
  for (int y = 0; y < 200; ++y)
    for (int x = 0; x < 300; ++x) ASSERT_EQ(png.at(x, y), img.at(x, y)) << x << "," << y;
}

// The decoder against streams of Python's zlib (zlib.compress(data, level).hex()), so that it
// follows the format rather than our encoder.
TEST(Inflate, StreamsOfZlib) {
  // Level 9 chose fixed codes (BTYPE 01) for these: matches, and a run longer than 258.
  const inflated hello = inflate_zlib(
      from_hex("78dacb48cdc9c957c840277514d20b4a8bf38b4a144044b142766a65310061d01048"));
  EXPECT_EQ(hello.data, bytes_of("hello hello hello hello, gpusort sorts keys"));
  EXPECT_EQ(hello.block_types, std::vector<unsigned>{1});
  EXPECT_FALSE(hello.distances.empty());
  const inflated run = inflate_zlib(from_hex("78da4b4c1c05700000c42365ee"));
  EXPECT_EQ(run.data, std::vector<std::uint8_t>(269, 'a'));
  EXPECT_EQ(run.block_types, std::vector<unsigned>{1});
  EXPECT_EQ(run.longest, 258u);
  // Level 0: a stored block.
  const inflated stored = inflate_zlib(from_hex("7801010600f9ff73746f726564093c0292"));
  EXPECT_EQ(stored.data, bytes_of("stored"));
  EXPECT_EQ(stored.block_types, std::vector<unsigned>{0});
  // A wrong Adler-32 and a cut stream are caught.
  EXPECT_THROW(inflate_zlib(from_hex("78da4b4c1c05700000c42365ef")), std::runtime_error);
  EXPECT_THROW(inflate_zlib(from_hex("78da4b4c1c05700000c423")), std::runtime_error);
}

TEST(Deflate, RoundTrips) {
  std::mt19937 random(7);
  const auto bytes = [&](std::size_t size, unsigned alphabet) {
    std::vector<std::uint8_t> data(size);
    for (std::uint8_t& b : data) b = static_cast<std::uint8_t>(random() % alphabet);
    return data;
  };
  // Every byte value, literals of 8 and 9 bits, in random order: nothing to match.
  const std::vector<std::uint8_t> noise = bytes(5000, 256);
  // Few symbols, so many short matches, on past the 32 KiB window.
  const std::vector<std::uint8_t> few_symbols = bytes(70000, 4);
  // Noise with copies of earlier stretches at random distances up to 32,768, the most a
  // match may reach back; one at that distance, and one a byte farther (out of reach).
  std::vector<std::uint8_t> copies = bytes(40000, 256);
  for (int i = 0; i < 200; ++i) {
    const std::size_t length = 3 + random() % 400, to = 32768 + random() % (40000 - 32768 - 400);
    const std::size_t from = to - 1 - random() % 32768;
    std::copy_n(copies.begin() + from, length, copies.begin() + to);
  }
  std::copy_n(copies.begin() + 39000 - 32768, 500, copies.begin() + 39000);
  std::copy_n(copies.begin() + 38000 - 32769, 500, copies.begin() + 38000);
  for (const std::vector<std::uint8_t>& data : std::vector<std::vector<std::uint8_t>>{
           {}, {42}, {1, 2}, bytes(3, 2), bytes(300, 3), noise, few_symbols, copies}) {
    SCOPED_TRACE(::testing::Message() << data.size() << " bytes");
    for (const std::size_t row_length : {0, 1, 17, 1001}) {
      const inflated back = inflate_zlib(zlib_compress(data, row_length));
      ASSERT_EQ(back.data, data) << "row length " << row_length;
    }
  }
  // Noise does not shrink under fixed codes: stored, 5 bytes of block header.
  EXPECT_EQ(inflate_zlib(zlib_compress(noise, 0)).block_types, std::vector<unsigned>{0});
  EXPECT_EQ(zlib_compress(noise, 0).size(), 2 + 5 + noise.size() + 4);
  EXPECT_EQ(inflate_zlib(zlib_compress(few_symbols, 0)).block_types, std::vector<unsigned>{1});
  const inflated far = inflate_zlib(zlib_compress(copies, 0));
  EXPECT_EQ(far.block_types, std::vector<unsigned>{1});
  EXPECT_TRUE(far.distances.contains(32768));
}

TEST(Deflate, RunsLongerThanTheLongestMatch) {
  // One literal, then matches at distance 1 of at most 258 bytes: 1 + 3 * 258 + 225.
  const std::vector<std::uint8_t> run(1000, 7);
  const std::vector<std::uint8_t> zlib = zlib_compress(run, 0);
  const inflated back = inflate_zlib(zlib);
  EXPECT_EQ(back.data, run);
  EXPECT_EQ(back.longest, 258u);
  EXPECT_EQ(back.distances, std::set<unsigned>{1});
  EXPECT_LT(zlib.size(), 20u);
}

TEST(Png, RepetitiveImageRoundTrips) {
  // One color, then a square of another: runs across rows, and a scanline's first byte (its
  // filter, 0) among them.
  image img(700, 60, {240, 240, 240});
  img.fill_rect(100, 10, 400, 50, {0, 90, 200});
  const std::vector<std::uint8_t> file = encode_png(img);
  const decoded_png png = decode_png(file);
  EXPECT_EQ(png.stream.longest, 258u);
  EXPECT_TRUE(png.stream.distances.contains(1));
  EXPECT_LT(file.size(), 1500u);
  for (int y = 0; y < 60; ++y)
    for (int x = 0; x < 700; ++x) ASSERT_EQ(png.at(x, y), img.at(x, y)) << x << "," << y;
}

TEST(Png, RowsMatchTheRowAbove) {
  // Every row the same random pixels of 200 colors, which hardly repeat within a row: the
  // rows after the first are copies from a scanline (1 + 97 bytes) back.
  std::mt19937 random(11);
  std::vector<color> row_pixels(97);
  for (color& c : row_pixels) c = {static_cast<std::uint8_t>(random() % 200), 3, 5};
  image img(97, 40, {});
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 97; ++x) img.set(x, y, row_pixels[x]);
  const std::vector<std::uint8_t> file = encode_png(img);
  const decoded_png png = decode_png(file);
  EXPECT_EQ(png.color_type, 3);
  EXPECT_TRUE(png.stream.distances.contains(98));
  EXPECT_LT(file.size(), 2000u);  // of 40 * 98 bytes of scanlines
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 97; ++x) ASSERT_EQ(png.at(x, y), img.at(x, y)) << x << "," << y;
}

TEST(Png, RandomishImagesRoundTrip) {
  // Rectangles, lines and noise in few colors and in many (RGB), at sizes around 258.
  std::mt19937 random(5);
  const auto below = [&](int bound) { return static_cast<int>(random() % bound); };
  for (const int colors : {6, 100, 5000}) {
    for (const int width : {1, 86, 257, 259, 300}) {
      SCOPED_TRACE(::testing::Message() << colors << " colors, " << width << " wide");
      const auto any_color = [&] {
        const int c = below(colors);
        return color{static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(c >> 8), 77};
      };
      image img(width, 50, any_color());
      for (int i = 0; i < 20; ++i) {
        const int x = below(width), y = below(50);
        img.fill_rect(x, y, x + below(80), y + below(20), any_color());
        draw_line(img, x, y, below(width), below(50), any_color(), 1);
      }
      for (int i = 0; i < 300; ++i) img.set(below(width), below(50), any_color());
      const decoded_png png = decode_png(encode_png(img));
      for (int y = 0; y < 50; ++y)
        for (int x = 0; x < width; ++x) ASSERT_EQ(png.at(x, y), img.at(x, y)) << x << "," << y;
    }
  }
}

TEST(Font, EveryPrintableCharacterHasItsOwnGlyph) {
  std::set<glyph> seen;
  for (char c = '!'; c <= '~'; ++c) {
    EXPECT_NE(glyph_of(c), glyph{}) << c;
    EXPECT_TRUE(seen.insert(glyph_of(c)).second) << c << " looks like another character";
  }
  EXPECT_EQ(glyph_of(' '), glyph{});
  EXPECT_EQ(glyph_of('\x01'), glyph_of('?'));
  image img(40, 20, {255, 255, 255});
  draw_text(img, 1, 1, "gp_", 2, {0, 0, 0});
  EXPECT_EQ(text_width("gp_", 2), 34);
  EXPECT_EQ(img.at(1, 1), (color{255, 255, 255}));            // g starts on the x-height
  EXPECT_EQ(img.at(1 + 2 * 2, 1 + 8 * 2), (color{0, 0, 0}));  // g's descender, row 8: .###.
}

TEST(Shapes, LinesReachTheirEndInEveryDirection) {
  // A one-pixel line sets one pixel per step along its longer side, both ends included.
  for (int x1 = 0; x1 <= 40; x1 += 5) {
    for (int y1 = 0; y1 <= 40; y1 += 3) {
      image img(41, 41, {255, 255, 255});
      draw_line(img, 20, 20, x1, y1, {0, 0, 0}, 0);
      SCOPED_TRACE(::testing::Message() << "to " << x1 << "," << y1);
      EXPECT_EQ(img.at(20, 20), (color{0, 0, 0}));
      EXPECT_EQ(img.at(x1, y1), (color{0, 0, 0}));
      int set = 0;
      for (int y = 0; y < 41; ++y)
        for (int x = 0; x < 41; ++x) set += img.at(x, y) == color{0, 0, 0};
      EXPECT_EQ(set, std::max(std::abs(x1 - 20), std::abs(y1 - 20)) + 1);
    }
  }
}

TEST(Csv, QuotedFieldsAndBlankLines) {
  const auto records = parse_csv("a,\"b,c\",\"d\"\"e\",\n\n\"multi\nline\",x\r\n", "t.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b,c", "d\"e", ""}));
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"multi\nline", "x"}));
  EXPECT_EQ(records[1].line, 3u);
  EXPECT_THROW(parse_csv("a,\"never closed\n", "t.csv"), usage_error);
}

class Plots : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpusort_plot_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream((dir_ / name).string()) << text;
    return (dir_ / name).string();
  }

  fs::path dir_;
};

const std::string header =
    "algorithm,key_type,value_type,distribution,n,segment_size,median_ms,keys_per_s,"
    "extra_device_bytes,gpu,commit,min_ms,max_ms,reps,std_ms\n";

// alpha, beta and gamma (colors 0, 1, 2) at three sizes, one of them not a power of two;
// alpha and beta on zipf too at one size (a spread, no rate figure), alpha cut into
// segments of 32 at two sizes; the GPU's name is quoted; a later row replaces an earlier.
std::string sample_csv() {
  std::string csv = header;
  const auto add = [&](const std::string& algo, const std::string& dist, const std::string& n,
                       const std::string& segments, const std::string& rate) {
    csv += algo + ",u32,none," + dist + "," + n + "," + segments + ",1.0," + rate +
           ",0,\"Test GPU, \"\"rev A\"\"\",abc1234,0.9,1.1,5,0.01\n";
  };
  for (const std::string n : {"1024", "2048", "3000"}) {
    add("alpha", "uniform", n, "0", "4000000000");
    add("beta", "uniform", n, "0", "2500000000");
    add("gamma", "uniform", n, "0", "1000000000");
  }
  add("alpha", "zipf", "1024", "0", "3000000000");
  add("beta", "zipf", "1024", "0", "2000000000");
  add("alpha", "uniform", "1024", "32", "500000000");
  add("alpha", "uniform", "2048", "32", "700000000");
  add("gamma", "uniform", "3000", "0", "1200000000");
  return csv;
}

TEST_F(Plots, LaterRowsReplaceEarlierOnes) {
  const std::vector<row> rows = read_rows(write("bench.csv", sample_csv()));
  ASSERT_EQ(rows.size(), 13u);
  EXPECT_EQ(rows[8].algorithm, "gamma");
  EXPECT_EQ(rows[8].n, 3000u);
  EXPECT_EQ(rows[8].keys_per_s, 1.2e9);
  EXPECT_EQ(rows[0].gpu, "Test GPU, \"rev A\"");
  EXPECT_EQ(rows[11].segment_size, "32");
}

TEST_F(Plots, RatesThatAreNotFiniteAreLeftOut) {
  // Without the row of 2048 keys, alpha was measured at one size only: no figure.
  const std::string csv = header + "alpha,u32,none,uniform,1024,0,1,1e9,0,g,c,1,1,1,0\n" +
                          "alpha,u32,none,uniform,2048,0,0,inf,0,g,c,0,0,1,0\n" +
                          "alpha,u32,none,zipf,1024,0,0,nan,0,g,c,0,0,1,0\n";
  EXPECT_EQ(read_rows(write("bench.csv", csv)).size(), 1u);
  EXPECT_TRUE(write_plots(write("bench.csv", csv), (dir_ / "figures").string()).empty());
}

TEST_F(Plots, WritesRateAndSpreadFigures) {
  const std::string out = (dir_ / "figures").string();  // created by write_plots
  const std::vector<std::string> written = write_plots(write("bench.csv", sample_csv()), out);
  EXPECT_EQ(written, (std::vector<std::string>{out + "/rate_u32_none_uniform.png",
                                               out + "/rate_u32_none_uniform_seg32.png",
                                               out + "/spread_u32_none_n1024.png"}));
  std::set<std::string> listed;
  for (const auto& entry : fs::directory_iterator(out)) listed.insert(entry.path().string());
  EXPECT_EQ(listed, std::set<std::string>(written.begin(), written.end()));

  // Figures are mostly background, axes and text: small once compressed.
  const std::vector<std::uint8_t> rate_file = read_file(written[0]);
  EXPECT_LT(rate_file.size(), 100'000u);
  const decoded_png rate = decode_png(rate_file);
  EXPECT_EQ(rate.width, 1000u);
  EXPECT_EQ(rate.height, 650u);
  for (std::size_t algo = 0; algo < 3; ++algo)
    EXPECT_GT(count_color(rate, algorithm_color(algo)), 200u) << "algorithm " << algo;
  // Not blank: ink for the axes and labels.
  EXPECT_GT(count_color(rate, ink), 1000u);

  const decoded_png segments = decode_png(read_file(written[1]));
  EXPECT_GT(count_color(segments, algorithm_color(0)), 100u);
  EXPECT_EQ(count_color(segments, algorithm_color(1)), 0u);

  // gamma ran on one distribution only: no candle.
  const decoded_png spread = decode_png(read_file(written[2]));
  EXPECT_GT(count_color(spread, algorithm_color(0)), 50u);
  EXPECT_GT(count_color(spread, algorithm_color(1)), 50u);
  EXPECT_EQ(count_color(spread, algorithm_color(2)), 0u);
}

TEST_F(Plots, SizesSitAtTheirLog2) {
  // One algorithm at 2^10, 3 * 2^10 and 2^12: the middle marker's column is log2(3) of the
  // way from the first power of two's to the next one's.
  std::string csv = header;
  for (const std::string n : {"1024", "3072", "4096"})
    csv += "alpha,u32,none,uniform," + n + ",0,1,1000000000,0,g,c,1,1,1,0\n";
  const std::vector<row> rows = read_rows(write("bench.csv", csv));
  const image img = rate_figure({&rows[0], &rows[1], &rows[2]}, {{"alpha", 0}});
  // Equal rates draw a level line 3 pixels high; the columns with more of the line's color
  // are the markers' (left of 850: the legend has one too).
  std::vector<double> centres;
  int run_start = -1;
  for (int x = 0; x <= 850; ++x) {
    int colored = 0;
    for (int y = 0; y < img.height(); ++y) colored += img.at(x, y) == algorithm_color(0);
    const bool marker = x < 850 && colored >= 6;
    if (marker && run_start < 0) run_start = x;
    if (!marker && run_start >= 0) {
      centres.push_back((run_start + x - 1) / 2.0);
      run_start = -1;
    }
  }
  ASSERT_EQ(centres.size(), 3u);
  const double fraction = (centres[1] - centres[0]) / (centres[2] - centres[0]);
  EXPECT_NEAR(fraction, std::log2(3.0) / 2, 0.02);
}

TEST_F(Plots, BadInputThrows) {
  EXPECT_THROW(write_plots((dir_ / "missing.csv").string(), dir_.string()), usage_error);
  EXPECT_THROW(write_plots(write("empty.csv", ""), dir_.string()), usage_error);
  EXPECT_THROW(write_plots(write("header.csv", header), dir_.string()), usage_error);
  try {
    write_plots(write("columns.csv",
                      "algorithm,key_type,value_type,distribution,n,segment_size\n"
                      "a,u32,none,uniform,1024,0\n"),
                dir_.string());
    ADD_FAILURE() << "no exception";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("keys_per_s"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      write_plots(write("n.csv", header + "a,u32,none,uniform,2^10,0,1,1e9,0,g,c,1,1,1,0\n"),
                  dir_.string()),
      usage_error);
  EXPECT_THROW(
      write_plots(write("short.csv", header + "a,u32,none,uniform,1024,0,1,1e9\n"), dir_.string()),
      usage_error);
  EXPECT_THROW(
      write_plots(write("inf.csv", header + "a,u32,none,uniform,1024,0,0,inf,0,g,c,0,0,1,0\n"),
                  dir_.string()),
      usage_error);
  // A directory that cannot be made: its path is a file.
  const std::string csv = write("ok.csv", sample_csv());
  EXPECT_THROW(write_plots(csv, csv), io_error);
}

using gpusort_test_tool::outcome;
using gpusort_test_tool::Tool;

TEST_F(Tool, PlotWritesFiguresAndPrintsTheirPaths) {
  std::ofstream(file("bench.csv")) << sample_csv();
  const outcome o = run("plot " + file("bench.csv") + " " + file("figures"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, file("figures") + "/rate_u32_none_uniform.png\n" + file("figures") +
                       "/rate_u32_none_uniform_seg32.png\n" + file("figures") +
                       "/spread_u32_none_n1024.png\n");
  EXPECT_EQ(decode_png(read_file(file("figures") + "/spread_u32_none_n1024.png")).width, 1000u);
}

TEST_F(Tool, PlotRejectsBadInput) {
  for (const std::string& args :
       {"plot " + file("missing.csv") + " " + file("figures"), "plot " + file("bench.csv"),
        "plot " + file("columns.csv") + " " + file("figures")}) {
    std::ofstream(file("columns.csv")) << "algorithm,n\nbitonic,1024\n";
    std::ofstream(file("bench.csv")) << sample_csv();
    const outcome o = run(args);
    EXPECT_EQ(o.code, 2) << args;
    EXPECT_EQ(std::ranges::count(o.err, '\n'), 1) << o.err;
    EXPECT_TRUE(o.err.starts_with("gpusort plot: ")) << o.err;
  }
  EXPECT_FALSE(fs::exists(file("figures")));
}

}  // namespace
