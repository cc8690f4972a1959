// The CPU side of an out-of-core sort: fixed-size records with a key somewhere inside, sorted
// runs written to a scratch directory beside the output, and a stable k-way merge of the runs
// (in as many passes as the fan-in asks) into the output file.
//
// Stability: runs are consecutive slices of the input, each sorted stably; a merge takes
// consecutive runs and breaks ties between equal keys by run index, and its output takes the
// place of its inputs in the sequence. So equal keys leave in input order.
//
// Cleanup: the scratch directory and everything in it goes when its owner is destroyed
// (success or exception), and on SIGINT/SIGTERM/SIGHUP by an async-signal-safe handler that
// chains to the one of records.hpp (which removes the pending output file).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/error.hpp"
#include "run_plan.hpp"
#include "gpusort/key_traits.hpp"
#include "records.hpp"

namespace gpusort::detail::external {

// ---- records and their order ---------------------------------------------------------

// The typed keys (little-endian, in gpusort's order: the six key_traits types and the narrow
// ones of files) or raw bytes compared as a big-endian unsigned number (memcmp), as the Sort
// Benchmark's 10-byte keys.
enum class key_kind { u32, i32, f32, u64, i64, f64, i8, u8, i16, u16, f16, bf16, bytes };

// Calls f with a value of the key type of `kind` (not bytes).
template <class F>
decltype(auto) with_key_kind(key_kind kind, F&& f) {
  switch (kind) {
    case key_kind::u32: return f(std::uint32_t{});
    case key_kind::i32: return f(std::int32_t{});
    case key_kind::f32: return f(float{});
    case key_kind::u64: return f(std::uint64_t{});
    case key_kind::i64: return f(std::int64_t{});
    case key_kind::f64: return f(double{});
    case key_kind::i8: return f(std::int8_t{});
    case key_kind::u8: return f(std::uint8_t{});
    case key_kind::i16: return f(std::int16_t{});
    case key_kind::u16: return f(std::uint16_t{});
    case key_kind::f16: return f(__half{});
    case key_kind::bf16: return f(__nv_bfloat16{});
    case key_kind::bytes: break;
  }
  throw std::logic_error("with_key_kind: raw bytes have no key type");
}

template <class K>
key_kind key_kind_of() {
  for (const key_kind kind : {key_kind::u32, key_kind::i32, key_kind::f32, key_kind::u64,
                              key_kind::i64, key_kind::f64, key_kind::i8, key_kind::u8,
                              key_kind::i16, key_kind::u16, key_kind::f16, key_kind::bf16})
    if (with_key_kind(kind, [](auto key) { return std::is_same_v<decltype(key), K>; })) return kind;
  throw std::logic_error("not a key type of files");
}

inline std::size_t typed_key_bytes(key_kind kind) {
  if (kind == key_kind::bytes) return 0;
  return with_key_kind(kind, [](auto key) { return sizeof(key); });
}

struct record_layout {
  std::size_t record_bytes = 0;
  std::size_t key_offset = 0;
  std::size_t key_bytes = 0;
  key_kind kind = key_kind::bytes;
  bool descending = false;
  bool nans_lowest = false;  // f16 and bf16: their NaNs' codes lie lowest (key_code)

