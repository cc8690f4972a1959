// A test fixture with a directory of its own for the files a test writes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace gpusort::testing {

// dir_ is made empty before each test and removed after it. Its name holds the process id, so
// that runs of the same test in parallel processes keep apart.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpusort_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // A fixture that skips before SetUp here leaves dir_ empty.
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
};

}  // namespace gpusort::testing
