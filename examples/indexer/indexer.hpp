// A blocked sort-based indexer (BSBI), the application of Capannini et al., "Sorting on
// GPUs for large scale datasets: a thorough comparison" (section 7, Fig. 7): documents are
// parsed into (termID, docID) keys, blocks of keys are sorted (std::sort, gpusort::sort, or
// gpusort::sort on one thread while another parses the next block) and written as sorted
// runs, and a k-way merge of the runs gives the postings lists of an inverted index.
//
// Everything but the command line (indexer.cpp) is here, so that tests can call it:
// tokenizer, dictionary, key packing, block sorters, run files, the merge, the index files
// and their reader. README.md describes the index format.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpusort/options.hpp"
#include "gpusort/sort.hpp"

namespace gpusort::indexer {

static_assert(std::endian::native == std::endian::little, "index files are little-endian");

// ---- errors -------------------------------------------------------------------------

// Bad usage or input: a missing or unreadable path, a directory that holds no valid index.
// The command line exits with 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Writing failed midway (disk full, I/O error) or one of our run files is damaged: exit 3.
struct io_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The build was cancelled through build_config::cancel (the command line's signal handler).
struct interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string errno_text() { return std::strerror(errno); }

// ---- keys -------------------------------------------------------------------------

using term_id = std::uint32_t;
using doc_id = std::uint32_t;

// One occurrence of a term in a document as a single integer key: ascending keys order by
// term, then by document (the paper's precedence relation), which is the order of postings.
constexpr std::uint64_t pack_key(term_id term, doc_id doc) {
  return (std::uint64_t{term} << 32) | doc;
}
constexpr term_id term_of(std::uint64_t key) { return static_cast<term_id>(key >> 32); }
constexpr doc_id doc_of(std::uint64_t key) { return static_cast<doc_id>(key); }

// Term frequencies add up without wrapping around.
constexpr std::uint32_t saturating_add(std::uint32_t a, std::uint64_t b) {
  const std::uint64_t sum = a + b;
  return sum > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                         : static_cast<std::uint32_t>(sum);
}

// ---- tokenizer ------------------------------------------------------------------------

inline constexpr std::size_t max_token_length = 64;

constexpr bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
constexpr char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Tokens are maximal runs of ASCII letters and digits, lowercased; every other byte
// (punctuation, white space, each byte of a UTF-8 sequence) separates them. A run longer
// than max_token_length is dropped whole: in real files those are hashes, base64 or line
// art, and cutting them would only invent terms. Text may come in pieces: a token can span
// feed() calls; finish() ends the last one.
class tokenizer {
 public:
  template <class F>  // F(std::string_view token)
  void feed(std::string_view text, F&& on_token) {
    for (const char c : text) {
      if (is_token_char(c)) {
        if (length_ < max_token_length) token_[length_] = lower_ascii(c);
        ++length_;
      } else if (length_ > 0) {
        end_token(on_token);
      }
    }
  }
  template <class F>
  void finish(F&& on_token) {
    if (length_ > 0) end_token(on_token);
  }

 private:
  template <class F>
  void end_token(F& on_token) {
    if (length_ <= max_token_length) on_token(std::string_view(token_.data(), length_));
    length_ = 0;
  }

  std::array<char, max_token_length> token_{};
  std::size_t length_ = 0;  // of the current run of letters and digits, kept or not
};

inline std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  const auto add = [&](std::string_view token) { tokens.emplace_back(token); };
  tokenizer t;
  t.feed(text, add);
  t.finish(add);
  return tokens;
}

// A query word as the index holds it: its tokens, by the rules of the documents (so
// "Foo_Bar" is foo and bar). A word without tokens ("--") stays itself, lowercased, and
// matches nothing.
inline std::vector<std::string> query_terms(std::string_view word) {
  std::vector<std::string> terms = tokenize(word);
  if (terms.empty()) {
    terms.emplace_back(word);
    std::ranges::transform(terms.back(), terms.back().begin(), lower_ascii);
  }
  return terms;
}

// ---- dictionary -----------------------------------------------------------------------

// term -> termID, ids given in first-seen order. The strings live in a deque, which never
// moves its elements, so the map can key on views of them (one copy of each term).
class dictionary {
 public:
  dictionary() = default;
  dictionary(const dictionary&) = delete;
  dictionary& operator=(const dictionary&) = delete;

  term_id id_of(std::string_view term) {
    if (const auto it = ids_.find(term); it != ids_.end()) return it->second;
    if (terms_.size() > std::numeric_limits<term_id>::max())
      throw usage_error("more than 2^32 distinct terms");
    const auto id = static_cast<term_id>(terms_.size());
    ids_.emplace(terms_.emplace_back(term), id);
    return id;
  }
  std::size_t size() const { return terms_.size(); }
  const std::string& term(term_id id) const { return terms_[id]; }

 private:
  std::deque<std::string> terms_;
  std::unordered_map<std::string_view, term_id> ids_;
};

// ---- small file helpers ---------------------------------------------------------------

// An open file descriptor, closed when it goes.
class file_descriptor {
 public:
  file_descriptor() = default;
  explicit file_descriptor(int fd) : fd_(fd) {}
  file_descriptor(file_descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~file_descriptor() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes, reporting whether close() succeeded (it can report a delayed write error).
  bool close() { return ::close(std::exchange(fd_, -1)) == 0; }
  void reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

// Reads up to `size` bytes, fewer only at the end of the file; -1 on error.
inline std::int64_t read_up_to(int fd, char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, data + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return static_cast<std::int64_t>(done);
}

// Reads exactly `size` bytes at `offset`, or throws usage_error naming the file (a short
// index file is a bad index).
inline void read_exactly_at(int fd, void* data, std::size_t size, std::uint64_t offset,
                            const std::string& name) {
  auto* bytes = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw usage_error(name + ": read failed: " + errno_text());
    if (got == 0) throw usage_error(name + ": file is truncated");
    done += static_cast<std::size_t>(got);
  }
}

// A file written through a large buffer; any failure throws io_error naming the file.
class file_writer {
 public:
  explicit file_writer(std::filesystem::path path, std::size_t buffer_bytes = std::size_t{1} << 20)
      : path_(std::move(path)), buffer_(buffer_bytes) {
    fd_ = file_descriptor(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_) throw io_error("cannot create " + path_.string() + ": " + errno_text());
  }

