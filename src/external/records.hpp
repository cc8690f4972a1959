// Files of records (the library's file sorts and the gpusort tool): raw little-endian keys,
// packed (key, u32 value) records, or text (one `key` or `key value` per line), read and
// written in pieces that report progress. Also the two facts `check` and `bench` report about records: their
// order and an order-independent checksum.
#pragma once

#include <fcntl.h>
#include <locale.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpusort/detail/core/narrow_keys.hpp"
#include "gpusort/error.hpp"
#include "file_io.hpp"
#include "gpusort/key_traits.hpp"
#include "progress_sink.hpp"
#include "streams.hpp"

namespace gpusort::detail::external {

static_assert(std::endian::native == std::endian::little, "files are little-endian, as the host");

template <class K>
struct records {
  std::vector<K> keys;
  std::vector<std::uint32_t> values;  // one per key for pairs, else empty
  bool pairs = false;
};

template <class K>
constexpr std::size_t record_bytes(bool pairs) {
  return sizeof(K) + (pairs ? sizeof(std::uint32_t) : 0);
}

// The 16-bit floats (float16_key) are kept as their bits (the tool's text reads and writes
// them through float).

template <class K>
std::string describe_records(bool pairs) {
  return std::to_string(record_bytes<K>(pairs)) + "-byte records (" + std::string(key_name<K>) +
         (pairs ? " key, u32 value)" : " keys)");
}

// ---- order and checksum ---------------------------------------------------------------

// A key's code in gpusort's order: key_traits' for the 32- and 64-bit keys, narrow_code for
// the narrow ones (whose 16-bit floats' NaNs lie lowest or highest as nans_lowest says, each
// payload its own code, as the library sorts them). Equal codes are equal keys.
template <class K>
auto key_code(const K& key, bool nans_lowest) {
  if constexpr (narrow_key<K>) {
    using bits_type = typename detail::narrow_format<K>::bits_type;
    return detail::narrow_code<K>(detail::bit_cast<bits_type>(key), nans_lowest);
  } else {
    return key_traits<K>::ordered(key);
  }
}

struct order_report {
  std::uint64_t out_of_order = 0;  // positions i with record i before record i-1 in the order
  std::uint64_t first = 0;         // the first such i (when out_of_order > 0)
};

template <class K>
order_report scan_order(const std::vector<K>& keys, bool descending, bool nans_lowest = false) {
  const less<K> before;
  // Where float NaNs belong: first in the sequence (ascending with NaNs lowest, descending
  // with NaNs highest) or last.
  const bool nans_lead = descending != nans_lowest;
  const auto precedes = [&](const K& a, const K& b) {
    if constexpr (narrow_key<K>) {
      // By their codes (narrow_keys.hpp), every NaN of a 16-bit float one code.
      using format = detail::narrow_format<K>;
      const auto rank = [&](const K& k) {
        const auto code = detail::narrow_code<K>(
            detail::bit_cast<typename format::bits_type>(k), nans_lowest);
        if constexpr (float16_key<K>)
          return format::float_format::tie_nans(static_cast<std::uint16_t>(code), nans_lowest);
        else
          return code;
      };
      return descending ? rank(b) < rank(a) : rank(a) < rank(b);
    } else {
      if constexpr (std::is_floating_point_v<K>) {
        const bool a_nan = a != a, b_nan = b != b;
        if (a_nan || b_nan) return a_nan != b_nan && a_nan == nans_lead;
      }
      return descending ? before(b, a) : before(a, b);
    }
  };
  const std::int64_t n = static_cast<std::int64_t>(keys.size());
  std::uint64_t count = 0;
  std::int64_t first = n;
#pragma omp parallel for reduction(+ : count) reduction(min : first)
  for (std::int64_t i = 1; i < n; ++i) {
    if (precedes(keys[i], keys[i - 1])) {
      ++count;
      first = std::min(first, i);
    }
  }
  return {count, count > 0 ? static_cast<std::uint64_t>(first) : 0};
}

// splitmix64's finalizer: a cheap 64-bit hash with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Sum and xor of a hash of every record's bits: equal for every permutation of the same
// records, and (with near certainty) different once a record is lost, duplicated or changed.
struct checksum {
  std::uint64_t sum = 0, xor_all = 0;
  bool operator==(const checksum&) const = default;
  void add(std::uint64_t record_hash) {
    sum += record_hash;
    xor_all ^= record_hash;
  }
  std::string str() const {
    char text[48];
    std::snprintf(text, sizeof text, "%016llx-%016llx", static_cast<unsigned long long>(sum),
                  static_cast<unsigned long long>(xor_all));
    return text;
  }
};

// The hash of record i that checksums add up: of its key's bits and, for pairs, its value.
// A record's hash from its key's bits (zero-extended) and, for pairs, its value; shared by
// the in-memory records and packed runs so that their checksums agree.
inline std::uint64_t record_hash_of(std::uint64_t key_bits, bool pairs, std::uint32_t value) {
  return mix64(mix64(key_bits) + (pairs ? value + std::uint64_t{1} : 0));
}

template <class K>
std::uint64_t record_hash(const records<K>& r, std::size_t i) {
  std::uint64_t key_bits = 0;
  std::memcpy(&key_bits, &r.keys[i], sizeof(K));
  return record_hash_of(key_bits, r.pairs, r.pairs ? r.values[i] : 0);
}

template <class K>
checksum checksum_of(const records<K>& r) {
  std::uint64_t sum = 0, xor_all = 0;
  const std::int64_t n = static_cast<std::int64_t>(r.keys.size());
#pragma omp parallel for reduction(+ : sum) reduction(^ : xor_all)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t h = record_hash(r, static_cast<std::size_t>(i));
    sum += h;
    xor_all ^= h;
  }
  return {sum, xor_all};
}