  // Keys of type K first, then value_bytes of payload (0: keys alone).
  template <class K>
  static record_layout keys(std::size_t value_bytes = 0, bool descending = false,
                            bool nans_lowest = false) {
    return {sizeof(K) + value_bytes, 0, sizeof(K), key_kind_of<K>(), descending, nans_lowest};
  }
  // The Sort Benchmark's records: 100 bytes, the first 10 the key.
  static constexpr record_layout sort_benchmark(bool descending = false) {
    return {100, 0, 10, key_kind::bytes, descending};
  }
};

// invalid_request if the key does not lie inside the record or its size does not fit its kind.
inline void check_layout(const record_layout& layout) {
  const std::string what = std::to_string(layout.record_bytes) + "-byte records: ";
  if (layout.record_bytes == 0) throw invalid_request("records of 0 bytes cannot be sorted");
  if (layout.key_bytes == 0) throw invalid_request(what + "the key has 0 bytes");
  if (layout.key_offset > layout.record_bytes ||
      layout.key_bytes > layout.record_bytes - layout.key_offset)
    throw invalid_request(what + "a key of " + std::to_string(layout.key_bytes) + " bytes at offset " +
                      std::to_string(layout.key_offset) + " does not fit");
  if (layout.kind != key_kind::bytes && layout.key_bytes != typed_key_bytes(layout.kind))
    throw invalid_request(what + "a typed key of " + std::to_string(layout.key_bytes) +
                      " bytes; its type has " + std::to_string(typed_key_bytes(layout.kind)));
}

// Strict weak orders of two records by their keys.
template <class K>
struct typed_key_order {
  std::size_t key_offset;
  bool descending;
  bool nans_lowest;
  bool operator()(const unsigned char* a, const unsigned char* b) const {
    K key_a, key_b;  // records are packed: keys may sit at any alignment
    std::memcpy(&key_a, a + key_offset, sizeof(K));
    std::memcpy(&key_b, b + key_offset, sizeof(K));
    const auto code_a = key_code(key_a, nans_lowest), code_b = key_code(key_b, nans_lowest);
    return descending ? code_b < code_a : code_a < code_b;
  }
};

struct byte_key_order {
  std::size_t key_offset, key_bytes;
  bool descending;
  bool operator()(const unsigned char* a, const unsigned char* b) const {
    const int sign = std::memcmp(a + key_offset, b + key_offset, key_bytes);
    return descending ? sign > 0 : sign < 0;
  }
};

// Calls f with the order of `layout`, a concrete type each, so that merges inline it.
template <class F>
decltype(auto) with_record_order(const record_layout& layout, F&& f) {
  if (layout.kind == key_kind::bytes)
    return f(byte_key_order{layout.key_offset, layout.key_bytes, layout.descending});
  return with_key_kind(layout.kind, [&](auto key) {
    return f(typed_key_order<decltype(key)>{layout.key_offset, layout.descending, layout.nans_lowest});
  });
}

// Sorts packed records in place, stably, on the CPU: the reference a GPU run sort must match,
// and the run sort where there is no GPU.
inline void stable_sort_records(std::span<unsigned char> data, const record_layout& layout) {
  const std::size_t bytes = layout.record_bytes, n = data.size() / bytes;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  with_record_order(layout, [&](auto before) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return before(data.data() + a * bytes, data.data() + b * bytes);
    });
  });
  std::vector<unsigned char> sorted(n * bytes);
  for (std::size_t i = 0; i < n; ++i)
    std::memcpy(&sorted[i * bytes], &data[order[i] * bytes], bytes);
  std::copy(sorted.begin(), sorted.end(), data.begin());
}

// ---- errors --------------------------------------------------------------------------

// A failed write of `name` with the errno it left, saying plainly when the disk is full.
inline io_failure write_failure(const std::string& name, int error_number) {
  return io_failure(name + ": write failed: " +
                  (error_number == ENOSPC ? std::string("no space left on device")
                                          : std::string(std::strerror(error_number))));
}

// ---- scratch directories removed on signals -------------------------------------------

// Directories to remove when a signal ends the process: fixed slots of C strings, since the
// handler may neither allocate nor lock. A slot is filled, then marked ready; the handler
// reads only ready ones.
namespace scratch_registry {

inline constexpr std::size_t slot_count = 16;
inline constexpr std::size_t path_capacity = 4096;  // PATH_MAX on Linux
enum : int { free_slot, filling, ready };

struct slot {
  std::atomic<int> state{free_slot};
  char path[path_capacity];
};
inline slot slots[slot_count];

// Empties a flat directory and removes it, with async-signal-safe calls only (getdents64 is
// a plain system call).
inline void remove_flat_directory(const char* path) {
  for (int attempt = 0; attempt < 4; ++attempt) {  // again if entries came while removing
    const int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) return;
    alignas(struct dirent64) char entries[4096];
    ssize_t length;
    while ((length = ::getdents64(dir, entries, sizeof entries)) > 0) {
      for (ssize_t at = 0; at < length;) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(entries + at);
        at += entry->d_reclen;
        const char* name = entry->d_name;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0)
          ::unlinkat(dir, name, 0);
      }
    }
    ::close(dir);
    if (::rmdir(path) == 0 || errno != ENOTEMPTY) return;
  }
}

inline void remove_all_and_die(int signal_number) {
  for (slot& s : slots)
    if (s.state.load(std::memory_order_acquire) == ready) remove_flat_directory(s.path);
  remove_pending_temp_and_die(signal_number);  // records.hpp: the pending output, then the end
}