  void write(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    offset_ += size;
    if (size >= buffer_.size()) {  // large pieces skip the copy
      flush();
      write_through(bytes, size);
      return;
    }
    if (used_ + size > buffer_.size()) flush();
    std::memcpy(buffer_.data() + used_, bytes, size);
    used_ += size;
  }
  template <class T>
  void write_value(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    write(&value, sizeof value);
  }
  // Overwrites bytes already written (a header whose counts are known only at the end).
  void write_at(std::uint64_t offset, const void* data, std::size_t size) {
    flush();
    const auto* bytes = static_cast<const char*>(data);
    for (std::size_t done = 0; done < size;) {
      const ssize_t put =
          ::pwrite(fd_.get(), bytes + done, size - done, static_cast<off_t>(offset + done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) fail();
      done += static_cast<std::size_t>(put);
    }
  }
  std::uint64_t offset() const { return offset_; }  // bytes written so far
  void close() {
    flush();
    if (!fd_.close()) fail();
  }

 private:
  void flush() {
    write_through(buffer_.data(), used_);
    used_ = 0;
  }
  void write_through(const char* bytes, std::size_t size) {
    for (std::size_t done = 0; done < size;) {
      const ssize_t put = ::write(fd_.get(), bytes + done, size - done);
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) fail();
      done += static_cast<std::size_t>(put);
    }
  }
  [[noreturn]] void fail() const {
    throw io_error("cannot write " + path_.string() + ": " + errno_text());
  }

