// options::nans for the file sorts and host arrays. Their merges and checks order float keys
// with NaNs as the largest keys (options.hpp, with_nans_largest); when NaNs were asked to be
// the smallest (descending with NaNs last, ascending with NaNs first), the finished output's
// NaN block is rotated to the other end before the output is committed: binary records by two
// reversals in bounded memory (each part, then the whole file: the same index math as the
// device's, index_math/nan_block.hpp), text (always small enough to sort in memory) line by line.
// Two more passes over the output, only when there are NaNs to move.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "file_io.hpp"
#include "records.hpp"
#include "gpusort/detail/index_math/nan_block.hpp"
#include "gpusort/options.hpp"

namespace gpusort::detail::external {

// Reverses the order of records [first, last) of fd (record_bytes each), a chunk from each end
// at a time.
inline void reverse_records(int fd, const std::string& path, std::uint64_t first,
                            std::uint64_t last, std::uint64_t record_bytes) {
  constexpr std::uint64_t chunk_bytes = std::uint64_t{32} << 20;
  const std::uint64_t chunk_records = std::max<std::uint64_t>(1, chunk_bytes / record_bytes);
  std::vector<unsigned char> front, back;
  const auto reverse_in_memory = [&](std::vector<unsigned char>& records) {
    const std::uint64_t count = records.size() / record_bytes;
    for (std::uint64_t i = 0, j = count - 1; i < j; ++i, --j)
      std::swap_ranges(records.begin() + i * record_bytes, records.begin() + (i + 1) * record_bytes,
                       records.begin() + j * record_bytes);
  };
  while (last - first >= 2) {
    const std::uint64_t c = std::min(chunk_records, (last - first) / 2);
    front.resize(c * record_bytes);
    back.resize(c * record_bytes);
    read_at(fd, first * record_bytes, front.data(), front.size(), path);
    read_at(fd, (last - c) * record_bytes, back.data(), back.size(), path);
    reverse_in_memory(front);
    reverse_in_memory(back);
    write_at(fd, first * record_bytes, back.data(), back.size(), path);
    write_at(fd, (last - c) * record_bytes, front.data(), front.size(), path);
    first += c;
    last -= c;
  }
}

// A sorted binary file of float keys K (at the start of records of record_bytes) whose NaNs
// are the largest keys: the NaNs moved to the other end.
template <class K>
void move_file_nans(int fd, const std::string& path, std::uint64_t file_bytes,
                    std::uint64_t record_bytes, bool descending) {
  const std::uint64_t n = file_bytes / record_bytes;
  const auto is_nan_at = [&](std::uint64_t i) {
    K key;
    read_at(fd, i * record_bytes, &key, sizeof(K), path);
    return key != key;
  };
  // Descending: the NaNs lead; ascending: they trail. Binary search for where they end/start.
  std::uint64_t low = 0, high = n;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    if (is_nan_at(mid) == descending)
      low = mid + 1;
    else
      high = mid;
  }
  const std::uint64_t m = index_math::nan_block_count(low, n, descending);
  if (index_math::nan_block_stays(m, n)) return;
  const std::uint64_t split = index_math::nan_block_split(m, n, descending);
  reverse_records(fd, path, 0, split, record_bytes);
  reverse_records(fd, path, split, n, record_bytes);
  reverse_records(fd, path, 0, n, record_bytes);
}

// The same for a text output: one key (and maybe a value) per line, NaNs written "nan" or
// "-nan".
inline void move_text_nans(int fd, const std::string& path, std::uint64_t file_bytes,
                           bool descending) {
  std::string text(file_bytes, '\0');
  read_at(fd, 0, text.data(), file_bytes, path);
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    lines.emplace_back(text.data() + at, std::min(end + 1, text.size()) - at);
    at = end + 1;
  }
  const auto is_nan = [](std::string_view line) {
    if (!line.empty() && (line[0] == '-' || line[0] == '+')) line.remove_prefix(1);
    return line.substr(0, 3) == "nan";
  };
  const auto numbers_first = std::partition_point(lines.begin(), lines.end(), [&](std::string_view l) {
    return is_nan(l) == descending;
  });
  // Descending: NaNs [begin, numbers_first) go to the end; ascending: [numbers_first, end) first.
  std::rotate(lines.begin(), numbers_first, lines.end());
  std::string out;
  out.reserve(text.size());
  for (std::string_view l : lines) {
    out.append(l);
    if (out.back() != '\n') out.push_back('\n');  // a last line without its newline
  }
  if (!text.empty() && text.back() != '\n') out.pop_back();
  write_at(fd, 0, out.data(), out.size(), path);
}

// Host keys sorted with NaNs largest: the NaN block rotated to the other end.
template <class K>
void move_host_nans(std::span<K> keys, bool descending) {
  const auto numbers_first = std::partition_point(keys.begin(), keys.end(), [&](K k) {
    return (k != k) == descending;
  });
  std::rotate(keys.begin(), numbers_first, keys.end());
}

// Has `out` move the NaNs of a sort of K keys (pairs: a K key and a u32 value; text: one
// record per line) before it commits, when `requested` asks for NaNs as the smallest keys.
template <class K>
void place_nans_on_commit(pending_file& out, const gpusort::options& requested, bool pairs,
                          bool text) {
  if constexpr (std::is_floating_point_v<K>) {
    if (!gpusort::nans_lowest(requested.direction, requested.nans)) return;
    const bool descending = requested.direction == gpusort::order::descending;
    const std::string path = out.path();
    out.before_commit([=](int fd, std::uint64_t bytes) {
      if (text)
        move_text_nans(fd, path, bytes, descending);
      else
        move_file_nans<K>(fd, path, bytes, sizeof(K) + (pairs ? 4 : 0), descending);
    });
  }
}

}  // namespace gpusort::detail::external
