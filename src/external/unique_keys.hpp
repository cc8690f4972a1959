// `gpusort sort -u` of typed keys (issue 73): the finished, sorted output keeps the first
// record of each run of equal keys, compacted in place before the output is committed (a
// pending_file's before_commit), a block at a time in bounded memory. Keys are equal as
// values, with every NaN equal to every other and -0.0 to +0.0; with a stable sort of pairs,
// the record kept is the first of its key in the input.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "file_io.hpp"
#include "records.hpp"

namespace gpusort::detail::external {

// Whether two keys are one for -u: equal values, every NaN one key (half and bfloat16 compared
// as floats).
template <class K>
bool same_key(K a, K b) {
  if constexpr (std::is_arithmetic_v<K>) {
    if constexpr (std::is_floating_point_v<K>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    }
    return a == b;
  } else {
    return same_key(static_cast<float>(a), static_cast<float>(b));
  }
}

// Compacts the sorted records of fd (record_bytes each, the key K first) so that each key
// appears once, keeping the first record of each run; truncates the file to what is kept.
template <class K>
void keep_first_of_equal_keys(int fd, const std::string& path, std::uint64_t file_bytes,
                              std::uint64_t record_bytes) {
  constexpr std::uint64_t block_bytes = std::uint64_t{8} << 20;
  const std::uint64_t block_records = std::max<std::uint64_t>(1, block_bytes / record_bytes);
  const std::uint64_t n = file_bytes / record_bytes;
  std::vector<unsigned char> block;
  std::uint64_t kept = 0;  // records written back so far (never past the one read)
  bool any = false;
  K last{};
  for (std::uint64_t first = 0; first < n; first += block_records) {
    const std::uint64_t count = std::min(block_records, n - first);
    block.resize(count * record_bytes);
    read_at(fd, first * record_bytes, block.data(), block.size(), path);
    std::uint64_t out = 0;  // records kept in this block, moved to its front
    for (std::uint64_t i = 0; i < count; ++i) {
      K key;
      std::memcpy(&key, block.data() + i * record_bytes, sizeof(K));
      if (any && same_key(key, last)) continue;
      if (out != i)
        std::memmove(block.data() + out * record_bytes, block.data() + i * record_bytes, record_bytes);
      ++out;
      last = key;
      any = true;
    }
    write_at(fd, kept * record_bytes, block.data(), out * record_bytes, path);
    kept += out;
  }
  if (::ftruncate(fd, static_cast<off_t>(kept * record_bytes)) != 0)
    throw io_failure(path + ": cannot truncate: " + system_error_text());
}

// Asks `out` to keep the first record of each key when it commits (binary keys or pairs).
template <class K>
void keep_unique_keys_on_commit(pending_file& out, bool pairs) {
  const std::string path = out.path();
  out.before_commit([=](int fd, std::uint64_t bytes) {
    keep_first_of_equal_keys<K>(fd, path, bytes, record_bytes<K>(pairs));
  });
}

}  // namespace gpusort::detail::external