  std::filesystem::path path_;
  file_descriptor fd_;
  std::vector<char> buffer_;
  std::size_t used_ = 0;
  std::uint64_t offset_ = 0;
};

// ---- varints --------------------------------------------------------------------------

// LEB128: 7 bits a byte, low bits first; a set high bit says another byte follows.
inline std::size_t put_varint(std::uint64_t value, std::uint8_t* out) {
  std::size_t n = 0;
  for (; value >= 0x80; value >>= 7) out[n++] = static_cast<std::uint8_t>(value | 0x80);
  out[n++] = static_cast<std::uint8_t>(value);
  return n;
}
inline constexpr std::size_t max_varint_bytes = 10;

// Decodes one varint at `at`, advancing it; false if the bytes end first or it is too long.
inline bool get_varint(const std::uint8_t*& at, const std::uint8_t* end, std::uint64_t& value) {
  value = 0;
  for (unsigned shift = 0; at < end && shift < 64; shift += 7) {
    const std::uint8_t byte = *at++;
    value |= std::uint64_t{byte & 0x7Fu} << shift;
    if (byte < 0x80) return true;
  }
  return false;
}

// ---- documents --------------------------------------------------------------------------

// The files to index, in docID order: each input in the order given; a directory walked
// recursively with its regular files in sorted path order. Links met inside a directory are
// not followed (no cycles, no file twice); an input that is itself a link is. Other kinds of
// files inside directories (sockets, fifos) are passed over.
inline std::vector<std::string> list_files(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::file_status status = fs::status(input, ec);
    if (ec || !fs::exists(status))
      throw usage_error("cannot read " + input + ": " +
                        (ec ? ec.message() : std::string("no such file or directory")));
    if (fs::is_regular_file(status)) {
      files.push_back(input);
      continue;
    }
    if (!fs::is_directory(status))
      throw usage_error(input + " is neither a regular file nor a directory");
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(input, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (it->is_symlink(ec) || ec) continue;
      if (it->is_regular_file(ec) && !ec) found.push_back(it->path().string());
    }
    if (ec) throw usage_error("cannot read directory under " + input + ": " + ec.message());
    std::ranges::sort(found);
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

inline constexpr std::size_t binary_probe_bytes = 4096;

// Reads documents in pieces through one reusable buffer. A NUL byte among the first
// binary_probe_bytes marks a file as binary (executables, images, compressed files).
class document_reader {
 public:
  // Passes the file's text to on_text piece by piece and returns its size in bytes, or
  // nullopt (nothing passed) if the file looks binary. Throws usage_error if it cannot be
  // read.
  template <class F>  // F(std::string_view piece)
  std::optional<std::uint64_t> read(const std::string& path, F&& on_text) {
    file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw usage_error("cannot read " + path + ": " + errno_text());
    std::uint64_t total = 0;
    for (bool first = true;; first = false) {
      const std::int64_t got = read_up_to(fd.get(), buffer_.data(), buffer_.size());
      if (got < 0) throw usage_error("cannot read " + path + ": " + errno_text());
      const std::string_view piece(buffer_.data(), static_cast<std::size_t>(got));
      if (first && piece.substr(0, binary_probe_bytes).find('\0') != std::string_view::npos)
        return std::nullopt;
      if (piece.empty()) return total;
      on_text(piece);
      total += piece.size();
    }
  }

 private:
  std::vector<char> buffer_ = std::vector<char>(std::size_t{1} << 20);
};

// ---- timing -----------------------------------------------------------------------------

class stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// ---- block sorters ------------------------------------------------------------------------

// Sorts one block of keys in place: the step the variants of Fig. 7 differ in.
class block_sorter {
 public:
  virtual ~block_sorter() = default;
  virtual void sort(std::vector<std::uint64_t>& keys) = 0;
};

class host_sorter final : public block_sorter {
 public:
  void sort(std::vector<std::uint64_t>& keys) override { std::sort(keys.begin(), keys.end()); }
};

// gpusort's host-vector sort: on the GPU when there is one, else its CPU backend.
class gpusort_sorter final : public block_sorter {
 public:
  explicit gpusort_sorter(gpusort::options options = {}) : options_(options) {}
  void sort(std::vector<std::uint64_t>& keys) override { gpusort::sort(keys, options_); }

 private:
  gpusort::options options_;
};

enum class variant { cpu, gpu, gpu_pipelined };

constexpr std::string_view to_string(variant v) {
  switch (v) {
    case variant::cpu: return "cpu";
    case variant::gpu: return "gpu";
    case variant::gpu_pipelined: return "gpu-pipelined";
  }
  return "unknown";
}

inline std::optional<variant> parse_variant(std::string_view name) {
  for (const variant v : {variant::cpu, variant::gpu, variant::gpu_pipelined})
    if (to_string(v) == name) return v;
  return std::nullopt;
}

// ---- run files ------------------------------------------------------------------------------

// A run record: a key and how often it occurred (the term's frequency in the document, as
// far as the records merged so far see it). 12 bytes on disk: the key, then the count.
struct run_record {
  std::uint64_t key = 0;
  std::uint32_t tf = 0;
};
inline constexpr std::size_t run_record_bytes = 12;

class run_writer {
 public:
  explicit run_writer(std::filesystem::path path) : out_(std::move(path)) {}
  void add(std::uint64_t key, std::uint32_t tf) {
    out_.write_value(key);
    out_.write_value(tf);
    ++records_;
  }
  std::uint64_t close() {
    out_.close();
    return records_;
  }

 private:
  file_writer out_;
  std::uint64_t records_ = 0;
};

// Writes a sorted block as a run: one record per distinct key with its number of copies, so
// a repeated term costs its document 4 bytes instead of a key per occurrence. Returns the
// number of records.
inline std::uint64_t write_run(std::span<const std::uint64_t> sorted_keys,
                               const std::filesystem::path& path) {
  run_writer run(path);
  for (std::size_t i = 0; i < sorted_keys.size();) {
    std::size_t next = i + 1;
    while (next < sorted_keys.size() && sorted_keys[next] == sorted_keys[i]) ++next;
    run.add(sorted_keys[i], saturating_add(0, next - i));
    i = next;
  }
  return run.close();
}

// Reads a run's records in order through its own buffer.
class run_reader {
 public:
  run_reader(std::filesystem::path path, std::size_t buffer_bytes)
      : path_(std::move(path)),
        buffer_(std::max(buffer_bytes / run_record_bytes, std::size_t{1}) * run_record_bytes) {
    fd_ = file_descriptor(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_) throw io_error("cannot open run " + path_.string() + ": " + errno_text());
  }

  bool next(run_record& record) {
    if (at_ == end_ && !refill()) return false;
    std::memcpy(&record.key, buffer_.data() + at_, sizeof record.key);
    std::memcpy(&record.tf, buffer_.data() + at_ + sizeof record.key, sizeof record.tf);
    at_ += run_record_bytes;
    return true;
  }

 private:
  bool refill() {
    const std::int64_t got = read_up_to(fd_.get(), buffer_.data(), buffer_.size());
    if (got < 0) throw io_error("cannot read run " + path_.string() + ": " + errno_text());
    if (got % run_record_bytes != 0) throw io_error("run " + path_.string() + " is truncated");
    at_ = 0;
    end_ = static_cast<std::size_t>(got);
    return end_ > 0;
  }

  std::filesystem::path path_;
  file_descriptor fd_;
  std::vector<char> buffer_;
  std::size_t at_ = 0, end_ = 0;
};

inline void check_cancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load(std::memory_order_relaxed)) throw interrupted("interrupted");
}

// k-way merge of run files through a binary min-heap of the runs' next records (the paper's
// merger: O(log k) per record). Calls out(key, tf) once per distinct key, in ascending
// order, with the counts of all runs added up: a document whose keys went into two blocks
// has records in both runs. `memory` bytes are shared out as the runs' read buffers.
template <class F>  // F(std::uint64_t key, std::uint32_t tf)
void merge_runs(std::span<const std::filesystem::path> runs, F&& out,
                const std::atomic<bool>* cancel = nullptr,
                std::size_t memory = std::size_t{64} << 20) {
  struct head {
    std::uint64_t key;
    std::uint32_t tf;
    std::uint32_t run;
  };
  const std::size_t buffer_bytes =
      std::clamp(memory / std::max<std::size_t>(runs.size(), 1), std::size_t{64} << 10,
                 std::size_t{4} << 20);
  std::vector<run_reader> readers;
  readers.reserve(runs.size());
  std::vector<head> heap;
  for (const auto& path : runs) {
    readers.emplace_back(path, buffer_bytes);
    run_record r;
    if (readers.back().next(r))
      heap.push_back({r.key, r.tf, static_cast<std::uint32_t>(readers.size() - 1)});
  }
  const auto later = [](const head& a, const head& b) { return a.key > b.key; };
  std::ranges::make_heap(heap, later);
  // Restores the heap after heap[0] changed: moves it down past any smaller child.
  const auto sift_down = [&] {
    const head moving = heap[0];
    std::size_t i = 0;
    for (std::size_t child = 1; child < heap.size(); child = 2 * i + 1) {
      if (child + 1 < heap.size() && heap[child + 1].key < heap[child].key) ++child;
      if (heap[child].key >= moving.key) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = moving;
  };

  std::optional<run_record> pending;  // the key being summed over the runs
  std::uint64_t merged = 0;
  while (!heap.empty()) {
    if ((++merged & 0xFFFFF) == 0) check_cancel(cancel);
    head& top = heap[0];
    if (pending && pending->key == top.key) {
      pending->tf = saturating_add(pending->tf, top.tf);
    } else {
      if (pending) out(pending->key, pending->tf);
      pending = run_record{top.key, top.tf};
    }
    run_record r;
    if (readers[top.run].next(r)) {
      top.key = r.key;
      top.tf = r.tf;
    } else {
      top = heap.back();
      heap.pop_back();
      if (heap.empty()) break;
    }
    sift_down();
  }
  if (pending) out(pending->key, pending->tf);
}

// ---- index files --------------------------------------------------------------------------
//
// Three files, each a 16-byte header (8 magic bytes, a u64 count), little-endian:
//   terms:    count = terms; count term_records sorted by term name (bytewise), then the
//             names' bytes (no separators; each record gives offset and length)
//   postings: count = postings; each term's list in termID order: per posting the varint
//             docID gap (the first docID itself) and the varint term frequency
//   docs:     count = documents; count + 1 u64 offsets into the paths' bytes, which follow

inline constexpr std::string_view terms_file = "terms";
inline constexpr std::string_view postings_file = "postings";
inline constexpr std::string_view docs_file = "docs";
inline constexpr std::array<std::string_view, 3> index_files = {terms_file, postings_file,
                                                                docs_file};

struct file_header {
  std::array<char, 8> magic;
  std::uint64_t count;
};
static_assert(sizeof(file_header) == 16);

constexpr file_header make_header(std::string_view magic, std::uint64_t count) {
  file_header header{{}, count};
  std::ranges::copy(magic.substr(0, 8), header.magic.begin());
  return header;
}
inline constexpr std::string_view terms_magic = "GSIXTRM1";
inline constexpr std::string_view postings_magic = "GSIXPST1";
inline constexpr std::string_view docs_magic = "GSIXDOC1";

struct term_record {
  std::uint64_t name_offset;      // into the names after the records
  std::uint64_t postings_offset;  // from the start of the postings file
  std::uint64_t postings_bytes;
  std::uint32_t name_length;
  std::uint32_t id;      // termID: first-seen order while parsing
  std::uint32_t df;      // document frequency: the number of postings
  std::uint32_t max_tf;  // the largest term frequency among them
};
static_assert(sizeof(term_record) == 40);

// Builds the postings file from the merged (key, tf) stream, which comes in key order, so
// term by term. Records each term's place and statistics.
class postings_builder {
 public:
  postings_builder(std::filesystem::path path, std::size_t term_count)
      : out_(std::move(path)), terms_(term_count) {
    out_.write_value(make_header(postings_magic, 0));
  }

  void add(std::uint64_t key, std::uint32_t tf) {
    const term_id term = term_of(key);
    const doc_id doc = doc_of(key);
    if (!current_ || term != *current_) start_term(term);
    term_record& t = terms_[term];
    std::array<std::uint8_t, 2 * max_varint_bytes> bytes;
    std::size_t n = put_varint(t.df == 0 ? doc : doc - last_doc_, bytes.data());
    n += put_varint(tf, bytes.data() + n);
    out_.write(bytes.data(), n);
    ++t.df;
    t.max_tf = std::max(t.max_tf, tf);
    last_doc_ = doc;
    ++postings_;
  }

  // Completes the file; returns the terms' records indexed by termID (names not yet set).
  std::vector<term_record> finish() {
    end_term();
    for (std::size_t id = 0; id < terms_.size(); ++id)
      if (terms_[id].df == 0)
        throw io_error("merge lost term " + std::to_string(id) + " (damaged runs?)");
    const file_header header = make_header(postings_magic, postings_);
    out_.write_at(0, &header, sizeof header);
    out_.close();
    return std::move(terms_);
  }
  std::uint64_t postings() const { return postings_; }

 private:
  void start_term(term_id term) {
    end_term();
    if (term >= terms_.size() || (current_ && term < *current_))
      throw io_error("merged keys out of order or unknown term " + std::to_string(term));
    current_ = term;
    terms_[term] = term_record{0, out_.offset(), 0, 0, term, 0, 0};
  }
  void end_term() {
    if (current_)
      terms_[*current_].postings_bytes = out_.offset() - terms_[*current_].postings_offset;
  }

  file_writer out_;
  std::vector<term_record> terms_;
  std::optional<term_id> current_;
  doc_id last_doc_ = 0;
  std::uint64_t postings_ = 0;
};

// Writes the terms file: records sorted by name, for binary search, then the names.
inline void write_terms(const std::filesystem::path& path, const dictionary& dict,
                        std::vector<term_record> records) {
  std::vector<term_id> order(records.size());
  std::iota(order.begin(), order.end(), term_id{0});
  std::ranges::sort(order, [&](term_id a, term_id b) { return dict.term(a) < dict.term(b); });
  file_writer out(path);
  out.write_value(make_header(terms_magic, records.size()));
  std::uint64_t name_offset = 0;
  for (const term_id id : order) {
    term_record r = records[id];
    r.name_offset = name_offset;
    r.name_length = static_cast<std::uint32_t>(dict.term(id).size());
    name_offset += r.name_length;
    out.write_value(r);
  }
  for (const term_id id : order) out.write(dict.term(id).data(), dict.term(id).size());
  out.close();
}

inline void write_docs(const std::filesystem::path& path, const std::vector<std::string>& docs) {
  file_writer out(path);
  out.write_value(make_header(docs_magic, docs.size()));
  std::uint64_t offset = 0;
  out.write_value(offset);
  for (const std::string& doc : docs) {
    offset += doc.size();
    out.write_value(offset);
  }
  for (const std::string& doc : docs) out.write(doc.data(), doc.size());
  out.close();
}

// The files of a build while they are written: under temporary names in the index
// directory (and runs in a scratch directory inside it), renamed over the final names only
// by commit(). Whatever happens, the destructor removes the scratch directory; before a
// commit it also removes the temporary files, and the index directory if this build
// created it. An index already there stays as it was until the commit.
class index_output {
 public:
  explicit index_output(std::filesystem::path dir) : dir_(std::move(dir)) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
      throw usage_error("index " + dir_.string() + " exists and is not a directory");
    created_dir_ = fs::create_directories(dir_, ec);
    if (ec)
      throw usage_error("cannot create index directory " + dir_.string() + ": " + ec.message());
    const std::string tag = std::to_string(::getpid());
    scratch_ = dir_ / (".runs-" + tag);
    fs::remove_all(scratch_, ec);  // left by an earlier process of the same id
    if (!fs::create_directory(scratch_, ec) || ec) {
      const std::string why = ec ? ec.message() : "it exists";
      cleanup();
      throw usage_error("cannot create " + scratch_.string() + ": " + why);
    }
    for (const std::string_view name : index_files)
      temps_.push_back(dir_ / ("." + std::string(name) + ".tmp-" + tag));
  }
  index_output(const index_output&) = delete;
  index_output& operator=(const index_output&) = delete;
  ~index_output() { cleanup(); }

  const std::filesystem::path& scratch() const { return scratch_; }
  std::filesystem::path temp(std::string_view name) const {
    const auto at = std::ranges::find(index_files, name) - index_files.begin();
    return temps_[static_cast<std::size_t>(at)];
  }

  // Renames the temporary files to their final names; `terms`, which readers open
  // first, last.
  void commit() {
    remove_scratch();
    for (const std::string_view name : {docs_file, postings_file, terms_file}) {
      std::error_code ec;
      std::filesystem::rename(temp(name), dir_ / name, ec);
      if (ec) throw io_error("cannot rename " + temp(name).string() + ": " + ec.message());
    }
    committed_ = true;
  }

 private:
  void remove_scratch() noexcept {
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
  }
  void cleanup() noexcept {
    remove_scratch();
    if (committed_) return;
    std::error_code ec;
    for (const auto& temp : temps_) std::filesystem::remove(temp, ec);
    if (created_dir_) std::filesystem::remove(dir_, ec);  // only if empty again
  }

  std::filesystem::path dir_, scratch_;
  std::vector<std::filesystem::path> temps_;
  bool created_dir_ = false, committed_ = false;
};

// ---- building -------------------------------------------------------------------------------

inline constexpr std::size_t default_block_mb = 256;
inline constexpr std::size_t keys_per_mb = (std::size_t{1} << 20) / sizeof(std::uint64_t);

struct build_config {
  std::vector<std::string> inputs;  // files and directories
  std::filesystem::path index_dir;
  variant method = variant::cpu;
  std::size_t block_keys = default_block_mb * keys_per_mb;  // keys sorted at a time
  std::optional<std::uint64_t> max_bytes;  // stop taking documents once this many bytes were
  gpusort::options sort_options{};         // for gpusort::sort (gpu variants)
  block_sorter* sorter = nullptr;          // replaces the variant's sorter (tests)
  std::size_t max_fan_in = 512;            // runs merged at once (open files)
  const std::atomic<bool>* cancel = nullptr;  // checked between documents and while merging
};

struct build_stats {
  std::uint64_t documents = 0, bytes = 0, keys = 0, postings = 0, terms = 0, runs = 0;
  double parse = 0, sort = 0, write_runs = 0, parse_sort = 0, merge = 0;  // seconds
};

// The parsing step: documents in order into keys, blocks of keys handed on when full.
class collection_parser {
 public:
  // `flush` takes a full block (the last one may be shorter) and leaves an empty one, of
  // the same capacity, in its place.
  using block_sink = std::function<void(std::vector<std::uint64_t>& block)>;

