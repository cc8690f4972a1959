// What the tool's file arguments really are. OUT and IN may be regular files, symbolic links,
// or streams: `-` (standard output or input), /dev/stdout and /dev/fd/N, a FIFO, a device, a
// process substitution. The rules (docs/tool.md):
//  - a regular OUT is replaced atomically (a temporary file renamed over it); a symbolic link
//    is followed to its final target, which is replaced in its own directory, so the link
//    stays a link; a dangling link gets its target created;
//  - any other OUT is never unlinked or renamed over: it is opened and written in place, in
//    order, once the output is complete and checked (until then it is spooled to an unlinked
//    scratch file);
//  - an IN that is not a regular file is read to its end into an unlinked scratch file first,
//    and then sorted as a file of that size (out of core past the budgets, as any file);
//  - scratch (spools, out-of-core runs) sits beside OUT's final target, or in --tmp DIR; when
//    OUT is a stream, in --tmp DIR, else $TMPDIR, else /tmp.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusort/error.hpp"
#include "file_io.hpp"
#include "progress_sink.hpp"

namespace gpusort::detail::external {

// The descriptor a file argument names by itself: `-` (dash_fd: 0 for IN, 1 for OUT),
// /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N; -1 for any other path.
// Such a descriptor is used as it is (its offset and O_APPEND too), never reopened by name.
constexpr int named_descriptor(std::string_view path, int dash_fd) {
  if (path == "-") return dash_fd;
  if (path == "/dev/stdin") return 0;
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string_view prefix : {std::string_view("/dev/fd/"), std::string_view("/proc/self/fd/")}) {
    if (!path.starts_with(prefix) || path.size() == prefix.size()) continue;
    int fd = 0;
    for (const char c : path.substr(prefix.size())) {
      if (c < '0' || c > '9' || fd > 100'000'000) return -1;
      fd = fd * 10 + (c - '0');
    }
    return fd;
  }
  return -1;
}

// Whether a symbolic link with owner `link_owner` in a directory described by `dir` may be
// followed: the kernel's rule for open() under fs.protected_symlinks, which following a link
// by hand would bypass. In a sticky world-writable directory (/tmp) only links owned by the
// follower or by the directory's owner are followed.
constexpr bool may_follow_link(unsigned dir_mode, unsigned dir_owner, unsigned link_owner,
                               unsigned follower) {
  const bool sticky_world_writable = (dir_mode & S_ISVTX) != 0 && (dir_mode & S_IWOTH) != 0;
  return !sticky_world_writable || link_owner == follower || link_owner == dir_owner;
}

// Whether an existing regular file or FIFO with owner `file_owner`, in a directory described by
// `dir`, may be opened for writing by `writer`: the kernel's rule for open(O_CREAT) under
// fs.protected_regular and fs.protected_fifos (level 2, the strict one), kept by hand because
// the tool writes a regular OUT by renaming over it, which the rule does not see, and root
// would bypass permissions anyway. In a sticky directory that others may write into (/tmp),
// only files owned by the writer or by the directory's owner are written; another user's file
// planted there is refused.
constexpr bool may_write_existing(unsigned dir_mode, unsigned dir_owner, unsigned file_owner,
                                  unsigned writer) {
  const bool sticky_shared = (dir_mode & S_ISVTX) != 0 && (dir_mode & (S_IWOTH | S_IWGRP)) != 0;
  return !sticky_shared || file_owner == writer || file_owner == dir_owner;
}

// Why this process may not write the file at `file` that `info` describes (may_write_existing
// for a regular file or a FIFO), or "" when it may.
inline std::string sticky_refusal(const std::filesystem::path& file, const struct stat& info) {
  if (!(S_ISREG(info.st_mode) || S_ISFIFO(info.st_mode))) return "";
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  struct stat dir_info {};
  if (::stat(dir.c_str(), &dir_info) != 0 ||
      may_write_existing(dir_info.st_mode, dir_info.st_uid, info.st_uid, ::geteuid()))
    return "";
  return "not writing to " + file.string() + " (owned by uid " + std::to_string(info.st_uid) +
         " in a sticky directory others may write into, as the kernel would not)";
}

// invalid_request naming `shown` when sticky_refusal refuses the file at `file`.
inline void check_sticky_writable(const std::filesystem::path& file, const std::string& shown) {
  struct stat info {};
  if (::lstat(file.c_str(), &info) != 0) return;
  if (const std::string why = sticky_refusal(file, info); !why.empty())
    throw invalid_request(shown + ": " + why);
}

