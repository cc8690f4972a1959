// gpusort sort's GNU command line and its text-line sort (text_sort.hpp).
#include "text_sort.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <omp.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <queue>
#include <span>
#include <utility>

#include "cli.hpp"  // parse_unsigned, and the file machinery's names
#include "cli11_options.hpp"
#include "progress.hpp"
#include "records.hpp"  // pending_file
#include "run_plan.hpp"  // host_memory_bytes, default_host_budget
#include "standard_descriptors.hpp"

namespace gpusort::tools {

namespace {

const std::string typed_group = "typed", text_group = "text";

// GNU sort's options that the text sort lacks, refused with the reason.
struct refused_option {
  const char* names;
  bool valued;
  const char* reason;
};

constexpr refused_option refused_options[] = {
    {"-d,--dictionary-order", false, "keys compare as raw bytes, in the C locale's order"},
    {"-f,--ignore-case", false, "keys compare as raw bytes, in the C locale's order"},
    {"-i,--ignore-nonprinting", false, "keys compare as raw bytes, in the C locale's order"},
    {"-g,--general-numeric-sort", false,
     "-n reads decimal numbers (sign, digits, a decimal point), not floats with exponents"},
    {"-h,--human-numeric-sort", false, "sizes such as 2K are not read (the help is --help)"},
    {"-M,--month-sort", false, "month names are not read"},
    {"-V,--version-sort", false, "version numbers are not read"},
    {"-R,--random-sort", false, "no random order is offered"},
    {"--random-source", true, "no random order is offered"},
    {"--debug", false, "keys are not annotated"},
    {"--files0-from", true, "name the inputs as arguments"},
};

// "-f (--ignore-case)" for "-f,--ignore-case".
std::string shown_names(std::string_view names) {
  const std::size_t comma = names.find(',');
  if (comma == std::string_view::npos) return std::string(names);
  return std::string(names.substr(0, comma)) + " (" + std::string(names.substr(comma + 1)) + ")";
}

void refuse_missing_features(const CLI::App& app, std::string_view sort_word) {
  for (const refused_option& refused : refused_options) {
    const std::string names = refused.names;
    if (app.count(names.substr(0, names.find(','))) > 0)
      throw usage_error(shown_names(names) + " is not supported: " + refused.reason);
  }
  if (!sort_word.empty() && sort_word != "numeric")
    throw usage_error("--sort=" + std::string(sort_word) +
                      " is not supported: only --sort=numeric (-n) is");
}

// An option of typed sorts among text ones, or the other way round, is refused by name; -u
// serves both (typed keys: the first record of each key).
void refuse_other_mode(const CLI::App& app, bool typed) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() == 0 || option->check_name("-u")) continue;
    if (typed && option->get_group() == text_group)
      throw usage_error(option->get_name() + " is an option of text-line sorts (without --type "
                                             "or --record-bytes)");
    if (!typed && option->get_group() == typed_group)
      throw usage_error(option->get_name() + " goes with --type or --record-bytes; text lines "
                                             "take GNU sort's options (gpusort sort --help)");
  }
}

// -t SEP: one byte, or `\0` for the NUL byte.
char parse_separator(const std::string& text) {
  if (text == "\\0") return '\0';
  if (text.size() != 1) throw usage_error("-t takes one byte, not " + quote_input(text));
  return text[0];
}

// -S SIZE as GNU sort writes it: a number, then one of b K M G T P E (K when none) or % (of
// the host's memory); the bytes it names.
std::uint64_t parse_buffer_size(const std::string& text) {
  const std::size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view suffix = std::string_view(text).substr(digits);
  const std::string_view units = "bkKmMgGtTpPeE%";
  if (digits == 0 || suffix.size() > 1 ||
      (suffix.size() == 1 && units.find(suffix[0]) == std::string_view::npos))
    throw usage_error("-S: " + quote_input(text) +
                      " is not a size (a number, then K, M, G, T, P, E, b or %)");
  const std::uint64_t number = parse_unsigned(text.substr(0, digits), "-S");
  const char unit = suffix.empty() ? 'K' : suffix[0];
  if (unit == '%') return host_memory_bytes() / 100 * std::min<std::uint64_t>(number, 100);
  const int shift = unit == 'b' ? 0 : 10 * static_cast<int>(units.find(std::toupper(unit)) / 2);
  if (shift > 0 && number > (~std::uint64_t{0} >> shift)) return ~std::uint64_t{0};
  return number << shift;
}

// A count that must be at least `least`: --parallel N, --batch-size N (accepted, not used).
void check_count_at_least(const std::string& text, std::string_view option, std::uint64_t least) {
  if (parse_unsigned(text, option) < least)
    throw usage_error(std::string(option) + " must be at least " + std::to_string(least));
}

order_check parse_check(const CLI::App& app, const std::string& check_word) {
  const bool diagnose = app.count("-c") > 0 || check_word == "diagnose-first";
  const bool quiet = app.count("-C") > 0 || check_word == "quiet" || check_word == "silent";
  if (!check_word.empty() && !diagnose && !quiet)
    throw usage_error("--check=" + check_word + ": diagnose-first, quiet or silent");
  if (diagnose && quiet) throw usage_error("-c and -C: one or the other");
  return quiet ? order_check::quiet : diagnose ? order_check::diagnose : order_check::none;
}