  collection_parser(dictionary& dict, std::size_t block_keys, block_sink flush)
      : dict_(dict), block_keys_(block_keys), flush_(std::move(flush)) {
    block_.reserve(block_keys_);
  }

  // Parses the files until max_bytes were taken; returns the documents taken (binary files
  // are skipped and get no docID).
  std::vector<std::string> parse(const std::vector<std::string>& files,
                                 std::optional<std::uint64_t> max_bytes,
                                 const std::atomic<bool>* cancel) {
    std::vector<std::string> docs;
    for (const std::string& file : files) {
      if (max_bytes && bytes_ >= *max_bytes) break;
      check_cancel(cancel);
      if (docs.size() > std::numeric_limits<doc_id>::max())
        throw usage_error("more than 2^32 documents");
      const auto doc = static_cast<doc_id>(docs.size());
      const auto add = [&](std::string_view token) { add_key(pack_key(dict_.id_of(token), doc)); };
      tokenizer tokens;
      const auto size = reader_.read(file, [&](std::string_view text) { tokens.feed(text, add); });
      if (!size) continue;  // binary
      tokens.finish(add);
      bytes_ += *size;
      docs.push_back(file);
    }
    if (!block_.empty()) hand_on();
    return docs;
  }

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t keys() const { return keys_; }
  double flush_seconds() const { return flush_seconds_; }  // inside flush, not parsing

