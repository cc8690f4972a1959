// One subcommand's parsed command line: its long options' values and its file arguments.
// CLI11 parses it (arguments.cpp); this header does not include CLI11, so that the benchmarks
// compiled by nvcc can use it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/error.hpp"

namespace gpusort::tools {

// Bad input or usage (a file that is missing, unreadable or malformed; an output that cannot
// be created): exit code 2. A read or write failed midway (disk full, I/O error): exit code 3
// (as CUDA failures). The library's file work raises the same two.
using usage_error = gpusort::invalid_request;
using io_error = gpusort::io_failure;

using option_values = std::map<std::string, std::string, std::less<>>;

class arguments {
 public:
  arguments() = default;
  arguments(option_values values, std::vector<std::string> positional)
      : values_(std::move(values)), positional_(std::move(positional)) {}

  bool has(const std::string& name) const { return values_.contains(name); }
  std::string get(const std::string& name, const std::string& fallback = "") const {
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  std::string required(const std::string& name) const {
    if (!has(name)) throw usage_error("--" + name + " is required");
    return get(name);
  }
  // Exactly `count` positional arguments, named in the message if they are not there.
  // An empty one is refused: no file has that name, and a sort must not run to find out.
  const std::vector<std::string>& positional(std::size_t count, std::string_view names) const {
    if (positional_.size() != count)
      throw usage_error("expected " + std::string(names) + ", got " +
                        std::to_string(positional_.size()) + " file argument(s)");
    for (const std::string& name : positional_)
      if (name.empty()) throw usage_error("a file argument is empty: expected " + std::string(names));
    return positional_;
  }

 private:
  option_values values_;
  std::vector<std::string> positional_;
};

// Parses a subcommand's command line (argv[0] is the subcommand) with CLI11: `--name VALUE`
// (or `--name=VALUE`) for the names in `valued`, `--name` for those in `flags`, everything
// else a file argument; `--` ends the options (a file may be called --x). The last of an
// option given twice counts. Throws usage_error.
arguments parse_arguments(int argc, const char* const* argv,
                          const std::set<std::string_view>& valued,
                          const std::set<std::string_view>& flags);

}  // namespace gpusort::tools