// The file that `path` finally names, following symbolic links (a relative one from its own
// directory); `path` itself when it is no link. The target need not exist (a dangling link).
// A link that may_follow_link refuses is an invalid_request naming it.
inline std::filesystem::path final_target(const std::filesystem::path& path) {
  std::filesystem::path at = path;
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit
    struct stat info {};
    if (::lstat(at.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return at;
    const std::filesystem::path dir = at.has_parent_path() ? at.parent_path() : ".";
    struct stat dir_info {};
    if (::stat(dir.c_str(), &dir_info) != 0 ||
        !may_follow_link(dir_info.st_mode, dir_info.st_uid, info.st_uid, ::geteuid()))
      throw invalid_request(path.string() + ": not following the symbolic link " + at.string() +
                            " (owned by uid " + std::to_string(info.st_uid) +
                            " in a sticky world-writable directory, as the kernel would not)");
    std::error_code ec;
    const std::filesystem::path link = std::filesystem::read_symlink(at, ec);
    if (ec) throw invalid_request(path.string() + ": " + ec.message());
    at = link.is_absolute() ? link : at.parent_path() / link;
  }
  throw invalid_request(path.string() + ": too many levels of symbolic links");
}

// The name scratch of an output called `name` is named after: the name itself, or, where the
// longest scratch name (".NAME.runs<pid>-<k>", a pid of up to 10 digits and k of up to 3)
// would pass NAME_MAX (255 bytes), "gpusort-" and a hash of the name.
inline std::string scratch_stem(std::string_view name) {
  constexpr std::size_t name_max = 255, longest_suffix = 1 + 5 + 10 + 1 + 3;
  if (name.size() + longest_suffix <= name_max) return std::string(name);
  std::uint64_t hash = 0xcbf29ce484222325;  // FNV-1a
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return "gpusort-" + std::string(hex);
}

// A scratch name of an output: "." + stem + kind + "<pid>-<attempt>", kind ".tmp" (a pending
// output) or ".runs" (out-of-core runs).
inline std::string scratch_name(std::string_view output_name, std::string_view kind, int attempt) {
  return "." + scratch_stem(output_name) + std::string(kind) + std::to_string(::getpid()) + "-" +
         std::to_string(attempt);
}

// Which scratch name `entry` is, if any, of an output whose scratch_stem is `stem`:
// ".STEM.tmp<pid>-<k>" (a pending output) or ".STEM.runs<pid>-<k>" (out-of-core runs); the
// pid, or 0 for none.
constexpr long scratch_owner_pid(std::string_view entry, std::string_view stem) {
  const std::string_view kinds[] = {".tmp", ".runs"};
  if (!entry.starts_with('.') || entry.substr(1, stem.size()) != stem) return 0;
  std::string_view rest = entry.substr(1 + stem.size());
  for (const std::string_view kind : kinds) {
    if (!rest.starts_with(kind)) continue;
    rest.remove_prefix(kind.size());
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash + 1 == rest.size()) return 0;
    long pid = 0;
    for (const char c : rest.substr(0, dash)) {
      if (c < '0' || c > '9' || pid > 100'000'000) return 0;
      pid = pid * 10 + (c - '0');
    }
    for (const char c : rest.substr(dash + 1))
      if (c < '0' || c > '9') return 0;
    return pid;
  }
  return 0;
}

