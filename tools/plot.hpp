// Figures of benchmark results as PNG files, with no library beyond the standard one: a
// small RGB canvas, a PNG encoder (deflate with fixed Huffman codes) and the figures that
// `gpusort plot` and `gpusort bench --plot` draw from a benchmark CSV (DESIGN.md, Benchmarks).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpusort::tools {

struct color {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const color&) const = default;
};

// Pixels in rows from the top left; drawing outside the canvas is ignored.
class image {
 public:
  image(int width, int height, color background);
  int width() const { return width_; }
  int height() const { return height_; }
  color at(int x, int y) const { return pixels_[static_cast<std::size_t>(y) * width_ + x]; }
  void set(int x, int y, color c);
  // Mixes `c` into the pixel by `coverage` (0: unchanged, 1: c).
  void blend(int x, int y, color c, double coverage);
  // The pixels x0 <= x < x1, y0 <= y < y1.
  void fill_rect(int x0, int y0, int x1, int y1, color c);

 private:
  int width_, height_;
  std::vector<color> pixels_;
};

// The checksums of PNG chunks (CRC-32, ISO 3309) and of zlib streams (Adler-32, RFC 1950).
std::uint32_t crc32(std::span<const std::uint8_t> bytes);
std::uint32_t adler32(std::span<const std::uint8_t> bytes);

// A PNG file of `img`: 8-bit indexed color when it has at most 256 colors (a third of the
// bytes), else 8-bit RGB, compressed by zlib_compress (below).
std::vector<std::uint8_t> encode_png(const image& img);

// The color of the i-th algorithm of a CSV (in order of first appearance): 16 distinct colors,
// then they repeat (with another marker shape in the rate figures).
color algorithm_color(std::size_t index);

// Reads a benchmark CSV (the columns bench writes; others are ignored, fields may be quoted)
// and writes PNG figures into `dir` (created if missing):
//   rate_<key>_<values>_<distribution>[_seg<S>].png: keys/s against n on a log2 axis, one
//     line per algorithm, for each (key type, value type, distribution, segment size) with at
//     least 2 sizes;
//   spread_<key>_<values>_n<N>[_seg<S>].png: a candlestick per algorithm of its keys/s over
//     the distributions (min, 25 %, median, 75 %, max), for each (key type, value type, n,
//     segment size) where an algorithm has rows for at least 2 distributions.
// A later row for the same measurement replaces an earlier one. When the rows come from more
// than one GPU, the file names carry the GPU's name too. Returns the paths written (none when
// no group qualifies). Throws usage_error for a missing file, a CSV that lacks the needed
// columns or has no rows, io_error if a file cannot be read or written.
std::vector<std::string> write_plots(const std::string& csv_path, const std::string& dir);

// Internals of the above, exposed for the tests (tests/cpu/test_cpu_plot.cpp).
namespace plot_detail {

// A zlib stream (RFC 1950) of `data`: one deflate block with the fixed Huffman codes (RFC 1951,
// BTYPE 01) whose matches are found greedily among the previous places of the same 3 bytes
// and `row_length` bytes back (the row above, in scanlines); or stored blocks (BTYPE 00) when
// those are smaller, as for data without repeats.
std::vector<std::uint8_t> zlib_compress(std::span<const std::uint8_t> data,
                                        std::size_t row_length);

// The bitmap font: printable ASCII in cells of 5 x 9 pixels; a glyph is its rows' bits, bit 4
// the leftmost column. Characters outside printable ASCII are drawn as '?'.
inline constexpr int glyph_width = 5, glyph_height = 9;
using glyph = std::array<std::uint8_t, glyph_height>;
const glyph& glyph_of(char c);
// Text is drawn with one blank font column between letters, each font pixel `scale` pixels square.
int text_width(std::string_view text, int scale);
// `text` with its first cell's top left corner at (x, y).
void draw_text(image& img, int x, int y, std::string_view text, int scale, color c);
// A line drawn with a round pen of `radius` pixels moved along Bresenham's path.
void draw_line(image& img, int x0, int y0, int x1, int y1, color c, double radius);

// The color of axes and text.
inline constexpr color ink{30, 30, 30};

// One measurement of a benchmark CSV, as far as the figures need it.
struct row {
  std::string algorithm, key_type, value_type, distribution, segment_size, gpu;
  std::uint64_t n = 0;
  double keys_per_s = 0;
};

struct csv_record {
  std::size_t line;  // where the record starts, for messages
  std::vector<std::string> fields;
};

// RFC 4180: fields separated by commas; a quoted field may hold commas, line breaks and
// doubled quotes. Blank lines are skipped. Throws usage_error (naming `path`) for a quoted
// field that never ends.
std::vector<csv_record> parse_csv(std::string_view text, const std::string& path);

// The rows of a benchmark CSV with a rate to draw, in order of first appearance; a later row
// for the same measurement (same algorithm, types, distribution, n, segments and GPU) replaces
// the earlier. Throws as write_plots does.
std::vector<row> read_rows(const std::string& path);

// The algorithms of a CSV, numbered in order of first appearance (their colors).
using algorithm_numbers = std::map<std::string, std::size_t, std::less<>>;

// The rate figure of the rows of one (key type, value type, distribution, segment size, GPU)
// group.
image rate_figure(const std::vector<const row*>& rows, const algorithm_numbers& numbers);

}  // namespace plot_detail

}  // namespace gpusort::tools