// A sort whose output failed its checks: wrong_result naming the sort (and the run, `where`:
// " for run 3", or ""), what was wrong, and the output that was not written. The library
// prints nothing; the tool says it in one line with exit code 3.
[[noreturn]] inline void throw_wrong_result(std::string_view sort, std::string_view where,
                                            std::uint64_t out_of_order, std::string_view units,
                                            bool kept, const std::string& out) {
  throw gpusort::wrong_result("the " + std::string(sort) + " sort returned a wrong result" +
                              std::string(where) + " (" + std::to_string(out_of_order) + " " +
                              std::string(units) + " out of order, " + std::string(units) +
                              (kept ? " kept" : " changed") + "); " + out + " not written");
}

// ---- files --------------------------------------------------------------------------

inline std::string system_error_text() { return std::strerror(errno); }

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_handle = std::unique_ptr<std::FILE, file_closer>;

inline void write_bytes(std::FILE* f, const void* data, std::size_t size, const std::string& path) {
  if (size > 0 && std::fwrite(data, 1, size, f) != size)
    throw io_failure(path + ": write failed: " + system_error_text());
}

// The temporary file of the pending_file being written (one at a time), for the handler below.
inline std::atomic<const char*> pending_temp_path{nullptr};

// Ctrl-C or a kill while a pending_file is written: remove its temporary file, then end by
// the signal as before. Only async-signal-safe calls.
inline void remove_pending_temp_and_die(int signal_number) {
  if (const char* path = pending_temp_path.load()) ::unlink(path);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);  // delivered once the handler returns
}

// Whether the handlers may be installed (gpusort::set_signal_cleanup): off unless the caller
// asks, since a library installs no signal handler of its own accord; the tool asks, and a
// host that handles the signals itself (Python) cancels its sorts instead.
inline std::atomic<bool> signal_cleanup_allowed{false};

inline void remove_pending_temp_on_signals() {
  if (!signal_cleanup_allowed.load()) return;
  static const bool installed = [] {
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current = {};
      if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler == SIG_IGN)
        continue;  // as nohup asked
      struct sigaction remove = {};
      remove.sa_handler = remove_pending_temp_and_die;
      sigemptyset(&remove.sa_mask);
      ::sigaction(signal_number, &remove, nullptr);
    }
    return true;
  }();
  static_cast<void>(installed);
}