// The values GNU sort's options take, bound to CLI11.
struct gnu_values {
  std::vector<std::string> keys;
  std::string separator, output, buffer_size, scratch_dir, parallel, batch_size, sort_word,
      check_word;
};

void declare_gnu_options(CLI::App& app, gnu_values& v) {
  app.add_option("-k,--key", v.keys)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(text_group);
  const auto valued = [&](const std::string& names, std::string& into) {
    app.add_option(names, into)->group(text_group);
  };
  valued("-t,--field-separator", v.separator);
  valued("-o,--output", v.output);
  valued("-S,--buffer-size", v.buffer_size);
  valued("-T,--temporary-directory", v.scratch_dir);
  valued("--parallel", v.parallel);
  valued("--batch-size", v.batch_size);
  valued("--sort", v.sort_word);
  app.add_option("--compress-program")->group(text_group);  // accepted, not used
  for (const char* flag : {"-r,--reverse", "-n,--numeric-sort", "-u,--unique", "-s,--stable",
                           "-z,--zero-terminated", "-b,--ignore-leading-blanks", "-m,--merge",
                           "-c", "-C", "--version"})
    app.add_flag(flag)->group(text_group);
  app.add_flag("--check{diagnose-first}", v.check_word)->group(text_group);
  for (const refused_option& refused : refused_options) {
    if (refused.valued)
      app.add_option(refused.names)->group(text_group);
    else
      app.add_flag(refused.names)->group(text_group);
  }
}

text_sort_request text_request(const CLI::App& app, const gnu_values& v,
                               std::vector<std::string> files) {
  text_sort_request request;
  line_order& order = request.order;
  for (const std::string& key : v.keys) order.keys.push_back(gpusort::parse_line_key(key));
  if (app.count("-t") > 0) order.separator = parse_separator(v.separator);
  order.numeric = app.count("-n") > 0 || v.sort_word == "numeric";
  order.reverse = app.count("-r") > 0;
  order.skip_blanks = app.count("-b") > 0;
  order.unique = app.count("-u") > 0;
  order.stable = app.count("-s") > 0;
  order.terminator = app.count("-z") > 0 ? '\0' : '\n';
  if (app.count("-S") > 0) request.buffer_bytes = parse_buffer_size(v.buffer_size);
  if (app.count("--parallel") > 0) check_count_at_least(v.parallel, "--parallel", 1);
  if (app.count("--batch-size") > 0) check_count_at_least(v.batch_size, "--batch-size", 2);
  request.check = parse_check(app, v.check_word);
  if (request.check != order_check::none && files.size() > 1)
    throw usage_error("-c and -C check one input, not " + std::to_string(files.size()));
  if (request.check != order_check::none && app.count("-o") > 0)
    throw usage_error("-c and -C write no output: no -o");
  request.inputs = files.empty() ? std::vector<std::string>{"-"} : std::move(files);
  if (app.count("-o") > 0) request.output = v.output;
  request.scratch_dir = v.scratch_dir;
  return request;
}

// Reads input `name` (`-`, or /dev/stdin and the like: standard input) a block at a time into
// take(bytes); whether it held any byte.
template <class Take>
bool read_blocks(const std::string& name, Take&& take) {
  if (name.empty()) throw usage_error("an empty input file name");
  refuse_closed_descriptor(name, STDIN_FILENO);
  const int named = named_descriptor(name, STDIN_FILENO);
  const unique_fd opened(named >= 0 ? -1 : ::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  const int fd = named >= 0 ? named : opened.fd;
  if (fd < 0) throw usage_error(name + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) throw usage_error(name + ": is a directory");
  char buffer[1 << 16];
  bool any = false;
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw io_error(name + ": read failed: " + std::strerror(errno));
    if (got == 0) return any;
    take(std::string_view(buffer, static_cast<std::size_t>(got)));
    any = true;
  }
}

// Appends input `name` to `text`, with a terminator after a last line that lacks one, as GNU
// sort reads each input.
void append_input(const std::string& name, char terminator, std::string& text) {
  if (read_blocks(name, [&](std::string_view bytes) { text.append(bytes); }) && text.back() != terminator)
    text.push_back(terminator);
}

// The inputs, one after the other.
std::string read_inputs(const text_sort_request& request) {
  std::string text;
  for (const std::string& name : request.inputs) append_input(name, request.order.terminator, text);
  return text;
}

