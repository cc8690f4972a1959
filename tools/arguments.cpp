// The tool's command lines on CLI11 (arguments.hpp, cli11_options.hpp).
#include <algorithm>

#include "cli11_options.hpp"

namespace gpusort::tools {

void set_tool_rules(CLI::App& app) {
  app.set_help_flag();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void declare_long_options(CLI::App& app, const std::set<std::string_view>& valued,
                          const std::set<std::string_view>& flags, const std::string& group) {
  for (const std::string_view name : valued)
    app.add_option("--" + std::string(name))->type_name("VALUE")->group(group);
  for (const std::string_view name : flags) app.add_flag("--" + std::string(name))->group(group);
}

option_values given_long_options(const CLI::App& app, const std::set<std::string_view>& valued,
                                 const std::set<std::string_view>& flags) {
  option_values values;
  for (const std::string_view name : valued) {
    const CLI::Option* option = app.get_option("--" + std::string(name));
    if (option->count() > 0) values[std::string(name)] = option->as<std::string>();
  }
  for (const std::string_view name : flags) {
    const CLI::Option* option = app.get_option("--" + std::string(name));
    // CLI11 takes --flag=VALUE as a value for the flag; a plain flag's result is "true".
    if (std::ranges::any_of(option->results(), [](const std::string& r) { return r != "true"; }))
      throw usage_error("--" + std::string(name) + " takes no value");
    if (option->count() > 0) values[std::string(name)] = "";
  }
  return values;
}

void parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw usage_error(e.what());
  }
}

arguments parse_arguments(int argc, const char* const* argv,
                          const std::set<std::string_view>& valued,
                          const std::set<std::string_view>& flags) {
  CLI::App app("", argv[0]);
  set_tool_rules(app);
  declare_long_options(app, valued, flags, "options");
  std::vector<std::string> files;
  app.add_option("files", files);
  parse_command_line(app, argc, argv);
  return {given_long_options(app, valued, flags), std::move(files)};
}

}  // namespace gpusort::tools
