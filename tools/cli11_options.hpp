// The tool's long options on CLI11, shared by every subcommand's parse (arguments.cpp) and by
// gpusort sort's GNU command line (text_sort.cpp). Only the tool's .cpp files include it.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>
#include <string_view>

#include "arguments.hpp"

namespace gpusort::tools {

// The tool's rules for a CLI11 command line: no help flag of CLI11's own (main prints the
// tool's help texts), and the last of an option given twice counts.
void set_tool_rules(CLI::App& app);

// Declares `--name VALUE` for each of `valued` and `--name` for each of `flags`, in `group`.
void declare_long_options(CLI::App& app, const std::set<std::string_view>& valued,
                          const std::set<std::string_view>& flags, const std::string& group);

// After the parse: the values of the long options given, "" for a flag. A flag given a value
// (--desc=yes) is refused.
option_values given_long_options(const CLI::App& app, const std::set<std::string_view>& valued,
                                 const std::set<std::string_view>& flags);

// app.parse, with CLI11's errors as usage errors.
void parse_command_line(CLI::App& app, int argc, const char* const* argv);

}  // namespace gpusort::tools