// An output file that appears at `path` only when complete and checked (streams.hpp has the
// rules). A regular file (or a new one, or the final target of a symbolic link) is written
// under a temporary name beside its final target and renamed over it by commit(); until then
// (and if commit is never reached, or a signal ends the process) whatever was there, the
// input too, stays as it was. A stream (`-`, a FIFO, a device, /dev/stdout) is opened now and
// written in place by commit(), in order, from an unlinked spool in the scratch directory:
// it is never unlinked or renamed over. Binary data is not written to a terminal. When the
// stream is standard output, the tool's own printing (--stats) moves to standard error.
// Created before the work, so that an output that cannot be created fails early, as a usage
// error.
class pending_file {
 public:
  // tmp_dir: --tmp DIR ("" when not given), where scratch goes instead of beside the target.
  explicit pending_file(std::string path, bool binary = true, std::string tmp_dir = "")
      : path_(std::move(path)), tmp_dir_(std::move(tmp_dir)) {
    namespace fs = std::filesystem;
    if (path_.empty()) throw invalid_request("an empty output file name");
    if (const int fd = named_descriptor(path_, STDOUT_FILENO); fd >= 0) {
      stream_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (stream_ < 0) throw invalid_request(path_ + ": cannot write to it: " + system_error_text());
    } else {
      struct stat info {};
      if (::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
        throw invalid_request(path_ + ": is a directory");
      if (::stat(path_.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
        // Another user's FIFO planted in /tmp: refused before its open waits for a reader,
        // and again once open, should it have been swapped meanwhile.
        const fs::path stream_target = final_target(path_);
        check_sticky_writable(stream_target, path_);
        stream_ = ::open(stream_target.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (stream_ < 0) throw invalid_request(path_ + ": cannot open: " + system_error_text());
        check_sticky_writable_open(stream_target);
      }
    }
    if (stream_ >= 0) {
      if (binary && ::isatty(stream_) == 1) {
        ::close(stream_);
        throw invalid_request(path_ + ": is a terminal; binary data is not written to one "
                          "(redirect it, or use --text)");
      }
      if (same_file(stream_, STDOUT_FILENO)) {
        std::fflush(stdout);
        ::dup2(STDERR_FILENO, STDOUT_FILENO);  // nothing else may write into the data
      }
      open_file(create_unlinked_file(scratch_dir()));
      return;
    }
    target_ = final_target(path_);
    std::error_code unreachable;  // e.g. a directory on the way that may not be searched
    const fs::file_status target_status = fs::status(target_, unreachable);
    if (unreachable && unreachable != std::errc::no_such_file_or_directory &&
        unreachable != std::errc::not_a_directory)  // both: creating it below says where
      throw invalid_request(path_ + ": " + unreachable.message());
    if (fs::is_directory(target_status)) throw invalid_request(path_ + ": is a directory");
    check_sticky_writable(target_, path_);
    const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
    remove_stale_scratch(target_);
    if (!tmp_dir_.empty()) remove_stale_scratch(scratch_anchor());
    remove_pending_temp_on_signals();
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
      temp_ = dir / scratch_name(target_.filename().string(), ".tmp", attempt);
      // Private while it is written; commit() gives it the replaced file's mode.
      fd = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 && errno != EEXIST) break;
      if (fd >= 0 && !lock_scratch(fd, temp_)) {  // removed as stale before it was locked
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0)
      throw invalid_request(path_ + ": cannot create a file in " + dir.string() + ": " +
                        system_error_text());
    pending_temp_path.store(temp_.c_str());
    open_file(fd);
  }
  ~pending_file() {
    if (!committed_) {
      file_.reset();
      discard();
    }
    if (stream_ >= 0) ::close(stream_);
  }
  pending_file(const pending_file&) = delete;
  pending_file& operator=(const pending_file&) = delete;

  std::FILE* get() const { return file_.get(); }
  // Whether the commit replaces a file (which it then puts on disk first: see commit()); a
  // stream and a new name replace none.
  bool replaces_a_file() const {
    struct stat info {};
    return !stream() && ::lstat(target_.c_str(), &info) == 0;
  }
  const std::string& path() const { return path_; }
  bool stream() const { return stream_ >= 0; }
  // A path whose directory holds the scratch of this output (out-of-core runs, a spooled
  // input) and whose name they are named after: beside the final target, or in --tmp DIR;
  // for a stream in --tmp DIR, $TMPDIR or /tmp.
  std::filesystem::path scratch_anchor() const {
    if (stream()) return stream_scratch_dir(tmp_dir_) / "gpusort";
    if (!tmp_dir_.empty()) return std::filesystem::path(tmp_dir_) / target_.filename();
    return target_;
  }
  // The directory of scratch_anchor(): "." for a bare name.
  std::filesystem::path scratch_dir() const {
    const std::filesystem::path anchor = scratch_anchor();
    return anchor.has_parent_path() ? anchor.parent_path() : std::filesystem::path(".");
  }

  // Work on the complete output before it becomes visible (fd and its size in bytes), in the
  // order given: the NaN move of a sort asked for NaNs as its smallest keys (nan_move.hpp),
  // then dropping repeated keys (unique_keys.hpp). Each may change the size.
  void before_commit(std::function<void(int fd, std::uint64_t bytes)> work) {
    before_commit_.push_back(std::move(work));
  }

  void commit() {
    for (const auto& work : before_commit_) {
      if (std::fflush(file_.get()) != 0)
        throw io_failure(path_ + ": write failed: " + system_error_text());
      struct stat info {};
      if (::fstat(::fileno(file_.get()), &info) != 0)
        throw io_failure(path_ + ": " + system_error_text());
      work(::fileno(file_.get()), static_cast<std::uint64_t>(info.st_size));
    }
    if (stream()) {
      if (std::fflush(file_.get()) != 0)
        throw io_failure(path_ + ": write failed: " + system_error_text());
      copy_to_stream(::fileno(file_.get()), stream_, path_);
      const int fd = std::exchange(stream_, -1);
      if (::close(fd) != 0) throw io_failure(path_ + ": write failed: " + system_error_text());
      committed_ = true;
      return;
    }
    // Where a file is replaced, the data is on disk, with its mode and owner, before the name
    // points at it: a crash leaves the old file or the new one. A new name has nothing to
    // lose, and is written as `sort -o` writes it (the page cache flushes it later): waiting
    // for the disk there would cost a large output most of its time. Never a file planted
    // meanwhile where the sticky rule forbids it.
    check_sticky_writable(target_, path_);
    if (std::fflush(file_.get()) != 0)
      throw io_failure(path_ + ": write failed: " + system_error_text());
    take_over_mode(::fileno(file_.get()));
    if ((replaces_a_file() && ::fsync(::fileno(file_.get())) != 0) ||
        std::fclose(file_.release()) != 0)
      throw io_failure(path_ + ": write failed: " + system_error_text());
    std::error_code ec;
    std::filesystem::rename(temp_, target_, ec);
    if (ec) throw io_failure(path_ + ": cannot replace it: " + ec.message());
    pending_temp_path.store(nullptr);
    committed_ = true;
  }

 private:
  // The sticky rule on the opened stream itself (the name may have been swapped).
  void check_sticky_writable_open(const std::filesystem::path& target) {
    struct stat info {};
    if (::fstat(stream_, &info) != 0) return;
    if (const std::string why = sticky_refusal(target, info); !why.empty()) {
      ::close(std::exchange(stream_, -1));
      throw invalid_request(path_ + ": " + why);
    }
  }
  void open_file(int fd) {
    file_.reset(::fdopen(fd, "w+b"));
    if (!file_) {
      ::close(fd);
      discard();
      throw io_failure(path_ + ": " + system_error_text());
    }
  }
  // The mode (permission bits) and owner of the file about to be replaced, or a new file's
  // mode. Only root can give a file to another owner; others keep their own.
  void take_over_mode(int fd) const {
    struct stat old {};
    mode_t mode = new_file_mode();
    if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
      if ((old.st_uid != ::geteuid() || old.st_gid != ::getegid()) &&
          ::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM)
        throw io_failure(path_ + ": cannot give it its owner: " + system_error_text());
      mode = old.st_mode & 0777;
    }
    if (::fchmod(fd, mode) != 0)
      throw io_failure(path_ + ": cannot give it its mode: " + system_error_text());
  }
  void discard() {
    if (temp_.empty()) return;
    pending_temp_path.store(nullptr);
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
  }

  std::string path_, tmp_dir_;
  std::filesystem::path target_, temp_;  // a regular output's final target and temporary
  int stream_ = -1;                      // a stream output's descriptor
  file_handle file_;
  bool committed_ = false;
  std::vector<std::function<void(int, std::uint64_t)>> before_commit_;
};

// Size of a regular file, or invalid_request naming why it cannot be input.
inline std::uint64_t input_file_size(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw invalid_request(path + ": " + ec.message());
  if (!fs::exists(status)) throw invalid_request(path + ": no such file");
  if (!fs::is_regular_file(status)) throw invalid_request(path + ": not a regular file");
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) throw io_failure(path + ": " + ec.message());
  return size;
}