 private:
  void add_key(std::uint64_t key) {
    block_.push_back(key);
    ++keys_;
    if (block_.size() == block_keys_) hand_on();
  }
  void hand_on() {
    const stopwatch clock;
    flush_(block_);
    flush_seconds_ += clock.seconds();
  }

  dictionary& dict_;
  std::size_t block_keys_;
  block_sink flush_;
  std::vector<std::uint64_t> block_;
  document_reader reader_;
  std::uint64_t bytes_ = 0, keys_ = 0;
  double flush_seconds_ = 0;
};

// Sort a block, write it as the next run in the scratch directory; times both steps.
class run_maker {
 public:
  run_maker(block_sorter& sorter, std::filesystem::path scratch)
      : sorter_(sorter), scratch_(std::move(scratch)) {}

  void operator()(std::vector<std::uint64_t>& block) {
    const stopwatch sorting;
    sorter_.sort(block);
    sort_seconds += sorting.seconds();
    const stopwatch writing;
    runs.push_back(scratch_ / ("run-" + std::to_string(runs.size())));
    write_run(block, runs.back());
    block.clear();
    write_seconds += writing.seconds();
  }

  std::vector<std::filesystem::path> runs;
  double sort_seconds = 0, write_seconds = 0;

 private:
  block_sorter& sorter_;
  std::filesystem::path scratch_;
};

// Hands full blocks from the parsing thread to the sorting thread and emptied buffers back.
// With two buffers the parser fills one while the other is sorted and written: Fig. 7's
// Index_gpu+, where SyncSend blocks until the sorter is ready for the next block.
class block_channel {
 public:
  explicit block_channel(std::vector<std::uint64_t> spare) { free_.push_back(std::move(spare)); }

