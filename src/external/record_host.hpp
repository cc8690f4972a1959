// Host work on packed records that the run sorts and the GPU pipelines share: the
// order-independent checksum of whole records, the order check, byte keys' u64 prefixes,
// putting the indices of equal keys in order, and gathering records by index.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <semaphore>
#include <span>
#include <utility>
#include <vector>

#include "concurrency.hpp"
#include "records.hpp"
#include "run_merge.hpp"

namespace gpusort::detail::external {

// The hash of a whole record, all its bytes: 8-byte words chained through mix64.
inline std::uint64_t byte_record_hash(const unsigned char* record, std::size_t bytes) {
  std::uint64_t h = mix64(0x9E3779B97F4A7C15ull + bytes);
  std::size_t at = 0;
  for (; at + 8 <= bytes; at += 8) {
    std::uint64_t word;
    std::memcpy(&word, record + at, 8);
    h = mix64(h + word);
  }
  if (at < bytes) {
    std::uint64_t word = 0;
    std::memcpy(&word, record + at, bytes - at);
    h = mix64(h + word);
  }
  return h;
}

// The order-independent checksum (records.hpp) of packed records of `bytes` bytes, on all cores.
inline checksum checksum_of_byte_records(std::span<const unsigned char> data, std::size_t bytes) {
  std::uint64_t sum = 0, xor_all = 0;
  const std::int64_t n = static_cast<std::int64_t>(data.size() / bytes);
#pragma omp parallel for reduction(+ : sum) reduction(^ : xor_all)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t h =
        byte_record_hash(data.data() + static_cast<std::size_t>(i) * bytes, bytes);
    sum += h;
    xor_all ^= h;
  }
  return {sum, xor_all};
}

// Records of `layout` that come right after one they should follow: their count, and the
// first (order_report of records.hpp). On all cores.
inline order_report scan_record_order(std::span<const unsigned char> data,
                                      const record_layout& layout) {
  const std::size_t bytes = layout.record_bytes;
  const std::int64_t n = static_cast<std::int64_t>(data.size() / bytes);
  return with_record_order(layout, [&](auto before) {
    std::uint64_t count = 0;
    std::int64_t first = n;
#pragma omp parallel for reduction(+ : count) reduction(min : first)
    for (std::int64_t i = 1; i < n; ++i) {
      if (before(&data[i * bytes], &data[(i - 1) * bytes])) {
        ++count;
        first = std::min(first, i);
      }
    }
    return order_report{count, count > 0 ? static_cast<std::uint64_t>(first) : 0};
  });
}

// The key's first min(8, key_bytes) bytes as a big-endian number, zero-padded: u64 order is
// memcmp order of the prefixes.
inline std::uint64_t key_prefix(const unsigned char* key, std::size_t key_bytes) {
  std::uint64_t word = 0;
  if (key_bytes >= 8)
    std::memcpy(&word, key, 8);
  else
    std::memcpy(&word, key, key_bytes);
  return __builtin_bswap64(word);  // the host is little-endian (records.hpp)
}

// Groups of equal keys at least this long are put in order one at a time on all cores
// (parallel_sort); shorter ones side by side, one per thread.
inline constexpr std::size_t large_tie_group = std::size_t{1} << 16;

// Puts in order, by `tie_less` (a strict order on indices), the indices of every group of
// equal keys in index[0..n): same(a, b) says whether the keys at places a and b are equal,
// and the keys are sorted, so that groups are consecutive. On all cores: each chunk of places
// orders the groups that start in it (running past its end if need be).
template <class Index, class Same, class TieLess>
void order_tie_groups(std::size_t n, Index* index, Same&& same, TieLess tie_less) {
  constexpr std::size_t chunk = std::size_t{1} << 16;
  const std::int64_t chunks = static_cast<std::int64_t>((n + chunk - 1) / chunk);
  std::vector<std::pair<std::size_t, std::size_t>> large;
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::size_t begin = static_cast<std::size_t>(c) * chunk;
    const std::size_t stop = std::min(n, begin + chunk);
    if (begin > 0)
      while (begin < stop && same(begin - 1, begin)) ++begin;  // an earlier chunk's group
    while (begin < stop) {
      std::size_t end = begin + 1;
      while (end < n && same(end, begin)) ++end;
      if (end - begin >= large_tie_group) {
#pragma omp critical(gpusort_large_tie_groups)
        large.emplace_back(begin, end);
      } else if (end - begin > 1) {
        std::sort(index + begin, index + end, tie_less);
      }
      begin = end;
    }
  }
  for (const auto& [begin, end] : large) parallel_sort(index + begin, index + end, tie_less);
}