// Puts our handler in place of records.hpp's, which ours chains to. Its own installer runs
// first, so that it (installing once) never replaces ours later; where it left a signal
// ignored (nohup) ours leaves it too.
inline void install_handler() {
  static const bool installed = [] {
    remove_pending_temp_on_signals();
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current = {};
      if (::sigaction(signal_number, nullptr, &current) != 0 ||
          current.sa_handler != remove_pending_temp_and_die)
        continue;
      struct sigaction remove = {};
      remove.sa_handler = remove_all_and_die;
      sigemptyset(&remove.sa_mask);
      ::sigaction(signal_number, &remove, nullptr);
    }
    return true;
  }();
  static_cast<void>(installed);
}

// The slot now holding `path`; invalid_request if the path is too long or all slots are taken.
inline std::size_t add(const std::string& path) {
  install_handler();
  if (path.size() >= path_capacity) throw invalid_request(path + ": path too long");
  for (std::size_t i = 0; i < slot_count; ++i) {
    int expected = free_slot;
    if (!slots[i].state.compare_exchange_strong(expected, filling)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(ready, std::memory_order_release);
    return i;
  }
  throw invalid_request(path + ": more than " + std::to_string(slot_count) +
                    " scratch directories at once");
}

inline void release(std::size_t slot_index) {
  slots[slot_index].state.store(free_slot, std::memory_order_release);
}

}  // namespace scratch_registry

// A private directory beside `output` (".NAME.runs<pid>-<k>", scratch_name) for run files,
// locked while it lives (lock_scratch), removed with all it holds when this object goes or a
// signal ends the process.
class scratch_directory {
 public:
  explicit scratch_directory(const std::filesystem::path& output) {
    const std::filesystem::path parent =
        output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = parent / scratch_name(output.filename().string(), ".runs", attempt);
      // Registered once it is ours: a signal between mkdir and registration leaves an empty
      // directory (which the next run removes, remove_stale_scratch), never another's.
      if (::mkdir(path_.c_str(), 0700) == 0) {
        lock_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (lock_ >= 0 && lock_scratch(lock_, path_)) {
          slot_ = scratch_registry::add(path_.string());
          return;
        }
        if (lock_ >= 0) ::close(std::exchange(lock_, -1));  // removed as stale: another name
        continue;
      }
      const int error_number = errno;
      if (error_number != EEXIST)
        throw invalid_request(output.string() + ": cannot create a directory in " + parent.string() +
                          ": " + std::strerror(error_number));
    }
    throw invalid_request(output.string() + ": cannot create a directory in " + parent.string());
  }
  ~scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    scratch_registry::release(slot_);  // after the removal, which a signal may interrupt
    ::close(lock_);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A fresh name for a run file, in creation order.
  std::filesystem::path new_run_path() { return path_ / ("run" + std::to_string(next_run_++)); }
  bool holds(const std::filesystem::path& file) const { return file.parent_path() == path_; }

 private:
  std::filesystem::path path_;
  int lock_ = -1;  // the directory, flock'ed
  std::size_t slot_ = 0;
  std::uint64_t next_run_ = 0;
};

// ---- reading and writing runs ---------------------------------------------------------

// A sorted run file read a chunk of whole records at a time.
class run_reader {
 public:
  run_reader(std::filesystem::path path, std::size_t record_bytes, std::size_t buffer_bytes)
      : path_(std::move(path)),
        record_bytes_(record_bytes),
        buffer_(std::max(buffer_bytes / record_bytes, std::size_t{1}) * record_bytes) {
    std::error_code ec;
    remaining_ = std::filesystem::file_size(path_, ec);
    if (ec) throw io_failure(path_.string() + ": " + ec.message());
    if (remaining_ % record_bytes_ != 0)
      throw io_failure(path_.string() + ": " + std::to_string(remaining_) +
                     " bytes is not a whole number of " + std::to_string(record_bytes_) +
                     "-byte records");
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) throw io_failure(path_.string() + ": cannot open: " + std::strerror(errno));
    refill();
  }

  bool done() const { return at_ == filled_; }
  const unsigned char* record() const { return buffer_.data() + at_; }
  void next() {
    at_ += record_bytes_;
    if (at_ == filled_) refill();
  }

 private:
  void refill() {
    filled_ = std::min<std::uint64_t>(buffer_.size(), remaining_);
    at_ = 0;
    read_bytes(file_.get(), buffer_.data(), filled_, path_.string());
    remaining_ -= filled_;
  }

  std::filesystem::path path_;
  std::size_t record_bytes_;
  std::vector<unsigned char> buffer_;
  file_handle file_;
  std::uint64_t remaining_ = 0;  // bytes not yet read
  std::size_t filled_ = 0, at_ = 0;
};