  // Parser: passes a full block on and takes an empty buffer in its place. Rethrows the
  // sorting thread's failure.
  void exchange(std::vector<std::uint64_t>& block) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !full_ || error_; });
    if (error_) std::rethrow_exception(error_);
    full_ = std::move(block);
    changed_.notify_all();
    changed_.wait(lock, [&] { return !free_.empty() || error_; });
    if (error_) std::rethrow_exception(error_);
    block = std::move(free_.back());
    free_.pop_back();
  }
  // Parser: no more blocks.
  void close() {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }

  // Sorting thread: the next full block; nullopt once closed and none is left.
  std::optional<std::vector<std::uint64_t>> take() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return full_ || closed_; });
    std::optional<std::vector<std::uint64_t>> block = std::move(full_);
    full_.reset();
    changed_.notify_all();
    return block;
  }
  void give_back(std::vector<std::uint64_t> buffer) {
    buffer.clear();
    const std::lock_guard lock(mutex_);
    free_.push_back(std::move(buffer));
    changed_.notify_all();
  }
  void fail(std::exception_ptr error) {
    const std::lock_guard lock(mutex_);
    error_ = std::move(error);
    changed_.notify_all();
  }
  std::exception_ptr error() const {
    const std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<std::vector<std::uint64_t>> full_;
  std::vector<std::vector<std::uint64_t>> free_;
  bool closed_ = false;
  std::exception_ptr error_;
};

// The sorting thread of Index_gpu+: takes full blocks from the channel, sorts them and
// writes their runs, until the channel is closed; a failure goes to the channel, whose
// parser side rethrows it. stop() (or the destructor, however parsing ended) closes the
// channel and waits for the block in hand.
class sorting_thread {
 public:
  sorting_thread(block_channel& channel, run_maker& make_run)
      : channel_(channel), thread_([&channel, &make_run] {
          try {
            while (auto block = channel.take()) {
              make_run(*block);
              channel.give_back(std::move(*block));
            }
          } catch (...) {
            channel.fail(std::current_exception());
          }
        }) {}
  sorting_thread(const sorting_thread&) = delete;
  sorting_thread& operator=(const sorting_thread&) = delete;
  ~sorting_thread() { stop(); }

  void stop() {
    if (!thread_.joinable()) return;
    channel_.close();
    thread_.join();
  }

 private:
  block_channel& channel_;
  std::thread thread_;
};

struct first_phase {
  std::vector<std::string> docs;
  std::vector<std::filesystem::path> runs;
};

inline first_phase finish_first_phase(std::vector<std::string> docs,
                                      const collection_parser& parser, run_maker& make_run,
                                      build_stats& stats) {
  stats.sort = make_run.sort_seconds;
  stats.write_runs = make_run.write_seconds;
  stats.bytes = parser.bytes();
  stats.keys = parser.keys();
  return {std::move(docs), std::move(make_run.runs)};
}

// Parse, sort and write runs one after the other (Index_cpu, Index_gpu).
inline first_phase parse_then_sort(const build_config& config,
                                   const std::vector<std::string>& files, dictionary& dict,
                                   block_sorter& sorter, const std::filesystem::path& scratch,
                                   build_stats& stats) {
  run_maker make_run(sorter, scratch);
  collection_parser parser(dict, config.block_keys, std::ref(make_run));
  const stopwatch clock;
  std::vector<std::string> docs = parser.parse(files, config.max_bytes, config.cancel);
  stats.parse = clock.seconds() - parser.flush_seconds();
  return finish_first_phase(std::move(docs), parser, make_run, stats);
}

// Parse on this thread while another sorts and writes the previous block (Index_gpu+).
inline first_phase parse_while_sorting(const build_config& config,
                                       const std::vector<std::string>& files, dictionary& dict,
                                       block_sorter& sorter, const std::filesystem::path& scratch,
                                       build_stats& stats) {
  std::vector<std::uint64_t> spare;
  spare.reserve(config.block_keys);
  block_channel channel(std::move(spare));
  run_maker make_run(sorter, scratch);
  sorting_thread sorting(channel, make_run);
  collection_parser parser(dict, config.block_keys,
                           [&](std::vector<std::uint64_t>& block) { channel.exchange(block); });
  const stopwatch clock;
  std::vector<std::string> docs = parser.parse(files, config.max_bytes, config.cancel);
  stats.parse = clock.seconds() - parser.flush_seconds();  // less the waits for a buffer
  sorting.stop();
  if (const std::exception_ptr error = channel.error()) std::rethrow_exception(error);
  return finish_first_phase(std::move(docs), parser, make_run, stats);
}

