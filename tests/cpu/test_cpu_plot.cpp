// `gpusort plot` and `bench --plot` end to end: the tool runs python/gpusort/plot.py
// (matplotlib) as a child process. The figures' contents are python/tests/test_plot.py's
// business; here: the paths printed, PNG files written, the exit codes and the one-line
// messages when Python, the package or matplotlib is missing. Tests that draw skip where the
// interpreter has no matplotlib.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "cpu/tool_fixture.hpp"

namespace {

using gpusort_test_tool::failure_with;
using gpusort_test_tool::outcome;
using gpusort_test_tool::slurp;
using gpusort_test_tool::Tool;
using gpusort_test_tool::usage_failure;

const std::string header =
    "algorithm,key_type,value_type,distribution,n,segment_size,median_ms,keys_per_s,"
    "extra_device_bytes,gpu,commit,min_ms,max_ms,reps,std_ms\n";

// alpha and beta at two sizes on uniform (a rate figure), and on zipf at one (with uniform's
// 1024: a spread figure), alpha cut into segments of 32 at two sizes.
std::string sample_csv() {
  std::string csv = header;
  const auto add = [&](const std::string& algo, const std::string& dist, const std::string& n,
                       const std::string& segments, const std::string& rate) {
    csv += algo + ",u32,none," + dist + "," + n + "," + segments + ",1.0," + rate +
           ",0,Test GPU,abc1234,0.9,1.1,5,0.01\n";
  };
  for (const std::string n : {"1024", "2048"}) {
    add("alpha", "uniform", n, "0", "4000000000");
    add("beta", "uniform", n, "0", "2500000000");
  }
  add("alpha", "zipf", "1024", "0", "3000000000");
  add("beta", "zipf", "1024", "0", "2000000000");
  add("alpha", "uniform", "1024", "32", "500000000");
  add("alpha", "uniform", "2048", "32", "700000000");
  return csv;
}

// The interpreter CMake found (or $GPUSORT_PYTHON), and whether it imports `module`.
std::string test_python() {
  const char* chosen = std::getenv("GPUSORT_PYTHON");
  return chosen && *chosen ? chosen : GPUSORT_TEST_PYTHON;
}

bool python_imports(const std::string& module) {
  const std::string command = "'" + test_python() + "' -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// A PNG's width and height from its IHDR chunk (0, 0 if it is not a PNG).
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& path) {
  const std::string bytes = slurp(path);
  if (bytes.size() < 24 || !bytes.starts_with("\x89PNG\r\n\x1a\n") ||
      bytes.compare(12, 4, "IHDR") != 0)
    return {0, 0};
  const auto be32 = [&](std::size_t at) {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
    return value;
  };
  return {be32(16), be32(20)};
}

class Plot : public Tool {
 protected:
  void SetUp() override {
    Tool::SetUp();
    if (IsSkipped()) return;
    std::ofstream(file("bench.csv")) << sample_csv();
  }

  // Skips the test (the caller returns when IsSkipped()) without `module` in the interpreter.
  void need(const std::string& module) {
    if (!python_imports(module)) GTEST_SKIP() << test_python() << " cannot import " << module;
  }