// Records appended to an open file through a buffer; errors name the file.
class record_writer {
 public:
  record_writer(std::FILE* file, std::string name, std::size_t record_bytes,
                std::size_t buffer_bytes)
      : file_(file), name_(std::move(name)), record_bytes_(record_bytes) {
    buffer_.reserve(std::max(buffer_bytes / record_bytes, std::size_t{1}) * record_bytes);
  }
  void put(const unsigned char* record) {
    if (buffer_.size() == buffer_.capacity()) drain();
    buffer_.insert(buffer_.end(), record, record + record_bytes_);
  }
  // Everything put so far handed to the system.
  void flush() {
    drain();
    if (std::fflush(file_) != 0) throw write_failure(name_, errno);
  }

 private:
  void drain() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      throw write_failure(name_, errno);
    buffer_.clear();
  }

  std::FILE* file_;
  std::string name_;
  std::size_t record_bytes_;
  std::vector<unsigned char> buffer_;
};

// A new run file in `scratch` holding `records` (whole records, already sorted); its path.
inline std::filesystem::path write_run(scratch_directory& scratch,
                                       std::span<const unsigned char> records) {
  const std::filesystem::path path = scratch.new_run_path();
  file_handle file(std::fopen(path.c_str(), "wbx"));
  if (!file) throw io_failure(path.string() + ": cannot create: " + std::strerror(errno));
  if (!records.empty() && std::fwrite(records.data(), 1, records.size(), file.get()) != records.size())
    throw write_failure(path.string(), errno);
  if (std::fclose(file.release()) != 0) throw write_failure(path.string(), errno);
  return path;
}

// Work done so far, for a progress line: the phase ("runs", "merge 1/2") and its records.
using progress_callback =
    std::function<void(std::string_view phase, std::uint64_t done, std::uint64_t total)>;

// Cuts the input file (plan.run_count runs of plan.run_records records) into sorted run files
// in `scratch`, in input order. sort_run(std::span<unsigned char>) must sort one run of
// whole records stably in place: stable_sort_records here, the GPU later.
template <class SortRun>
std::vector<std::filesystem::path> cut_into_runs(const std::string& input,
                                                 const record_layout& layout, const run_plan& plan,
                                                 scratch_directory& scratch, SortRun&& sort_run,
                                                 const progress_callback& on_progress = {}) {
  const std::uint64_t total = plan.run_count == 0 ? 0
                              : (plan.run_count - 1) * plan.run_records + plan.last_run_records;
  if (input_file_size(input) != total * layout.record_bytes)
    throw io_failure(input + ": the file changed size while it was sorted");
  const file_handle in = open_input(input);
  std::vector<unsigned char> run(plan.run_records * layout.record_bytes);
  std::vector<std::filesystem::path> runs;
  std::uint64_t done = 0;
  for (std::uint64_t r = 0; r < plan.run_count; ++r) {
    const std::span<unsigned char> records(run.data(), plan.records_of_run(r) * layout.record_bytes);
    read_bytes(in.get(), records.data(), records.size(), input);
    sort_run(records);
    runs.push_back(write_run(scratch, records));
    done += plan.records_of_run(r);
    if (on_progress) on_progress("runs", done, total);
  }
  return runs;
}

