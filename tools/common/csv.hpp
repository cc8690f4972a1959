// CSV output shared by the benchmarks.
#pragma once

#include <string>

namespace gpusort::tools {

// A field as RFC 4180 writes it: quoted, with its quotes doubled, where it holds a comma, a
// quote or a newline.
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace gpusort::tools
