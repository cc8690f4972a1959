// Fast file I/O for large records files, on all cores: pread and pwrite in pieces from
// several threads (the page cache serves them in parallel, where one read() or write() stream
// tops out near 2 GB/s), and output through a shared mapping of a preallocated file, so that
// threads copy into it side by side (a buffered write() takes the file's lock) and a full
// disk is reported before any record is written.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort::detail::external {

// Pieces small enough to spread over the cores, large enough to keep syscalls rare.
inline constexpr std::uint64_t io_piece_bytes = std::uint64_t{8} << 20;

namespace io_detail {

// Runs move(offset, length) over [0, size) in pieces on all cores; the first failure's
// errno (move returns false and leaves it set) is returned, 0 on success.
template <class Move>
int in_parallel_pieces(std::uint64_t size, Move&& move) {
  const std::int64_t pieces = static_cast<std::int64_t>((size + io_piece_bytes - 1) / io_piece_bytes);
  std::atomic<int> failure{0};
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t p = 0; p < pieces; ++p) {
    if (failure.load(std::memory_order_relaxed) != 0) continue;
    const std::uint64_t offset = static_cast<std::uint64_t>(p) * io_piece_bytes;
    if (!move(offset, std::min(io_piece_bytes, size - offset))) {
      int expected = 0;
      failure.compare_exchange_strong(expected, errno != 0 ? errno : EIO);
    }
  }
  return failure.load();
}

inline std::string io_failure_text(int error) {
  if (error == ENOSPC) return "no space left on device";
  return std::strerror(error);
}

}  // namespace io_detail

// Reads bytes [offset, offset + size) of fd into data; io_failure naming `path` on failure or a
// file shorter than that (it changed while it was read).
inline void read_at(int fd, std::uint64_t offset, void* data, std::uint64_t size,
                    const std::string& path) {
  auto* bytes = static_cast<unsigned char*>(data);
  std::atomic<bool> truncated{false};
  const int error = io_detail::in_parallel_pieces(size, [&](std::uint64_t at, std::uint64_t length) {
    while (length > 0) {
      const ssize_t got = ::pread(fd, bytes + at, length, static_cast<off_t>(offset + at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        if (got == 0) truncated = true, errno = EIO;
        return false;
      }
      at += static_cast<std::uint64_t>(got);
      length -= static_cast<std::uint64_t>(got);
    }
    return true;
  });
  if (truncated) throw io_failure(path + ": read failed (did the file change?)");
  if (error != 0) throw io_failure(path + ": read failed: " + io_detail::io_failure_text(error));
}

// Writes data to bytes [offset, offset + size) of fd; io_failure on failure, ENOSPC as "no
// space left on device".
inline void write_at(int fd, std::uint64_t offset, const void* data, std::uint64_t size,
                     const std::string& path) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const int error = io_detail::in_parallel_pieces(size, [&](std::uint64_t at, std::uint64_t length) {
    while (length > 0) {
      const ssize_t put = ::pwrite(fd, bytes + at, length, static_cast<off_t>(offset + at));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) {
        if (put == 0) errno = EIO;
        return false;
      }
      at += static_cast<std::uint64_t>(put);
      length -= static_cast<std::uint64_t>(put);
    }
    return true;
  });
  if (error != 0) throw io_failure(path + ": write failed: " + io_detail::io_failure_text(error));
}

// memcpy on all cores, for copies of hundreds of megabytes.
inline void copy_in_parallel(void* to, const void* from, std::uint64_t size) {
  auto* out = static_cast<unsigned char*>(to);
  const auto* in = static_cast<const unsigned char*>(from);
  io_detail::in_parallel_pieces(size, [&](std::uint64_t at, std::uint64_t length) {
    std::memcpy(out + at, in + at, length);
    return true;
  });
}

// Reserves size bytes of disk for fd, so that a full disk shows now rather than as a
// SIGBUS in a mapping; io_failure "PATH: no space left on device (N bytes needed)".
inline void reserve_file(int fd, std::uint64_t size, const std::string& path) {
  if (size == 0) return;
  const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (error == ENOSPC)
    throw io_failure(path + ": no space left on device (" + std::to_string(size) +
                   " bytes needed)");
  if (error != 0) throw io_failure(path + ": cannot reserve space: " + std::strerror(error));
}

// A file of a known size written through a shared mapping: preallocated (reserve_file), then
// filled by copies from any thread. The mapping is released by the destructor; the file's
// data reaches the disk through the page cache like that of write().
class mapped_output {
 public:
  mapped_output(int fd, std::uint64_t size, const std::string& path) : size_(size) {
    if (size == 0) return;
    reserve_file(fd, size, path);
    void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) throw io_failure(path + ": cannot map it: " + std::strerror(errno));
    data_ = static_cast<unsigned char*>(at);
  }
  ~mapped_output() { release(); }
  mapped_output(const mapped_output&) = delete;
  mapped_output& operator=(const mapped_output&) = delete;

  unsigned char* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  // Unmaps the file (before it is synced and renamed).
  void release() {
    if (data_) ::munmap(data_, size_);
    data_ = nullptr;
  }

 private:
  unsigned char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace gpusort::detail::external