  // The tool with `args`, under the test's interpreter and `env` (VAR=value ...).
  outcome plot(const std::string& args, const std::string& env = "") const {
    return shell("GPUSORT_PYTHON='" + test_python() + "' " + env + " \"$GPUSORT\" " + args);
  }
};

TEST_F(Plot, WritesFiguresAndPrintsTheirPaths) {
  need("matplotlib");
  if (IsSkipped()) return;
  const outcome o = plot("plot " + file("bench.csv") + " " + file("figures"));
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string dir = file("figures");
  EXPECT_EQ(o.out, dir + "/rate_u32_none_uniform.png\n" + dir + "/rate_u32_none_uniform_seg32.png\n" +
                       dir + "/spread_u32_none_n1024.png\n");
  for (const std::string name :
       {"rate_u32_none_uniform.png", "rate_u32_none_uniform_seg32.png", "spread_u32_none_n1024.png"}) {
    const auto [width, height] = png_size(dir + "/" + name);
    EXPECT_EQ(width, 1000u) << name;
    EXPECT_EQ(height, 650u) << name;
  }
}

TEST_F(Plot, NoFigureIsNotAFailure) {
  need("matplotlib");
  if (IsSkipped()) return;
  std::ofstream(file("one.csv")) << header << "alpha,u32,none,uniform,1024,0,1,1e9,0,g,c,1,1,1,0\n";
  const outcome o = plot("plot " + file("one.csv") + " " + file("figures"));
  EXPECT_TRUE(failure_with(o, 0, "plot", "no figure")) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST_F(Plot, RejectsBadInput) {
  need("sys");  // the CSV is read before matplotlib is imported
  if (IsSkipped()) return;
  std::ofstream(file("columns.csv")) << "algorithm,n\nbitonic,1024\n";
  for (const auto& [args, named] :
       {std::pair{"plot " + file("missing.csv") + " " + file("figures"), std::string("missing.csv")},
        std::pair{"plot " + file("bench.csv"), std::string("CSV and DIR")},
        std::pair{"plot " + file("columns.csv") + " " + file("figures"), std::string("key_type")}}) {
    EXPECT_TRUE(usage_failure(plot(args), "plot", named)) << args;
  }
  EXPECT_FALSE(fs::exists(file("figures")));
}

TEST_F(Plot, MissingPythonIsOneLine) {
  const outcome o =
      shell("GPUSORT_PYTHON=" + file("no-python") + " \"$GPUSORT\" plot " + file("bench.csv") +
            " " + file("figures"));
  EXPECT_TRUE(usage_failure(o, "plot", "GPUSORT_PYTHON")) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST_F(Plot, MissingMatplotlibIsOneLine) {
  need("sys");
  if (IsSkipped()) return;
  // A package folder whose matplotlib cannot be imported, ahead of the real one.
  fs::create_directories(file("pkg/matplotlib"));
  fs::create_directory_symlink(fs::path(GPUSORT_TEST_PYTHON_DIR) / "gpusort", file("pkg/gpusort"));
  std::ofstream(file("pkg/matplotlib/__init__.py")) << "raise ImportError('not here')\n";
  const outcome o = plot("plot " + file("bench.csv") + " " + file("figures"),
                         "GPUSORT_PYTHON_DIR=" + file("pkg"));
  EXPECT_TRUE(usage_failure(o, "plot", "python3-matplotlib")) << o.err;
}

TEST_F(Plot, MissingPackageIsOneLine) {
  need("sys");
  if (IsSkipped()) return;
  fs::create_directories(file("empty"));
  // -I -S keep a gpusort installed for this interpreter out of the search: -I ignores
  // PYTHONPATH and the user's site-packages, -S the environment's (scripts/test.sh installs
  // the package in the venv whose interpreter the tests use). With PYTHONPATH ignored, a
  // wrapper script names the folder.
  const std::string wrapper = file("python-isolated");
  std::ofstream(wrapper) << "#!/bin/sh\nexec '" << test_python()
                         << "' -I -S -c 'import sys; sys.path.insert(0, \"" << file("empty")
                         << "\"); import runpy; runpy.run_module(\"gpusort.plot\", "
                            "run_name=\"__main__\")' \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  const outcome o = shell("GPUSORT_PYTHON=" + wrapper + " \"$GPUSORT\" plot " +
                          file("bench.csv") + " " + file("figures"));
  EXPECT_TRUE(usage_failure(o, "plot", "No module named")) << o.err;
}

TEST_F(Plot, BenchKeepsItsMeasurementsWithoutAPlotter) {
  const outcome o = shell("GPUSORT_PYTHON=" + file("no-python") +
                          " \"$GPUSORT\" bench --sizes 2^10..2^11 --reps 1 --plot " +
                          file("figures"));
  EXPECT_TRUE(failure_with(o, 0, "bench", "no figures drawn")) << o.err;
  EXPECT_NE(o.out.find("verified"), std::string::npos) << o.out;
  EXPECT_TRUE(slurp(file("figures/bench.csv")).starts_with("algorithm,")) << o.out;
}

TEST_F(Plot, BenchDrawsItsCsv) {
  need("matplotlib");
  if (IsSkipped()) return;
  const outcome o = plot("bench --sizes 2^10..2^11 --reps 1 --plot " + file("figures"));
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("figure: " + file("figures") + "/rate_u32_none_uniform.png\n"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(png_size(file("figures/rate_u32_none_uniform.png")).first, 1000u);
}

}  // namespace