inline file_handle open_input(const std::string& path) {
  file_handle f(std::fopen(path.c_str(), "rb"));
  if (!f) throw invalid_request(path + ": cannot open: " + system_error_text());
  return f;
}

inline void read_bytes(std::FILE* f, void* data, std::size_t size, const std::string& path) {
  if (size > 0 && std::fread(data, 1, size, f) != size)
    throw io_failure(path + ": read failed (did the file change?)");
}

// Keys alone and text move this many bytes at a time.
inline constexpr std::size_t chunk_bytes = std::size_t{1} << 24;

// Binary records move between files and memory this many bytes at a time, each on all cores.
inline constexpr std::size_t parallel_chunk_bytes = std::size_t{1} << 28;

// Calls move(offset, length) over [0, size) chunk by chunk, counting each on `meter`.
template <class Move>
void in_chunks(std::uint64_t size, progress_sink& meter, Move&& move,
               std::uint64_t chunk = chunk_bytes) {
  for (std::uint64_t done = 0; done < size;) {
    const std::size_t length = std::min<std::uint64_t>(chunk, size - done);
    move(done, length);
    done += length;
    meter.advance(done, size);
  }
}

template <class K>
records<K> read_binary(const std::string& path, bool pairs, progress_sink& meter) {
  const std::uint64_t size = input_file_size(path);
  const std::size_t bytes = record_bytes<K>(pairs);
  if (size % bytes != 0)
    throw invalid_request(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                      describe_records<K>(pairs));
  const std::size_t n = size / bytes;
  records<K> r{std::vector<K>(n), std::vector<std::uint32_t>(pairs ? n : 0), pairs};
  file_handle f = open_input(path);
  if (!pairs) {
    auto* bytes_of_keys = reinterpret_cast<unsigned char*>(r.keys.data());
    in_chunks(size, meter, [&](std::uint64_t offset, std::size_t length) {
      read_at(::fileno(f.get()), offset, bytes_of_keys + offset, length, path);
    }, parallel_chunk_bytes);
    return r;
  }
  // Packed pairs: read a chunk on all cores, then split into keys and values on all cores.
  const std::size_t chunk = parallel_chunk_bytes / bytes;
  std::vector<unsigned char> buffer(std::min(chunk, n) * bytes);
  for (std::size_t begin = 0; begin < n; begin += chunk) {
    const std::size_t count = std::min(chunk, n - begin);
    read_at(::fileno(f.get()), begin * bytes, buffer.data(), count * bytes, path);
#pragma omp parallel for schedule(static, 65536)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
      std::memcpy(&r.keys[begin + i], &buffer[i * bytes], sizeof(K));
      std::memcpy(&r.values[begin + i], &buffer[i * bytes + sizeof(K)], sizeof(std::uint32_t));
    }
    meter.advance(begin + count, n);
  }
  return r;
}

