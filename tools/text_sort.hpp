// `gpusort sort` without --type: GNU sort's command line over text lines, sorted by the
// library's sort_lines in the C locale's byte order, as `LC_ALL=C sort` sorts them
// (docs/tool.md, "Text lines").
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "gpusort/lines.hpp"

namespace gpusort::tools {

enum class order_check { none, diagnose, quiet };  // -c, -C

struct text_sort_request {
  gpusort::line_order order;
  std::vector<std::string> inputs;  // `-` is standard input
  std::string output = "-";         // -o
  std::string scratch_dir;          // -T: where runs and an output stream's spool go
  std::uint64_t buffer_bytes = 0;   // -S: the lines sorted in memory at once (0: half the host's)
  order_check check = order_check::none;
};

// What a `gpusort sort` command line asks for: the version, a typed sort (--type or
// --record-bytes: `typed` holds its long options and files), or text lines.
struct sort_command_line {
  bool version = false;
  arguments typed;
  std::optional<text_sort_request> text;
};

// Parses `gpusort sort`'s arguments (argv[0] is "sort"); `typed_valued` and `typed_flags` are
// the long options of typed sorts. Usage errors for options of one mode given in the other,
// and for GNU sort's options that text sorts lack.
sort_command_line parse_sort_command_line(int argc, const char* const* argv,
                                          const std::set<std::string_view>& typed_valued,
                                          const std::set<std::string_view>& typed_flags);

// Sorts the request's lines into its output, or with -c/-C checks their order (exit code 1
// when out of order; -c names the first line out of place on stderr).
int sort_text_lines(const text_sort_request& request);

}  // namespace gpusort::tools
