// The tool's side of records sorted by a byte key: the options that describe them
// (--record-bytes B --key-bytes K [--key-offset O]) and gen's records of that kind. Sorting
// and checking them is the library's (src/external/record_sort.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "cli.hpp"
#include "common/distributions.hpp"
#include "record_sort.hpp"
#include "progress.hpp"

namespace gpusort::tools {

inline constexpr std::uint64_t max_record_bytes = 65536;

// The layout of --record-bytes B --key-bytes K [--key-offset O] (byte keys, in the order of
// --desc), or none without --record-bytes. Usage errors for a key that does not fit, and for
// the options of typed keys (--type, --pairs, --text) beside it.
inline std::optional<record_layout> parse_record_layout(const arguments& args, bool descending) {
  if (!args.has("record-bytes")) {
    if (args.has("key-bytes") || args.has("key-offset"))
      throw usage_error("--key-bytes and --key-offset go with --record-bytes");
    return std::nullopt;
  }
  for (const char* typed : {"type", "pairs", "text"})
    if (args.has(typed))
      throw usage_error(std::string("--") + typed +
                        " does not go with --record-bytes (raw records sorted by a byte key)");
  const std::uint64_t record = parse_unsigned(args.get("record-bytes"), "--record-bytes");
  if (record == 0 || record > max_record_bytes)
    throw usage_error("--record-bytes must be from 1 to " + std::to_string(max_record_bytes));
  if (!args.has("key-bytes")) throw usage_error("--record-bytes needs --key-bytes");
  const std::uint64_t key = parse_unsigned(args.get("key-bytes"), "--key-bytes");
  const std::uint64_t offset = parse_unsigned(args.get("key-offset", "0"), "--key-offset");
  if (key == 0) throw usage_error("--key-bytes must be at least 1");
  if (offset > record || key > record - offset)
    throw usage_error("a key of " + std::to_string(key) + " bytes at offset " +
                      std::to_string(offset) + " does not fit in a record of " +
                      std::to_string(record) + " bytes");
  return record_layout{record, offset, key, key_kind::bytes, descending};
}

// ---- gen ------------------------------------------------------------------------------

// Whether gen makes records of distribution d.
constexpr bool byte_records_distribution(distribution d) {
  return d == distribution::uniform || d == distribution::sorted || d == distribution::reverse ||
         d == distribution::few_unique || d == distribution::all_equal;
}

// Writes n records of `layout` to `out` (committed when complete). The key: its first
// min(8, K) bytes are those of a 64-bit number, most significant first (uniform: random;
// sorted, reverse: the same numbers in order; few_unique: one of 16; all_equal: one), and
// bytes beyond 8 follow from that number (few_unique: one of two tails for each, so that keys
// share a prefix and differ after it; uniform: random). The payload (the bytes outside the
// key, in order) starts with the record's index, 8 bytes little-endian (fewer if the payload
// is shorter), then filler bytes from the index, so that every record is distinct and
// stability shows.
inline void generate_byte_records(pending_file& out, const record_layout& layout, std::uint64_t n,
                                  distribution d, std::uint64_t seed, progress_sink& meter) {
  const std::size_t bytes = layout.record_bytes, key_bytes = layout.key_bytes,
                    key_offset = layout.key_offset;
  std::vector<std::uint64_t> ordered;
  if (d == distribution::sorted || d == distribution::reverse)
    ordered = generate<std::uint64_t>(d, n, seed);
  constexpr std::uint64_t few = 16;
  const auto number = [&](std::uint64_t i) -> std::uint64_t {
    switch (d) {
      case distribution::sorted:
      case distribution::reverse: return ordered[i];
      case distribution::few_unique:
        return random_bits(seed ^ 0xABCDEFull, random_bits(seed, i) % few);
      case distribution::all_equal: return random_bits(seed ^ 0xABCDEFull, 0);
      default: return random_bits(seed, i);
    }
  };
  const auto make = [&](std::uint64_t i, unsigned char* record) {
    const std::uint64_t v = number(i);
    unsigned char* key = record + key_offset;
    const std::uint64_t big_endian = __builtin_bswap64(v);
    std::memcpy(key, &big_endian, std::min<std::size_t>(key_bytes, 8));
    for (std::size_t at = 8, word = 0; at < key_bytes; at += 8, ++word) {
      std::uint64_t tail;
      if (d == distribution::uniform)
        tail = random_bits(seed + 0x1000003ull * (word + 1), i);
      else if (d == distribution::few_unique)
        tail = random_bits(v + ((random_bits(seed, i) / few) & 1), word);
      else
        tail = random_bits(v, word);
      std::memcpy(key + at, &tail, std::min<std::size_t>(key_bytes - at, 8));
    }
    std::size_t p = 0;  // payload byte
    for (std::size_t at = 0; at < bytes; ++at) {
      if (at == key_offset) at += key_bytes;
      if (at >= bytes) break;
      const std::uint64_t word = p < 8 ? i : mix64(i + p / 8);
      record[at] = static_cast<unsigned char>(word >> (8 * (p % 8)));
      ++p;
    }
  };
  meter.phase("generating", true);
  const std::uint64_t chunk = std::max<std::uint64_t>(1, chunk_bytes / bytes);
  std::vector<unsigned char> buffer(std::min<std::uint64_t>(chunk, n) * bytes);
  for (std::uint64_t begin = 0; begin < n; begin += chunk) {
    const std::int64_t count = static_cast<std::int64_t>(std::min(chunk, n - begin));
#pragma omp parallel for schedule(static, 1024)
    for (std::int64_t i = 0; i < count; ++i)
      make(begin + static_cast<std::uint64_t>(i),
           buffer.data() + static_cast<std::size_t>(i) * bytes);
    write_bytes(out.get(), buffer.data(), static_cast<std::size_t>(count) * bytes, out.path());
    meter.advance(begin + static_cast<std::uint64_t>(count), n);
  }
  out.commit();
}

}  // namespace gpusort::tools