// Scratch is claimed by a lock, not by its pid: a pid says nothing across PID namespaces
// (containers) or hosts that share the file system. A live run holds flock(LOCK_EX) on each
// scratch entry it created (its pending output, its runs directory) as long as it lives; the
// kernel drops the lock however the run ends, SIGKILL included.
//
// Whether `fd`, just opened on the entry at `path`, is locked by this process and still the
// entry at `path`: a run that removed it as stale (remove_stale_scratch) between its creation
// and this lock leaves the caller a file with no name, and it must take another.
inline bool lock_scratch(int fd, const std::filesystem::path& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return errno != EWOULDBLOCK && errno != EINTR;  // no locks here: unclaimed
  struct stat opened {}, named {};
  return ::fstat(fd, &opened) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

// Removes what a killed run (SIGKILL, the OOM killer) left for an output `anchor`: its scratch
// names (scratch_owner_pid) owned by this user that no live run holds a lock on. An entry is
// locked first and removed under the lock, so that a run that creates one of the same name
// meanwhile sees it go (lock_scratch). Where the file system takes no locks nothing is
// removed. Best effort: what cannot be removed stays.
inline void remove_stale_scratch(const std::filesystem::path& anchor) {
  namespace fs = std::filesystem;
  const fs::path dir = anchor.has_parent_path() ? anchor.parent_path() : fs::path(".");
  const std::string stem = scratch_stem(anchor.filename().string());
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (scratch_owner_pid(it->path().filename().string(), stem) <= 0) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || info.st_uid != ::geteuid() ||
        !(S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)))
      continue;
    const int flags = O_NOFOLLOW | O_CLOEXEC | (S_ISDIR(info.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDWR);
    const int fd = ::open(it->path().c_str(), flags);
    if (fd < 0) continue;
    struct stat opened {}, named {};
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &opened) == 0 &&
        ::lstat(it->path().c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
        opened.st_ino == named.st_ino) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);  // never follows a link inside
    }
    ::close(fd);
  }
}

// The mode open(path, O_CREAT, 0666) gives a new file: what the umask leaves. Read from
// /proc/self/status where it can be, since umask() can only be read by setting it, which
// would race other threads creating files.
inline mode_t new_file_mode() {
  mode_t mask = 022;
  bool found = false;
  if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (!found && std::fgets(line, sizeof line, status))
      if (std::strncmp(line, "Umask:", 6) == 0)
        found = std::sscanf(line + 6, "%o", &mask) == 1;
    std::fclose(status);
  }
  if (!found) {
    mask = ::umask(022);
    ::umask(mask);
  }
  return 0666 & ~mask;
}

// Where scratch goes when OUT is a stream, or for a command with no OUT: --tmp DIR, else
// $TMPDIR, else /tmp.
inline std::filesystem::path stream_scratch_dir(const std::string& tmp_option) {
  if (!tmp_option.empty()) return tmp_option;
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

// A new read-write file in `dir` that has no name (O_TMPFILE, else created and unlinked at
// once), so that nothing is left behind however the process ends; its descriptor.
inline int create_unlinked_file(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string name = (dir / ".gpusort-spool-XXXXXX").string();
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0)
    throw invalid_request(dir.string() + ": cannot create a scratch file there: " +
                      std::strerror(errno));
  return fd;
}

// Writes all `size` bytes to a stream in order, retrying short writes; the errno of a failure.
inline int write_all(int fd, const unsigned char* data, std::uint64_t size) {
  while (size > 0) {
    const ssize_t put = ::write(fd, data, size);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return put == 0 ? EIO : errno;
    data += put;
    size -= static_cast<std::uint64_t>(put);
  }
  return 0;
}