// A run of sorted lines in an unlinked scratch file (gone when closed, even after a kill),
// read back a line at a time.
class line_run {
 public:
  explicit line_run(const std::filesystem::path& dir)
      : file_{create_unlinked_file(dir)}, path_(dir.string() + " (a scratch run of sorted lines)") {
    if (file_.fd < 0) throw io_error(dir.string() + ": cannot create a scratch file: " + std::strerror(errno));
  }
  // Appends bytes to the run.
  void append(std::string_view bytes) {
    write_at(file_.fd, size_, bytes.data(), bytes.size(), path_);
    size_ += bytes.size();
  }
  int fd() const { return file_.fd; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  unique_fd file_;
  std::string path_;
  std::uint64_t size_ = 0;
};

class run_lines {
 public:
  run_lines(const line_run& run, char terminator) : run_(run), terminator_(terminator) {}
  // The next line (without its terminator) into line(); false after the last.
  bool next() {
    line_.clear();
    for (;;) {
      const std::size_t end = buffer_.find(terminator_, at_);
      if (end != std::string::npos) {
        line_.append(buffer_, at_, end - at_);
        at_ = end + 1;
        return true;
      }
      line_.append(buffer_, at_);
      if (offset_ == run_.size()) return !line_.empty();
      buffer_.resize(std::min<std::uint64_t>(std::uint64_t{1} << 20, run_.size() - offset_));
      read_at(run_.fd(), offset_, buffer_.data(), buffer_.size(), run_.path());
      offset_ += buffer_.size();
      at_ = 0;
    }
  }
  std::string_view line() const { return line_; }

 private:
  const line_run& run_;
  char terminator_;
  std::uint64_t offset_ = 0;
  std::string buffer_, line_;
  std::size_t at_ = 0;
};

// A run's bytes mapped for reading (a scratch file of this process: nobody else truncates it),
// with its lines' starts.
class mapped_run {
 public:
  mapped_run(const line_run& run, char terminator) : size_(run.size()) {
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, run.fd(), 0);
      if (p == MAP_FAILED) throw io_error(run.path() + ": cannot map it: " + std::strerror(errno));
      bytes_ = static_cast<const char*>(p);
    }
    starts_ = gpusort::line_starts(text(), terminator);
  }
  ~mapped_run() {
    if (bytes_) ::munmap(const_cast<char*>(bytes_), size_);
  }
  mapped_run(const mapped_run&) = delete;
  mapped_run& operator=(const mapped_run&) = delete;

  std::string_view text() const { return {bytes_, size_}; }
  std::uint64_t lines() const { return starts_.size() - 1; }
  std::string_view line(std::uint64_t i) const { return gpusort::line_at(text(), starts_, i); }
  // Bytes of lines [0, i), terminators included.
  std::uint64_t bytes_before(std::uint64_t i) const { return starts_[i]; }

 private:
  const char* bytes_ = nullptr;
  std::uint64_t size_;
  std::vector<std::uint64_t> starts_;
};

