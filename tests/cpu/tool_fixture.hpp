// The gpusort tool run as a program by the CPU tests: a fixture with a scratch directory, the
// runner and small file helpers. Test files that use it get GPUSORT_TOOL_PATH from
// tools/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "scratch_dir.hpp"

namespace fs = std::filesystem;

namespace gpusort_test_tool {

#ifdef GPUSORT_TOOL_PATH
const std::string tool = GPUSORT_TOOL_PATH;
#else
const std::string tool;  // built with GPUSORT_BUILD_TOOLS=OFF
#endif

struct outcome {
  int code;
  std::string out, err;
};

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <class T>
std::vector<T> read_array(const fs::path& path) {
  const std::string bytes = slurp(path);
  std::vector<T> data(bytes.size() / sizeof(T));
  std::memcpy(data.data(), bytes.data(), data.size() * sizeof(T));
  return data;
}

template <class T>
void write_array(const fs::path& path, const std::vector<T>& data) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T));
}

// The rest of the line of `text` that starts with `prefix`, or "" if none does.
inline std::string field(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with(prefix)) return line.substr(prefix.size());
  return "";
}

// A failure as the tool must report it: exit code `code` (2 for bad input or usage, 3 for an
// I/O failure) and one line on stderr, from the command, naming the problem. The library's
// notice that it sorts on the CPU (on machines without a GPU) may come before it.
inline ::testing::AssertionResult failure_with(const outcome& o, int code,
                                               const std::string& command,
                                               const std::string& named) {
  std::string err = o.err;
  if (err.starts_with("gpusort: ") && err.find("; sorting on the CPU\n") != std::string::npos)
    err.erase(0, err.find("; sorting on the CPU\n") + 21);
  if (o.code != code) return ::testing::AssertionFailure() << "exit code " << o.code << ": " << o.err;
  if (std::ranges::count(err, '\n') != 1 || !err.ends_with('\n'))
    return ::testing::AssertionFailure() << "not one line: '" << err << "'";
  if (!err.starts_with("gpusort " + command + ": "))
    return ::testing::AssertionFailure() << "not from gpusort " << command << ": " << err;
  if (err.find(named) == std::string::npos)
    return ::testing::AssertionFailure() << "'" << named << "' not named: " << err;
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult usage_failure(const outcome& o, const std::string& command,
                                                const std::string& named) {
  return failure_with(o, 2, command, named);
}

// A command prefix under which file permissions hold for root too: setpriv takes away the
// capabilities that bypass them ("" for other users).
inline std::string without_permission_override() {
  return ::geteuid() != 0 ? ""
                          : "setpriv --inh-caps=-dac_override,-dac_read_search "
                            "--bounding-set=-dac_override,-dac_read_search ";
}

class Tool : public gpusort::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    if (tool.empty()) GTEST_SKIP() << "the gpusort tool is not built";
    ScratchDirTest::SetUp();
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // The tool with `args`, started through `launcher` (a command prefix) if given.
  outcome run(const std::string& args, const std::string& launcher = "") const {
    return shell(launcher + "\"$GPUSORT\" " + args);
  }

  // A bash script (pipefail set) in which $GPUSORT is the tool; its exit code and output.
  outcome shell(const std::string& script) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt", body = dir_ / "script.sh";
    std::ofstream(body) << "set -o pipefail\nGPUSORT='" << tool << "'\n" << script << "\n";
    const std::string command =
        "bash '" + body.string() + "' >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    outcome o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
    fs::remove(out);
    fs::remove(err);
    fs::remove(body);
    return o;
  }

  // Each command exits with 2 (bad usage) and one line on stderr that names the problem.
  void expect_usage_errors(
      const std::vector<std::pair<std::string, std::string>>& commands_and_named) const {
    for (const auto& [args, named] : commands_and_named) {
      SCOPED_TRACE(args);
      const outcome o = run(args);
      EXPECT_EQ(o.code, 2);
      EXPECT_EQ(std::ranges::count(o.err, '\n'), 1) << o.err;
      EXPECT_NE(o.err.find(named), std::string::npos) << o.err;
    }
  }

  std::string checksum(const std::string& args) const {
    return field(run("check " + args).out, "checksum: ");
  }

  // The files in the test's directory (no temporary files may be left behind).
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::ranges::sort(names);
    return names;
  }
};

// What a terminal shows of the tool's stderr: its lines, each '\r' going back to the line's
// start so that what follows overwrites what was there. Blank lines are left out, and so is
// the library's notice that it sorts on the CPU (on machines without a GPU).
inline std::vector<std::string> visible_messages(const std::string& text) {
  std::vector<std::string> lines(1);
  std::size_t column = 0;
  for (const char c : text) {
    if (c == '\n') {
      lines.emplace_back();
      column = 0;
    } else if (c == '\r') {
      column = 0;
    } else {
      std::string& line = lines.back();
      if (column < line.size())
        line[column] = c;
      else
        line += c;
      ++column;
    }
  }
  for (std::string& line : lines) line.erase(line.find_last_not_of(' ') + 1);
  std::erase_if(lines, [](const std::string& line) {
    return line.empty() ||
           (line.starts_with("gpusort: ") && line.ends_with("; sorting on the CPU"));
  });
  return lines;
}

// Sets an environment variable for the tools this process runs, until destroyed.
class scoped_environment {
 public:
  scoped_environment(const char* name, const char* value) : name_(name) {
    ::setenv(name, value, 1);
  }
  ~scoped_environment() { ::unsetenv(name_); }
  scoped_environment(const scoped_environment&) = delete;
  scoped_environment& operator=(const scoped_environment&) = delete;

 private:
  const char* name_;
};

}  // namespace gpusort_test_tool