// Copies what `from` holds from its start, to its end, to the stream `to`, in order; io_failure
// naming `to_name` (and the real error: ENOSPC as "no space left on device") on failure.
inline void copy_to_stream(int from, int to, const std::string& to_name) {
  std::vector<unsigned char> buffer(std::size_t{1} << 20);
  for (off_t at = 0;;) {
    const ssize_t got = ::pread(from, buffer.data(), buffer.size(), at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw io_failure(to_name + ": reading its scratch file failed: " + std::strerror(errno));
    if (got == 0) return;
    if (const int error = write_all(to, buffer.data(), static_cast<std::uint64_t>(got)))
      throw io_failure(to_name + ": write failed: " + io_detail::io_failure_text(error));
    at += got;
  }
}

// Whether two descriptors are the same file (a pipe, a terminal, a file).
inline bool same_file(int a, int b) {
  struct stat x {}, y {};
  return ::fstat(a, &x) == 0 && ::fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

// `text` quoted for a message: in single quotes, bytes outside printable ASCII (and the
// backslash) as \xNN, and at most `limit` bytes of it, then "..." and its length: a 50 MB
// token, a binary file read as text or a NUL byte must not reach a terminal or cut a message.
inline std::string quote_input(std::string_view text, std::size_t limit = 40) {
  std::string out = "'";
  for (const char c : text.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out += c;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  out += "'";
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// A message made safe for one line on a terminal: control bytes (a newline in a file name, an
// escape sequence) as \xNN, and no more than `limit` bytes.
inline std::string one_line(std::string_view message, std::size_t limit = 4096) {
  std::string out;
  for (const char c : message.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  if (message.size() > limit) out += "...";
  return out;
}

// The names the user gave to paths that the tool opens under other names (a spooled stream's
// /proc/self/fd/N), so that messages speak of what the user typed.
class shown_names {
 public:
  static void add(std::string internal, std::string shown) {
    const std::lock_guard lock(mutex());
    names().emplace_back(std::move(internal), std::move(shown));
  }
  static std::string in(std::string message) {
    const std::lock_guard lock(mutex());
    for (const auto& [internal, shown] : names())
      for (std::size_t at = 0; (at = message.find(internal, at)) != std::string::npos;
           at += shown.size())
        message.replace(at, internal.size(), shown);
    return message;
  }

 private:
  static std::vector<std::pair<std::string, std::string>>& names() {
    static std::vector<std::pair<std::string, std::string>> list;
    return list;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
};

// A descriptor closed when it goes.
struct unique_fd {
  int fd = -1;
  explicit unique_fd(int descriptor) : fd(descriptor) {}
  ~unique_fd() {
    if (fd >= 0) ::close(fd);
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
};

// Whether a stream being spooled into `spool_fd` must stop before it fills the scratch file
// system: past this fraction of it free, an endless stream (`yes`, /dev/zero) fails while
// the file system still has room for everyone else.
inline constexpr std::uint64_t spool_reserve_divisor = 20;  // 5%

inline bool spool_would_fill(int spool_fd) {
  struct statvfs fs {};
  if (::fstatvfs(spool_fd, &fs) != 0 || fs.f_blocks == 0) return false;
  return fs.f_bavail < fs.f_blocks / spool_reserve_divisor;
}

// A file argument to read. A regular file (or a missing one, which the reader reports) is
// read under its own name. A stream is read to its end first into an unlinked file in
// `spool_dir`, and path() names that copy (/proc/self/fd/N), which is a regular file of known
// size to every reader, pread and out of core included. A stream longer than `max_bytes`, or
// one that would leave less than 5% of the scratch file system free, is invalid_request.
class input_source {
 public:
  input_source(std::string name, const std::filesystem::path& spool_dir, progress_sink& meter,
               std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max())
      : name_(std::move(name)), path_(name_) {
    if (name_.empty()) throw invalid_request("an empty input file name");
    int stream = -1;
    if (const int fd = named_descriptor(name_, STDIN_FILENO); fd >= 0) {
      stream = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (stream < 0) throw invalid_request(name_ + ": cannot read it: " + std::strerror(errno));
    } else {
      struct stat info {};
      if (::stat(name_.c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode))
        return;  // the readers report a missing file or a directory as before
      stream = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
      if (stream < 0) throw invalid_request(name_ + ": cannot open: " + std::strerror(errno));
    }
    const unique_fd from(stream);
    spool_.fd = create_unlinked_file(spool_dir);
    meter.phase("reading", false);
    std::vector<unsigned char> buffer(std::size_t{1} << 20);
    constexpr std::uint64_t space_check_bytes = std::uint64_t{64} << 20;
    for (std::uint64_t at = 0;;) {
      const ssize_t got = ::read(stream, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw io_failure(name_ + ": read failed: " + std::strerror(errno));
      if (got == 0) break;
      if (static_cast<std::uint64_t>(got) > max_bytes - at)
        throw invalid_request(name_ + ": the stream is longer than the limit of " +
                              std::to_string(max_bytes) + " bytes (--max-input)");
      if (at / space_check_bytes != (at + got) / space_check_bytes && spool_would_fill(spool_.fd))
        throw invalid_request(name_ + ": the stream stopped after " + std::to_string(at) +
                              " bytes: its copy would leave less than 5% of " +
                              spool_dir.string() + "'s file system free (--tmp DIR puts it elsewhere)");
      write_at(spool_.fd, at, buffer.data(), static_cast<std::uint64_t>(got),
               spool_dir.string() + " (the copy of " + name_ + ")");
      at += static_cast<std::uint64_t>(got);
    }
    path_ = "/proc/self/fd/" + std::to_string(spool_.fd);
    shown_names::add(path_, name_);
  }
  input_source(const input_source&) = delete;
  input_source& operator=(const input_source&) = delete;

  // The path to open: the file itself, or the copy of a stream.
  const std::string& path() const { return path_; }
  bool spooled() const { return spool_.fd >= 0; }

 private:
  std::string name_, path_;
  unique_fd spool_{-1};
};

}  // namespace gpusort::detail::external