// Bytes for a buffer of gigabytes, in huge pages where the kernel offers them on request
// (transparent huge pages in `madvise` mode): a 10 GB buffer takes 5,000 page faults instead
// of 2.6 million.
struct free_bytes {
  void operator()(char* p) const { std::free(p); }
};
constexpr std::uint64_t huge_page_bytes = std::uint64_t{2} << 20;
std::unique_ptr<char[], free_bytes> large_buffer(std::uint64_t bytes) {
  const std::uint64_t rounded =
      (std::max<std::uint64_t>(bytes, 1) + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  char* p = static_cast<char*>(std::aligned_alloc(huge_page_bytes, rounded));
  if (!p) throw std::bad_alloc();
  ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without it, small pages
  return std::unique_ptr<char[], free_bytes>(p);
}

// The blocks in which a regular input file is read out of core.
constexpr std::uint64_t read_block_bytes = std::uint64_t{64} << 20;

// A growable byte buffer of large_buffer's memory: out of core, two of them take turns
// (one filled by the reader, one sorted into its run), so that each chunk of gigabytes is
// neither copied as it grows nor faulted in again page by page (a std::string's doublings to
// 4 GB took 2-4 s each at 10 GiB of lines, H200 host).
class chunk_buffer {
 public:
  chunk_buffer() = default;
  chunk_buffer(chunk_buffer&& other) noexcept { *this = std::move(other); }
  chunk_buffer& operator=(chunk_buffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }
  std::string_view view() const { return {data_.get(), size_}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  char back() const { return data_[size_ - 1]; }
  // Appends, growing by doubling but not past `settled` bytes unless the bytes need it (a
  // line longer than a chunk), so that a buffer that reached a chunk's size stays there.
  void append(std::string_view bytes, std::size_t settled) {
    reserve_for(size_ + bytes.size(), settled);
    if (!bytes.empty()) std::memcpy(data_.get() + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  // `bytes` of room after what it holds (for a read to fill), grown as append grows; grow
  // then takes them.
  std::span<char> tail(std::size_t bytes, std::size_t settled) {
    reserve_for(size_ + bytes, settled);
    return {data_.get() + size_, bytes};
  }
  void grow(std::size_t bytes) { size_ += bytes; }
  void assign(std::string_view bytes, std::size_t settled) {
    size_ = 0;
    append(bytes, settled);
  }
  void resize_down(std::size_t size) { size_ = std::min(size, size_); }
  // `bytes` of room, what they held dropped: the buffer a run's sorted lines are gathered
  // into, its pages faulted in once for every run (a new std::string of a chunk's size was
  // zeroed page by page on one core for each).
  std::span<char> room(std::size_t bytes, std::size_t settled) {
    size_ = 0;
    if (bytes > capacity_) regrow(std::max(bytes, std::min(2 * capacity_, settled)));
    size_ = bytes;
    return {data_.get(), bytes};
  }
  void erase_front(std::size_t bytes) {
    if (bytes == 0) return;
    std::memmove(data_.get(), data_.get() + bytes, size_ - bytes);
    size_ -= bytes;
  }

 private:
  void reserve_for(std::size_t needed, std::size_t settled) {
    if (needed > capacity_)
      regrow(needed <= settled ? std::max(needed, std::min(2 * capacity_, settled))
                               : std::max(needed, 2 * capacity_));
  }
  void regrow(std::size_t capacity) {
    capacity = (capacity + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;  // all of it
    auto bigger = large_buffer(capacity);
    if (size_) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<char[], free_bytes> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// The merged output written by one thread while the pieces merge on all cores (run()'s
// caller is that thread). Pieces hand it blocks with their offsets (put), at most `most`
// waiting. Pieces that wrote into the file themselves waited on its lock, and the kernel's
// waiters spin while the holder copies: on a 2-core host 12.6% of a text sort's time went to
// that spinning, on a 16-core one up to 15 threads spun for each writing one.
class block_writer {
 public:
  block_writer(int fd, std::string name, std::size_t most)
      : fd_(fd), name_(std::move(name)), most_(std::max<std::size_t>(most, 1)) {}

  // Queues `bytes` for bytes [at, at + size) of the file, leaving an empty buffer (one the
  // writer is done with, its capacity kept) in its place. Throws the writer's failure.
  void put(std::uint64_t at, std::string& bytes) {
    std::unique_lock lock(m_);
    room_.wait(lock, [&] { return blocks_.size() < most_ || failure_; });
    if (failure_) std::rethrow_exception(failure_);
    blocks_.emplace_back(at, std::move(bytes));
    bytes = std::string();
    if (!spare_.empty()) {
      bytes = std::move(spare_.back());
      spare_.pop_back();
    }
    queued_.notify_one();
  }
  // No more blocks: run() returns once the queued ones are written.
  void close() {
    std::lock_guard lock(m_);
    closed_ = true;
    queued_.notify_one();
  }
  // Writes the blocks as they come until close(); a failed write is rethrown here and by the
  // next put.
  void run() {
    const one_of_many_scope one_thread(true);  // each write on this thread alone
    std::unique_lock lock(m_);
    for (;;) {
      queued_.wait(lock, [&] { return !blocks_.empty() || closed_; });
      if (blocks_.empty()) return;
      auto [at, bytes] = std::move(blocks_.front());
      blocks_.pop_front();
      lock.unlock();
      try {
        write_at(fd_, at, bytes.data(), bytes.size(), name_);
      } catch (...) {
        lock.lock();
        failure_ = std::current_exception();
        room_.notify_all();
        throw;
      }
      bytes.clear();
      lock.lock();
      spare_.push_back(std::move(bytes));
      room_.notify_one();
    }
  }

 private:
  int fd_;
  std::string name_;
  std::size_t most_;
  std::mutex m_;
  std::condition_variable queued_, room_;
  std::deque<std::pair<std::uint64_t, std::string>> blocks_;
  std::vector<std::string> spare_;
  bool closed_ = false;
  std::exception_ptr failure_;
};

// Lines sorted in memory while they fit `chunk_bytes`, else out of core: each full chunk (cut
// at a line's end) sorted by sort_text into a run, and the runs merged by GNU's comparison,
// runs_at_once at a time (the earlier runs first, so that equal lines keep their input order
// and -u keeps the first of them). Several merge passes where the input makes more runs. A
// chunk is sorted and written on a thread of its own while the next one is read: two chunks
// (and the sorted copy of one) in memory at most.
class line_runs {
 public:
  static constexpr std::size_t runs_at_once = 64;

  line_runs(const line_order& order, std::filesystem::path scratch, std::uint64_t chunk_bytes)
      : order_(order), compare_(order), scratch_(std::move(scratch)), chunk_bytes_(chunk_bytes) {}
  line_runs(const line_runs&) = delete;
  line_runs& operator=(const line_runs&) = delete;
  // A run still being written (an error unwinds past it) is waited for; its error is dropped.
  ~line_runs() {
    if (spilling_.valid()) spilling_.wait();
  }

  // Bytes of an input, whole lines or not, in blocks of any size: each chunk_bytes of them
  // (cut after the last line that ends inside) sorted into a run.
  void append(std::string_view bytes) {
    filling_.append(bytes, settled());
    cut_chunks();
  }
  // Room for the next `bytes` of an input, for a read to fill in place (no copy through a
  // block buffer: a memcpy of every byte on the reading thread); appended then takes them.
  std::span<char> room_for(std::size_t bytes) { return filling_.tail(bytes, settled()); }
  void appended(std::size_t bytes) {
    filling_.grow(bytes);
    cut_chunks();
  }

  // The end of an input: a last line without a terminator gets one, as GNU sort reads it.
  void end_input(bool had_bytes) {
    if (had_bytes && !filling_.empty() && filling_.back() != order_.terminator)
      filling_.append(std::string_view(&order_.terminator, 1), settled());
  }
  // The sorted lines into `out` (named `name` in errors).
  void finish(std::FILE* out, const std::string& name) {
    wait_for_run();
    if (runs_.empty()) {
      put(out, name, gpusort::sort_text(filling_.view(), order_));
      return;
    }
    if (!filling_.empty()) write_run(filling_.view());
    filling_ = chunk_buffer{};  // the merge's memory
    spare_ = chunk_buffer{};
    sorted_ = chunk_buffer{};
    if (std::fflush(out) != 0) throw io_error(name + ": write failed: " + std::strerror(errno));
    merge_in_pieces(::fileno(out), name);
  }

 private:
  // A buffer's size once it holds a chunk and the block read past it.
  std::size_t settled() const { return chunk_bytes_ + read_block_bytes; }
  // The whole chunks of what filling_ holds (cut after their last line) sorted into runs.
  void cut_chunks() {
    std::size_t from = 0;
    while (filling_.size() - from >= chunk_bytes_) {
      const std::string_view rest = filling_.view().substr(from);
      std::size_t last = rest.rfind(order_.terminator, chunk_bytes_ - 1);
      if (last == std::string_view::npos) last = rest.find(order_.terminator, chunk_bytes_);  // one long line
      if (last == std::string_view::npos) break;  // a line longer than a chunk so far: it grows
      wait_for_run();  // the spare buffer is free again
      if (from == 0 && rest.size() - (last + 1) < chunk_bytes_) {
        // The usual cut (chunks are larger than the blocks read): the buffer goes to its run
        // whole and only its tail is copied, into the other buffer, which is filled next.
        spare_.assign(rest.substr(last + 1), settled());
        filling_.resize_down(last + 1);
        std::swap(filling_, spare_);
        spill();
        return;
      }
      spare_.assign(rest.substr(0, last + 1), settled());
      spill();
      from += last + 1;
    }
    filling_.erase_front(from);
  }

  // The spare buffer's chunk to its run on a thread of its own (the chunk before it written
  // already: wait_for_run), which hands the buffer back.
  void spill() {
    spilling_ = std::async(std::launch::async, [this, lines = std::move(spare_)]() mutable {
      write_run(lines.view());
      return std::move(lines);
    });
  }
  // The run being written, waited for (its error, a full disk, is thrown here); its buffer is
  // the spare again.
  void wait_for_run() {
    if (spilling_.valid()) spare_ = spilling_.get();
  }

  // Lines sorted into a new run (gathered in `sorted_`, one run at a time); runs_at_once runs
  // merged into one.
  void write_run(std::string_view lines) {
    runs_.push_back(std::make_unique<line_run>(scratch_));
    const std::vector<std::uint64_t> starts = gpusort::line_starts(lines, order_.terminator);
    const std::vector<std::uint64_t> order = gpusort::sort_lines(lines, starts, order_);
    const std::span<char> out = sorted_.room(gpusort::gathered_bytes(starts, order), settled());
    gpusort::gather_lines(lines, starts, order, out, order_.terminator);
    {
      // One thread writes the run: writers of one file take turns at its lock, and those
      // waiting spin there (perf: 8.6% of a 2-core text sort), taking cores the reader needs.
      const one_of_many_scope one_thread(true);
      runs_.back()->append({out.data(), out.size()});
    }
    if (runs_.size() < runs_at_once) return;
    // The runs merged into one, written a megabyte at a time (not held in memory).
    auto merged = std::make_unique<line_run>(scratch_);
    std::string pending;
    merge(runs_, [&](std::string_view line) {
      pending.append(line);
      pending.push_back(order_.terminator);
      if (pending.size() >= (std::size_t{1} << 20)) {
        merged->append(pending);
        pending.clear();
      }
    });
    merged->append(pending);
    runs_.clear();
    runs_.push_back(std::move(merged));
  }

  // Every line of `runs` in order to emit(line); with -u the first of each run of lines that
  // compare equal.
  template <class Emit>
  void merge(const std::vector<std::unique_ptr<line_run>>& runs, Emit&& emit) {
    std::vector<run_lines> readers;
    readers.reserve(runs.size());
    for (const auto& run : runs) readers.emplace_back(*run, order_.terminator);
    // Ties go to the earlier run: min-heap on (line, run).
    const auto after = [&](std::size_t a, std::size_t b) {
      const int c = compare_(readers[a].line(), readers[b].line());
      return c != 0 ? c > 0 : a > b;
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(after)> next(after);
    for (std::size_t r = 0; r < readers.size(); ++r)
      if (readers[r].next()) next.push(r);
    std::string last;
    bool any = false;
    while (!next.empty()) {
      const std::size_t r = next.top();
      next.pop();
      if (!(order_.unique && any && compare_(last, readers[r].line()) == 0)) {
        emit(readers[r].line());
        if (order_.unique) last.assign(readers[r].line());
        any = true;
      }
      if (readers[r].next()) next.push(r);
    }
  }

  // The runs merged into `fd` on all cores. The output is cut into pieces at lines sampled
  // from the runs: piece j holds, of every run, the lines between cuts j - 1 and j in the order
  // (line, run), which is the merge's (ties go to the earlier run). Each piece is merged by its
  // own heap and written at its offset: the bytes of every run's lines before its cut. With
  // -u, a cut keeps lines equal to its own together in the later piece (so each piece drops
  // its own repeats), and the pieces first merge without writing to count what they keep.
  void merge_in_pieces(int fd, const std::string& name) {
    std::vector<std::unique_ptr<mapped_run>> runs;
    std::uint64_t total_bytes = 0;
    for (const auto& run : runs_) {
      runs.push_back(std::make_unique<mapped_run>(*run, order_.terminator));
      total_bytes += run->size();
    }
    const std::size_t k = runs.size();
    struct cut {
      std::size_t run;
      std::uint64_t index;
    };
    constexpr std::uint64_t samples_per_run = 64;
    std::vector<cut> samples;
    for (std::size_t r = 0; r < k; ++r)
      for (std::uint64_t i = 1; i <= samples_per_run && runs[r]->lines() > 0; ++i)
        samples.push_back({r, runs[r]->lines() * i / (samples_per_run + 1)});
    const auto before = [&](const cut& a, const cut& b) {
      const int c = compare_(runs[a.run]->line(a.index), runs[b.run]->line(b.index));
      return c != 0 ? c < 0 : a.run != b.run ? a.run < b.run : a.index < b.index;
    };
    std::sort(samples.begin(), samples.end(), before);
    const std::size_t pieces = std::clamp<std::size_t>(
        std::min<std::uint64_t>(total_bytes >> 16, 4 * static_cast<std::uint64_t>(omp_get_max_threads())),
        1, samples.size() + 1);
    // bounds[j * k + r]: the lines of run r before cut j (cut 0: none; cut `pieces`: all).
    std::vector<std::uint64_t> bounds((pieces + 1) * k, 0);
    for (std::size_t r = 0; r < k; ++r) bounds[pieces * k + r] = runs[r]->lines();
#pragma omp parallel for schedule(dynamic)
    for (std::size_t j = 1; j < pieces; ++j) {
      const cut at = samples[samples.size() * j / pieces];
      for (std::size_t r = 0; r < k; ++r) {
        // The first line not before `at`; with -u, the first not below it.
        const auto below = [&](std::uint64_t i) {
          return order_.unique ? compare_(runs[r]->line(i), runs[at.run]->line(at.index)) < 0
                               : before({r, i}, at);
        };
        std::uint64_t low = 0, high = runs[r]->lines();
        if (r == at.run && !order_.unique) low = high = at.index;
        while (low < high) {
          const std::uint64_t mid = low + (high - low) / 2;
          if (below(mid)) low = mid + 1; else high = mid;
        }
        bounds[j * k + r] = low;
      }
    }
    // Where each piece starts in the output, and the output's size.
    std::vector<std::uint64_t> offsets(pieces + 1, 0);
    const auto piece_cuts = [&](std::size_t j) { return std::span(bounds).subspan(j * k, 2 * k); };
    on_pieces(pieces, [&](std::size_t j) {
      if (order_.unique) {
        offsets[j + 1] = merge_piece(runs, piece_cuts(j), nullptr);
      } else {
        for (std::size_t r = 0; r < k; ++r)
          offsets[j + 1] += runs[r]->bytes_before(bounds[(j + 1) * k + r]) - runs[r]->bytes_before(bounds[j * k + r]);
      }
    });
    for (std::size_t j = 0; j < pieces; ++j) offsets[j + 1] += offsets[j];
    reserve_file(fd, offsets[pieces], name);
    // The pieces merge on all cores and one thread writes what they merge.
    block_writer writer(fd, name, 2 * static_cast<std::size_t>(omp_get_max_threads()));
    run_concurrently(2, [&](unsigned worker) {
      if (worker == 1) return writer.run();
      try {
        on_pieces(pieces, [&](std::size_t j) {
          std::uint64_t at = offsets[j];
          merge_piece(runs, piece_cuts(j), [&](std::string& bytes) {
            const std::uint64_t size = bytes.size();
            writer.put(at, bytes);
            at += size;
          });
        });
      } catch (...) {
        writer.close();
        throw;
      }
      writer.close();
    });
  }

  // work(j) for every piece j on all cores; the first exception is rethrown after all.
  template <class Work>
  static void on_pieces(std::size_t pieces, Work&& work) {
    std::vector<std::exception_ptr> failures(pieces);
#pragma omp parallel for schedule(dynamic)
    for (std::size_t j = 0; j < pieces; ++j) {
      try {
        work(j);
      } catch (...) {
        failures[j] = std::current_exception();
      }
    }
    for (const std::exception_ptr& failure : failures)
      if (failure) std::rethrow_exception(failure);
  }

  // One piece of merge_in_pieces: of run r the lines [cuts[r], cuts[k + r]) in order (with
  // -u, the first of each run of equal lines), given to write() a few megabytes at a time
  // (none: only counted); the bytes it kept.
  // The lines of one piece (cuts: each run's first line in it, then each run's end) merged
  // to write(block) a block of megabytes at a time (write may take the block's buffer and
  // leave another); without write, only counted. Returns the piece's bytes.
  std::uint64_t merge_piece(const std::vector<std::unique_ptr<mapped_run>>& runs,
                            std::span<const std::uint64_t> cuts,
                            const std::function<void(std::string&)>& write) const {
    const std::size_t k = runs.size();
    std::vector<std::uint64_t> next(cuts.begin(), cuts.begin() + k);
    const auto after = [&](std::size_t a, std::size_t b) {
      const int c = compare_(runs[a]->line(next[a]), runs[b]->line(next[b]));
      return c != 0 ? c > 0 : a > b;
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(after)> heap(after);
    for (std::size_t r = 0; r < k; ++r)
      if (next[r] < cuts[k + r]) heap.push(r);
    std::string pending;
    std::uint64_t kept = 0;
    std::string_view last;  // the last line kept (the runs stay mapped)
    while (!heap.empty()) {
      const std::size_t r = heap.top();
      heap.pop();
      const std::string_view line = runs[r]->line(next[r]);
      if (!order_.unique || kept == 0 || compare_(last, line) != 0) {
        kept += line.size() + 1;
        last = line;
        if (write) {
          pending.append(line);
          pending.push_back(order_.terminator);
          if (pending.size() >= (std::size_t{8} << 20)) {
            write(pending);
            pending.clear();
          }
        }
      }
      if (++next[r] < cuts[k + r]) heap.push(r);
    }
    if (write && !pending.empty()) write(pending);
    return kept;
  }

  void put(std::FILE* out, const std::string& name, std::string_view bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
      throw io_error(name + ": write failed: " + std::strerror(errno));
  }

  const line_order& order_;
  gpusort::line_comparator compare_;
  std::filesystem::path scratch_;
  std::uint64_t chunk_bytes_;
  chunk_buffer filling_, spare_;  // spare_: empty while its chunk is being spilled
  chunk_buffer sorted_;           // the run being written: its lines in order
  std::vector<std::unique_ptr<line_run>> runs_;  // by one spill at a time; read once it is waited for
  std::future<chunk_buffer> spilling_;
};

// The inputs, opened, with their sizes, when every one is a regular file; else none (a
// stream, or a name read_blocks will report).
struct regular_input {
  std::unique_ptr<unique_fd> file;
  std::uint64_t bytes;
};
std::optional<std::vector<regular_input>> regular_inputs(const std::vector<std::string>& names) {
  std::vector<regular_input> inputs;
  for (const std::string& name : names) {
    if (name.empty() || named_descriptor(name, STDIN_FILENO) >= 0) return std::nullopt;
    auto file = std::make_unique<unique_fd>(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat info {};
    if (file->fd < 0 || ::fstat(file->fd, &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
    inputs.push_back({std::move(file), static_cast<std::uint64_t>(info.st_size)});
  }
  return inputs;
}

// Regular input files that fit in memory, on all cores: read into one buffer by pread from
// every core, the lines sorted (sort_lines), gathered, and written by pwrite from every core
// into the reserved output. One read() stream and one write() stream would each take longer
// than the sort (about 5 GB/s against the page cache's 40).
void sort_files_in_memory(const text_sort_request& request, std::vector<regular_input>& inputs,
                          std::uint64_t input_bytes, pending_file& out, progress& meter) {
  namespace ext = gpusort::detail::external;
  const char terminator = request.order.terminator;
  meter.phase("reading", false);
  // A terminator after each input's last line that lacks one, as GNU sort reads inputs.
  const auto text = large_buffer(input_bytes + inputs.size());
  std::uint64_t size = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ext::read_at(inputs[i].file->fd, 0, text.get() + size, inputs[i].bytes, request.inputs[i]);
    size += inputs[i].bytes;
    if (inputs[i].bytes > 0 && text[size - 1] != terminator) text[size++] = terminator;
    inputs[i].file.reset();
  }
  const std::string_view lines_text(text.get(), size);
  meter.phase("sorting", false);
  const std::vector<std::uint64_t> starts = gpusort::line_starts(lines_text, terminator);
  const std::vector<std::uint64_t> order = gpusort::sort_lines(lines_text, starts, request.order);
  meter.phase("writing", false);
  const std::uint64_t bytes = gpusort::gathered_bytes(starts, order);
  const auto sorted = large_buffer(bytes);
  gpusort::gather_lines(lines_text, starts, order, std::span<char>(sorted.get(), bytes), terminator);
  if (std::fflush(out.get()) != 0) throw io_error(request.output + ": write failed: " + std::strerror(errno));
  // Reserved first, so that a full disk shows before any byte is written. No writeback is
  // started here (output_file does): a new output is left to the page cache, as GNU sort's.
  ext::reserve_file(::fileno(out.get()), bytes, request.output);
  ext::write_at(::fileno(out.get()), 0, sorted.get(), bytes, request.output);
}

// Input `name` (`-`: standard input) into `runs`, a block at a time: a regular file's blocks
// of 64 MiB by pread from every core (its bytes counted on the progress line), a stream's by
// read().
void read_input(const std::string& name, line_runs& runs, progress& meter) {
  if (auto input = regular_inputs({name})) {
    const regular_input& file = input->front();
    meter.phase("reading", true);
    for (std::uint64_t at = 0; at < file.bytes; at += read_block_bytes) {
      const std::uint64_t length = std::min(read_block_bytes, file.bytes - at);
      read_at(file.file->fd, at, runs.room_for(length).data(), length, name);
      runs.appended(length);
      meter.advance(at + length, file.bytes);
    }
    runs.end_input(file.bytes > 0);
    return;
  }
  meter.phase("reading", false);
  runs.end_input(read_blocks(name, [&](std::string_view bytes) { runs.append(bytes); }));
}

// -c and -C: exit code 1 at the first line that must not follow the one before it (with -u,
// also a line equal to it); -c names it on stderr as GNU sort does.
int check_lines(const text_sort_request& request) {
  const std::string& name = request.inputs.front();
  progress meter;
  meter.phase("checking", false);
  const std::string text = read_inputs(request);
  const std::vector<std::uint64_t> starts = gpusort::line_starts(text, request.order.terminator);
  const gpusort::line_comparator compare(request.order);
  for (std::uint64_t i = 1; i + 1 < starts.size(); ++i) {
    const std::string_view line = gpusort::line_at(text, starts, i);
    const int c = compare(gpusort::line_at(text, starts, i - 1), line);
    if (c < 0 || (c == 0 && !request.order.unique)) continue;
    meter.finish();
    if (request.check == order_check::diagnose) {
      std::fprintf(stderr, "gpusort sort: %s:%llu: disorder: ", name.c_str(),
                   static_cast<unsigned long long>(i + 1));
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fputc('\n', stderr);
    }
    return 1;
  }
  return 0;
}

}  // namespace

sort_command_line parse_sort_command_line(int argc, const char* const* argv,
                                          const std::set<std::string_view>& typed_valued,
                                          const std::set<std::string_view>& typed_flags) {
  CLI::App app("", argv[0]);
  set_tool_rules(app);
  declare_long_options(app, typed_valued, typed_flags, typed_group);
  gnu_values gnu;
  declare_gnu_options(app, gnu);
  std::vector<std::string> files;
  app.add_option("files", files);
  parse_command_line(app, argc, argv);
  if (app.count("--version") > 0) return {.version = true};
  refuse_missing_features(app, gnu.sort_word);
  option_values typed = given_long_options(app, typed_valued, typed_flags);
  const bool is_typed = typed.contains("type") || typed.contains("record-bytes");
  refuse_other_mode(app, is_typed);
  if (is_typed) {
    if (app.count("-u") > 0) typed["unique"] = "";
    return {.typed = arguments(std::move(typed), std::move(files))};
  }
  return {.text = text_request(app, gnu, std::move(files))};
}

int sort_text_lines(const text_sort_request& request) {
  if (request.check != order_check::none) return check_lines(request);
  refuse_closed_descriptor(request.output, STDOUT_FILENO);
  // The output first: one that cannot be created fails before any work. It may be an input:
  // it is replaced only once every input was read and the lines sorted.
  pending_file out(request.output, false, request.scratch_dir);
  // The progress line (progress.hpp) is erased before the commit, which is when a stream OUT
  // (a terminal too) gets its bytes.
  progress meter;
  const std::uint64_t budget = request.buffer_bytes > 0 ? request.buffer_bytes : default_host_budget();
  // In memory: the text, its sorted copy and the sort's tables within -S. Out of core a chunk
  // is read while the one before it sorts: a quarter each.
  const std::uint64_t chunk_bytes = std::max<std::uint64_t>(budget / 3, 4096);
  const std::uint64_t run_bytes = std::max<std::uint64_t>(budget / 4, 4096);
  if (auto inputs = regular_inputs(request.inputs)) {
    std::uint64_t input_bytes = 0;
    for (const regular_input& input : *inputs) input_bytes += input.bytes;
    if (input_bytes <= chunk_bytes) {
      sort_files_in_memory(request, *inputs, input_bytes, out, meter);
      meter.finish();
      out.commit();
      return 0;
    }
  }
  line_runs runs(request.order, out.scratch_dir(), run_bytes);
  for (const std::string& name : request.inputs) read_input(name, runs, meter);
  meter.phase("merging", false);
  runs.finish(out.get(), request.output);
  meter.finish();
  out.commit();
  return 0;
}

}  // namespace gpusort::tools