// Merges runs in groups of at most max_fan_in into longer runs until one merge can take
// them all (only with very many runs: each open run costs a file descriptor).
inline std::vector<std::filesystem::path> reduce_runs(std::vector<std::filesystem::path> runs,
                                                      std::size_t max_fan_in,
                                                      const std::filesystem::path& scratch,
                                                      const std::atomic<bool>* cancel) {
  max_fan_in = std::max<std::size_t>(max_fan_in, 2);
  for (std::size_t pass = 0; runs.size() > max_fan_in; ++pass) {
    std::vector<std::filesystem::path> merged;
    for (std::size_t first = 0; first < runs.size(); first += max_fan_in) {
      const std::size_t count = std::min(max_fan_in, runs.size() - first);
      const std::span<const std::filesystem::path> group(runs.data() + first, count);
      merged.push_back(scratch / ("pass-" + std::to_string(pass) + "-" +
                                  std::to_string(merged.size())));
      run_writer out(merged.back());
      merge_runs(group, [&](std::uint64_t key, std::uint32_t tf) { out.add(key, tf); }, cancel);
      out.close();
      for (const auto& run : group) std::filesystem::remove(run);
    }
    runs = std::move(merged);
  }
  return runs;
}

// Builds the index of config.inputs in config.index_dir (BSBI): parse the documents into
// blocks of (termID, docID) keys, sort each block and write it as a run, merge the runs
// into postings lists. Every variant writes the same bytes. On failure nothing of this
// build is left behind.
inline build_stats build_index(const build_config& config) {
  if (config.block_keys == 0) throw usage_error("the block size must be at least one key");
  const std::vector<std::string> files = list_files(config.inputs);
  index_output output(config.index_dir);

  host_sorter on_host;
  gpusort_sorter with_gpusort(config.sort_options);
  block_sorter* sorter = config.sorter;
  if (!sorter) sorter = config.method == variant::cpu ? static_cast<block_sorter*>(&on_host)
                                                      : &with_gpusort;
  build_stats stats;
  dictionary dict;
  const stopwatch first;
  const auto first_pass = config.method == variant::gpu_pipelined ? parse_while_sorting
                                                                   : parse_then_sort;
  first_phase phase = first_pass(config, files, dict, *sorter, output.scratch(), stats);
  stats.parse_sort = first.seconds();

  const stopwatch second;
  stats.runs = phase.runs.size();
  const auto runs = reduce_runs(std::move(phase.runs), config.max_fan_in, output.scratch(),
                                config.cancel);
  postings_builder postings(output.temp(postings_file), dict.size());
  merge_runs(runs, [&](std::uint64_t key, std::uint32_t tf) { postings.add(key, tf); },
             config.cancel);
  stats.postings = postings.postings();
  write_terms(output.temp(terms_file), dict, postings.finish());
  write_docs(output.temp(docs_file), phase.docs);
  output.commit();
  stats.merge = second.seconds();
  stats.documents = phase.docs.size();
  stats.terms = dict.size();
  return stats;
}

// ---- reading and querying -----------------------------------------------------------------

struct posting {
  doc_id doc;
  std::uint32_t tf;
  bool operator==(const posting&) const = default;
};

// An index opened for queries: the term records and names in memory, postings and paths
// read from their files on demand. Any inconsistency throws usage_error.
class index_reader {
 public:
  explicit index_reader(const std::filesystem::path& dir) : dir_(dir) {
    const file_descriptor terms = open_file(terms_file);
    postings_ = open_file(postings_file);
    docs_ = open_file(docs_file);
    load_terms(terms);
    postings_size_ = checked_header(postings_, postings_file, postings_magic, postings_count_);
    load_doc_offsets();
    for (const term_record& t : terms_) check_term(t);
  }

  std::size_t term_count() const { return terms_.size(); }
  std::uint32_t document_count() const {
    return static_cast<std::uint32_t>(doc_offsets_.size() - 1);
  }
  std::uint64_t posting_count() const { return postings_count_; }

  // The i-th term in name order, and its record.
  std::string_view term_name(std::size_t i) const { return name_of(terms_[i]); }
  const term_record& term_at(std::size_t i) const { return terms_[i]; }

  // Binary search by name; the term as given (query_terms turns user input into terms).
  std::optional<term_record> find(std::string_view term) const {
    const auto it = std::ranges::lower_bound(
        terms_, term, std::less<>{}, [&](const term_record& t) { return name_of(t); });
    if (it == terms_.end() || name_of(*it) != term) return std::nullopt;
    return *it;
  }

  std::vector<posting> postings(const term_record& term) const {
    std::vector<std::uint8_t> bytes(term.postings_bytes);
    read_exactly_at(postings_.get(), bytes.data(), bytes.size(), term.postings_offset,
                    where(postings_file));
    std::vector<posting> list;
    list.reserve(term.df);
    const std::uint8_t* at = bytes.data();
    const std::uint8_t* const end = at + bytes.size();
    std::uint64_t doc = 0;
    for (std::uint32_t i = 0; i < term.df; ++i) {
      std::uint64_t gap = 0, tf = 0;
      if (!get_varint(at, end, gap) || !get_varint(at, end, tf)) corrupt(postings_file);
      if (i > 0 && gap == 0) corrupt(postings_file);
      doc += gap;
      if (doc >= document_count() || tf == 0 || tf > std::numeric_limits<std::uint32_t>::max())
        corrupt(postings_file);
      list.push_back({static_cast<doc_id>(doc), static_cast<std::uint32_t>(tf)});
    }
    if (at != end) corrupt(postings_file);
    return list;
  }

