// tools/file_io.hpp: parallel pread/pwrite in pieces, the mapped output, and their errors
// (a full disk, a file that shrank), which must name the file and say what went wrong.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "file_io.hpp"

namespace fs = std::filesystem;
namespace tools = gpusort::detail::external;

namespace {

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpusort-file-io-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// Sizes around the piece size, so that the last piece is short or missing.
std::vector<std::uint64_t> awkward_sizes() {
  const std::uint64_t piece = tools::io_piece_bytes;
  return {0, 1, 4095, piece - 1, piece, piece + 1, 3 * piece + 12345};
}

std::vector<unsigned char> pattern(std::uint64_t size) {
  std::vector<unsigned char> data(size);
  for (std::uint64_t i = 0; i < size; ++i) data[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
  return data;
}

TEST_F(FileIo, WriteAtAndReadAtRoundTripAtAnOffset) {
  for (const std::uint64_t size : awkward_sizes()) {
    const std::vector<unsigned char> data = pattern(size);
    const int fd = ::open(file("f").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    tools::write_at(fd, 7, data.data(), size, file("f"));
    std::vector<unsigned char> back(size, 0xEE);
    tools::read_at(fd, 7, back.data(), size, file("f"));
    ::close(fd);
    EXPECT_EQ(back, data) << size;
    EXPECT_EQ(fs::file_size(file("f")), size == 0 ? 0 : size + 7) << size;
  }
}

TEST_F(FileIo, OutputFileHoldsWhatIsWrittenInPieces) {
  for (const std::uint64_t size : awkward_sizes()) {
    const bool start_writeback = size % 2 == 0;  // both ways over the sizes
    const std::vector<unsigned char> data = pattern(size);
    const int fd = ::open(file("m").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    {
      const tools::output_file out(fd, size, file("m"), start_writeback);
      ASSERT_EQ(out.size(), size);
      ASSERT_EQ(fs::file_size(file("m")), size);  // reserved before anything is written
      const std::uint64_t half = size / 2;  // the second half first: any order works
      out.write(half, data.data() + half, size - half);
      out.write(0, data.data(), half);
    }
    ::close(fd);
    std::vector<unsigned char> back(size);
    const int in = ::open(file("m").c_str(), O_RDONLY);
    tools::read_at(in, 0, back.data(), size, file("m"));
    ::close(in);
    EXPECT_EQ(back, data) << size;
  }
}

TEST_F(FileIo, AFullDiskSaysSo) {
  const int fd = ::open("/dev/full", O_WRONLY);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  const std::vector<unsigned char> data = pattern(3 * tools::io_piece_bytes);
  std::string message;
  try {
    tools::write_at(fd, 0, data.data(), data.size(), "/dev/full");
  } catch (const gpusort::io_failure& e) {
    message = e.what();
  }
  ::close(fd);
  EXPECT_EQ(message, "/dev/full: write failed: no space left on device");
}

TEST_F(FileIo, AShorterFileThanExpectedIsAnError) {
  const std::vector<unsigned char> data = pattern(1000);
  const int fd = ::open(file("short").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  tools::write_at(fd, 0, data.data(), data.size(), file("short"));
  std::vector<unsigned char> back(2000);
  std::string message;
  try {
    tools::read_at(fd, 0, back.data(), back.size(), file("short"));
  } catch (const gpusort::io_failure& e) {
    message = e.what();
  }
  ::close(fd);
  EXPECT_EQ(message, file("short") + ": read failed (did the file change?)");
}

}  // namespace
