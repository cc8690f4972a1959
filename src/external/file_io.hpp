// Fast file I/O for large records files, on all cores: pread and pwrite in pieces from
// several threads (the page cache serves reads in parallel, where one read() stream tops out
// near 2 GB/s), into outputs reserved before any record is written (a full disk shows first).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "concurrency.hpp"
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
  if (pieces <= 1)  // no threads for a record or two (a merge's key lookups)
    return size == 0 || move(std::uint64_t{0}, size) ? 0 : (errno != 0 ? errno : EIO);
  std::atomic<int> failure{0};
#pragma omp parallel for schedule(dynamic) if (!one_of_many)
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

// Reserves size bytes of disk for fd, so that a full disk shows before the work rather than
// midway; io_failure "PATH: no space left on device (N bytes needed)".
inline void reserve_file(int fd, std::uint64_t size, const std::string& path) {
  if (size == 0) return;
  const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (error == ENOSPC)
    throw io_failure(path + ": no space left on device (" + std::to_string(size) +
                   " bytes needed)");
  if (error != 0) throw io_failure(path + ": cannot reserve space: " + std::strerror(error));
}

// A file of a known size, written with pwrite at any offset from any thread: reserved first
// (reserve_file), so that a full disk shows before any record is written. Not a shared
// mapping: on the H100 host (Linux 6.18) 10 GB went into the page cache at 3.7-4.7 GB/s by
// pwrite against 1.7 GB/s by copies into a mapping, whose page faults the kernel serializes.
// `start_writeback`: each piece's writeback starts as it is written, for an output that the
// commit puts on disk (pending_file::replaces_a_file): the fsync then waits for little. A new
// output is left to the page cache, which takes it at memory speed where the disk would pace
// every piece.
class output_file {
 public:
  output_file(int fd, std::uint64_t size, std::string path, bool start_writeback)
      : fd_(fd), size_(size), path_(std::move(path)), start_writeback_(start_writeback) {
    reserve_file(fd_, size_, path_);
  }
  std::uint64_t size() const { return size_; }
  void write(std::uint64_t offset, const void* data, std::uint64_t size) const {
    write_at(fd_, offset, data, size, path_);
    if (start_writeback_ && size > 0)
      ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(size),
                        SYNC_FILE_RANGE_WRITE);  // a hint: failures show at the fsync
  }

 private:
  int fd_;
  std::uint64_t size_;
  std::string path_;
  bool start_writeback_;
};

}  // namespace gpusort::detail::external