// out[i] = record index[i] of `data` (records of `bytes` bytes) for i < n, on all cores.
template <class Index>
void gather_records(const unsigned char* data, const Index* index, std::uint64_t n,
                    std::size_t bytes, unsigned char* out) {
#pragma omp parallel for schedule(static, 4096)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
    std::memcpy(out + static_cast<std::size_t>(i) * bytes,
                data + static_cast<std::size_t>(index[i]) * bytes, bytes);
}

// Bytes whose contents are overwritten at once: no zero-filling of gigabytes.
inline std::unique_ptr<unsigned char[]> uninitialized_bytes(std::uint64_t size) {
  return std::unique_ptr<unsigned char[]>(new unsigned char[std::max<std::uint64_t>(size, 1)]);
}

// The checks of records on their way out: an order-independent checksum, and how many records
// come right after one they should follow, across pieces too.
struct record_tally {
  checksum sum;
  std::uint64_t out_of_order = 0;
  std::vector<unsigned char> last;  // the last record added in order

  void add(std::span<const unsigned char> data, std::size_t bytes) {
    const checksum piece = checksum_of_byte_records(data, bytes);
    sum.sum += piece.sum;
    sum.xor_all ^= piece.xor_all;
  }
  void add_in_order(std::span<const unsigned char> data, const record_layout& layout) {
    add(data, layout.record_bytes);
    if (data.empty()) return;
    out_of_order += scan_record_order(data, layout).out_of_order;
    if (!last.empty() &&
        with_record_order(layout, [&](auto before) { return before(data.data(), last.data()); }))
      ++out_of_order;
    last.assign(data.end() - static_cast<std::ptrdiff_t>(layout.record_bytes), data.end());
  }
};

// Records index[0..n) of `data`, gathered on all cores in pieces of about 64 MiB, each
// checked (into `tally`, when not null) and handed to put(first, piece, count) on a second
// worker, which writes it while the next piece is gathered. The calling thread reports
// progress(done) after each piece (progress sinks run on the caller's thread).
template <class Index, class Put, class Progress>
void gather_in_pieces(const unsigned char* data, const Index* index, std::uint64_t n,
                      const record_layout& layout, record_tally* tally, Put&& put,
                      Progress&& progress) {
  const std::size_t bytes = layout.record_bytes;
  const std::uint64_t piece = std::max<std::uint64_t>(1, (std::uint64_t{64} << 20) / bytes);
  const std::uint64_t buffer_bytes = std::min(piece, n) * bytes;
  const std::array<std::unique_ptr<unsigned char[]>, 2> buffers{uninitialized_bytes(buffer_bytes),
                                                                 uninitialized_bytes(buffer_bytes)};
  const std::uint64_t pieces = (n + piece - 1) / piece;
  // Buffers handed from the gatherer (the calling thread) to the writer and back. A failure
  // on either side opens both ways so that the other stops instead of waiting.
  std::counting_semaphore<> gathered(0), written(2);
  std::atomic<bool> failed{false};
  const auto stop_both = [&] {
    failed = true;
    gathered.release();
    written.release();
  };
  run_concurrently(2, [&](unsigned worker) {
    try {
      for (std::uint64_t k = 0; k < pieces; ++k) {
        const std::uint64_t first = k * piece, count = std::min(piece, n - first);
        unsigned char* buffer = buffers[k % 2].get();
        if (worker == 0) {
          written.acquire();
          if (failed) return;
          gather_records(data, index + first, count, bytes, buffer);
          if (tally) tally->add_in_order(std::span<const unsigned char>(buffer, count * bytes), layout);
          gathered.release();
          progress(first + count);
        } else {
          gathered.acquire();
          if (failed) return;
          put(first, buffer, count);
          written.release();
        }
      }
    } catch (...) {
      stop_both();
      throw;
    }
  });
}

}  // namespace gpusort::detail::external