namespace impl {

// Merges sorted runs into `out`: a binary heap of run indices keyed by (record, run index),
// so that equal keys leave in run order.
template <class Order>
void merge_group(std::span<const std::filesystem::path> inputs, const record_layout& layout,
                 std::size_t buffer_bytes, Order before, record_writer& out,
                 const std::function<void(std::uint64_t)>& count_records) {
  std::vector<run_reader> readers;
  readers.reserve(inputs.size());
  for (const std::filesystem::path& input : inputs)
    readers.emplace_back(input, layout.record_bytes, buffer_bytes);
  std::vector<std::size_t> heap;
  for (std::size_t run = 0; run < readers.size(); ++run)
    if (!readers[run].done()) heap.push_back(run);
  // std:: heaps keep the largest on top: "largest" is the record that comes first.
  const auto comes_later = [&](std::size_t a, std::size_t b) {
    const unsigned char* record_a = readers[a].record();
    const unsigned char* record_b = readers[b].record();
    if (before(record_b, record_a)) return true;
    if (before(record_a, record_b)) return false;
    return a > b;
  };
  std::make_heap(heap.begin(), heap.end(), comes_later);
  const std::size_t report_every = std::max(buffer_bytes / layout.record_bytes, std::size_t{1});
  std::size_t unreported = 0;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), comes_later);
    run_reader& first = readers[heap.back()];
    out.put(first.record());
    first.next();
    if (first.done()) {
      heap.pop_back();
    } else {
      std::push_heap(heap.begin(), heap.end(), comes_later);
    }
    if (++unreported == report_every) {
      count_records(unreported);
      unreported = 0;
    }
  }
  count_records(unreported);
}

}  // namespace impl

// Merges sorted runs (in input order) into `out` (an open file named `out_name`, flushed, not
// closed: the caller commits it), `fan_in` runs at a time: while more than fan_in runs are
// left, consecutive groups of fan_in are merged into new runs in `scratch`. Input runs that
// `scratch` holds are removed once merged, to free their disk space; the caller's are kept.
// The plan's merge_buffer_bytes is each reader's and the writer's buffer.
inline void merge_runs(std::vector<std::filesystem::path> runs, const record_layout& layout,
                       std::uint64_t fan_in, std::uint64_t buffer_bytes, scratch_directory& scratch,
                       std::FILE* out, const std::string& out_name,
                       const progress_callback& on_progress = {}) {
  check_layout(layout);
  if (runs.size() > 1 && fan_in < 2) throw std::invalid_argument("merge_runs: fan-in below 2");
  const std::uint64_t passes = std::max<std::uint64_t>(1, merge_pass_count(runs.size(), fan_in));
  const auto records_in = [&](std::span<const std::filesystem::path> group) {
    std::uint64_t records = 0;
    for (const auto& run : group) {
      std::error_code ec;
      const std::uint64_t bytes = std::filesystem::file_size(run, ec);
      if (ec) throw io_failure(run.string() + ": " + ec.message());
      records += bytes / layout.record_bytes;
    }
    return records;
  };
  with_record_order(layout, [&](auto before) {
    for (std::uint64_t pass = 1;; ++pass) {
      const bool last = runs.size() <= fan_in || runs.size() <= 1;
      const std::uint64_t group_size = last ? std::max<std::size_t>(runs.size(), 1) : fan_in;
      // Records this pass writes: those of groups of more than one run, or all in the last.
      std::uint64_t total = 0, done = 0;
      for (std::size_t begin = 0; begin < runs.size(); begin += group_size) {
        const auto group = std::span(runs).subspan(begin, std::min(group_size, runs.size() - begin));
        if (last || group.size() > 1) total += records_in(group);
      }
      const std::string phase = "merge " + std::to_string(pass) + "/" + std::to_string(passes);
      const auto count_records = [&](std::uint64_t records) {
        done += records;
        if (on_progress) on_progress(phase, done, total);
      };
      if (last) {
        record_writer writer(out, out_name, layout.record_bytes, buffer_bytes);
        impl::merge_group(runs, layout, buffer_bytes, before, writer, count_records);
        writer.flush();
        return;
      }
      std::vector<std::filesystem::path> merged;
      for (std::size_t begin = 0; begin < runs.size(); begin += group_size) {
        const auto group = std::span(runs).subspan(begin, std::min(group_size, runs.size() - begin));
        if (group.size() == 1) {  // nothing to merge it with: it moves on as it is
          merged.push_back(group.front());
          continue;
        }
        const std::filesystem::path path = scratch.new_run_path();
        file_handle file(std::fopen(path.c_str(), "wbx"));
        if (!file) throw io_failure(path.string() + ": cannot create: " + std::strerror(errno));
        record_writer writer(file.get(), path.string(), layout.record_bytes, buffer_bytes);
        impl::merge_group(group, layout, buffer_bytes, before, writer, count_records);
        writer.flush();
        if (std::fclose(file.release()) != 0) throw write_failure(path.string(), errno);
        for (const auto& input : group)
          if (scratch.holds(input)) std::filesystem::remove(input);
        merged.push_back(path);
      }
      runs = std::move(merged);
    }
  });
}

}  // namespace gpusort::detail::external