  std::string document_path(doc_id doc) const {
    if (doc >= document_count()) throw usage_error("no document " + std::to_string(doc));
    std::string path(doc_offsets_[doc + 1] - doc_offsets_[doc], '\0');
    read_exactly_at(docs_.get(), path.data(), path.size(), docs_paths_start_ + doc_offsets_[doc],
                    where(docs_file));
    return path;
  }

 private:
  std::string where(std::string_view file) const { return (dir_ / file).string(); }
  [[noreturn]] void corrupt(std::string_view file) const {
    throw usage_error(where(file) + ": damaged index file");
  }

  file_descriptor open_file(std::string_view name) const {
    file_descriptor fd(::open(where(name).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
      throw usage_error("cannot open index " + dir_.string() + ": " + where(name) + ": " +
                        errno_text());
    return fd;
  }
  // Checks the header, returns the file's size and sets count.
  std::uint64_t checked_header(const file_descriptor& fd, std::string_view name,
                               std::string_view magic, std::uint64_t& count) const {
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) throw usage_error(where(name) + ": " + errno_text());
    file_header header{};
    if (static_cast<std::uint64_t>(info.st_size) < sizeof header)
      throw usage_error(where(name) + ": not a gpusort-indexer index file");
    read_exactly_at(fd.get(), &header, sizeof header, 0, where(name));
    if (std::string_view(header.magic.data(), header.magic.size()) != magic)
      throw usage_error(where(name) + ": not a gpusort-indexer index file");
    count = header.count;
    return static_cast<std::uint64_t>(info.st_size);
  }

  void load_terms(const file_descriptor& fd) {
    std::uint64_t count = 0;
    const std::uint64_t size = checked_header(fd, terms_file, terms_magic, count);
    const std::uint64_t table_end = sizeof(file_header) + count * sizeof(term_record);
    if (count > size / sizeof(term_record) || table_end > size) corrupt(terms_file);
    terms_.resize(count);
    read_exactly_at(fd.get(), terms_.data(), count * sizeof(term_record), sizeof(file_header),
                    where(terms_file));
    names_.resize(size - table_end);
    read_exactly_at(fd.get(), names_.data(), names_.size(), table_end, where(terms_file));
    for (const term_record& t : terms_)
      if (t.name_offset > names_.size() || t.name_length > names_.size() - t.name_offset)
        corrupt(terms_file);
    for (std::size_t i = 1; i < terms_.size(); ++i)
      if (!(name_of(terms_[i - 1]) < name_of(terms_[i]))) corrupt(terms_file);
  }

  void load_doc_offsets() {
    std::uint64_t count = 0;
    const std::uint64_t size = checked_header(docs_, docs_file, docs_magic, count);
    if (count >= size / sizeof(std::uint64_t)) corrupt(docs_file);
    doc_offsets_.resize(count + 1);
    read_exactly_at(docs_.get(), doc_offsets_.data(), doc_offsets_.size() * sizeof(std::uint64_t),
                    sizeof(file_header), where(docs_file));
    docs_paths_start_ = sizeof(file_header) + doc_offsets_.size() * sizeof(std::uint64_t);
    if (doc_offsets_.front() != 0 || !std::ranges::is_sorted(doc_offsets_) ||
        docs_paths_start_ + doc_offsets_.back() != size)
      corrupt(docs_file);
  }

  void check_term(const term_record& t) const {
    if (t.df == 0 || t.df > document_count() || t.postings_offset < sizeof(file_header) ||
        t.postings_offset > postings_size_ || t.postings_bytes > postings_size_ - t.postings_offset)
      corrupt(terms_file);
  }

  std::string_view name_of(const term_record& t) const {
    return std::string_view(names_).substr(t.name_offset, t.name_length);
  }

  std::filesystem::path dir_;
  file_descriptor postings_, docs_;
  std::vector<term_record> terms_;
  std::string names_;
  std::uint64_t postings_size_ = 0, postings_count_ = 0, docs_paths_start_ = 0;
  std::vector<std::uint64_t> doc_offsets_;
};

struct term_hits {
  std::string term;  // as looked up (query_terms)
  std::uint32_t df = 0;
};
struct query_result {
  std::vector<term_hits> terms;
  std::vector<doc_id> documents;  // those holding every term, ascending
};

// Looks the words' terms up (query_terms: lowercased, split as documents are) and
// intersects their postings, shortest list first.
inline query_result run_query(const index_reader& index, const std::vector<std::string>& words) {
  query_result result;
  std::vector<std::vector<doc_id>> lists;
  for (const std::string& word : words) {
    for (std::string& term : query_terms(word)) {
      term_hits hits{std::move(term), 0};
      std::vector<doc_id> docs;
      if (const auto record = index.find(hits.term)) {
        hits.df = record->df;
        docs.reserve(record->df);
        for (const posting& p : index.postings(*record)) docs.push_back(p.doc);
      }
      lists.push_back(std::move(docs));
      result.terms.push_back(std::move(hits));
    }
  }
  if (lists.empty()) return result;
  std::ranges::sort(lists, {}, [](const std::vector<doc_id>& list) { return list.size(); });
  result.documents = std::move(lists.front());
  for (std::size_t i = 1; i < lists.size() && !result.documents.empty(); ++i) {
    std::vector<doc_id> common;
    std::ranges::set_intersection(result.documents, lists[i], std::back_inserter(common));
    result.documents = std::move(common);
  }
  return result;
}

}  // namespace gpusort::indexer
