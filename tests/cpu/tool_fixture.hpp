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
#include <vector>

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

class Tool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tool.empty()) GTEST_SKIP() << "the gpusort tool is not built";
    dir_ = fs::temp_directory_path() /
           ("gpusort_tool_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  outcome run(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command =
        "'" + tool + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    outcome o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return o;
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

  fs::path dir_;
};

}  // namespace gpusort_test_tool