template <class K>
void write_binary(pending_file& out, const records<K>& r, progress_sink& meter) {
  std::FILE* const f = out.get();
  const std::string& path = out.path();
  if (!r.pairs) {
    const auto* bytes_of_keys = reinterpret_cast<const unsigned char*>(r.keys.data());
    const output_file output(::fileno(f), r.keys.size() * sizeof(K), path, out.replaces_a_file());
    in_chunks(output.size(), meter, [&](std::uint64_t offset, std::size_t length) {
      output.write(offset, bytes_of_keys + offset, length);
    }, parallel_chunk_bytes);
    return;
  }
  // Packed pairs: joined a chunk at a time on all cores, then written.
  constexpr std::size_t bytes = record_bytes<K>(true);
  const std::size_t n = r.keys.size(), chunk = parallel_chunk_bytes / bytes;
  const output_file output(::fileno(f), n * bytes, path, out.replaces_a_file());
  std::vector<unsigned char> buffer(std::min(chunk, n) * bytes);
  for (std::size_t begin = 0; begin < n; begin += chunk) {
    const std::size_t count = std::min(chunk, n - begin);
#pragma omp parallel for schedule(static, 65536)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
      std::memcpy(&buffer[i * bytes], &r.keys[begin + i], sizeof(K));
      std::memcpy(&buffer[i * bytes + sizeof(K)], &r.values[begin + i], sizeof(std::uint32_t));
    }
    output.write(begin * bytes, buffer.data(), count * bytes);
    meter.advance(begin + count, n);
  }
}

// Raw binary records, the library's format; the tool's text is another (tools/text_records.hpp)
// with the same two calls, which the in-memory sorts take as a type (external_sort.hpp).
struct binary_records {
  static constexpr bool binary = true;
  template <class K>
  records<K> read(const std::string& path, bool pairs, progress_sink& meter) const {
    meter.phase("reading", true);
    return read_binary<K>(path, pairs, meter);
  }
  // Writes r into `out` and commits it.
  template <class K>
  void write(pending_file& out, const records<K>& r, progress_sink& meter) const {
    meter.phase("writing", true);
    write_binary(out, r, meter);
    out.commit();
  }
};

}  // namespace gpusort::detail::external
