// Runs python/gpusort/plot.py for `gpusort plot` and `gpusort bench --plot`. See plot.hpp.
#include "plot.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace gpusort::tools {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

bool holds_plotter(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::is_regular_file(
                             std::filesystem::path(dir) / "gpusort" / "plot.py", ec);
}

// The folder to put on PYTHONPATH, or "" to leave the interpreter's own search path alone.
std::string package_dir() {
  if (const char* dir = std::getenv("GPUSORT_PYTHON_DIR"); dir && *dir) return dir;
#ifdef GPUSORT_SOURCE_PYTHON_DIR
  // A build used where it was made: the sources, so that edits to plot.py need no install.
  if (holds_plotter(GPUSORT_SOURCE_PYTHON_DIR)) return GPUSORT_SOURCE_PYTHON_DIR;
#endif
#ifdef GPUSORT_INSTALL_PYTHON_DIR
  if (holds_plotter(GPUSORT_INSTALL_PYTHON_DIR)) return GPUSORT_INSTALL_PYTHON_DIR;
#endif
  return "";
}

// The last line of `text` with something on it.
std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.remove_suffix(1);
  const std::size_t start = text.rfind('\n');
  return std::string(start == std::string_view::npos ? text : text.substr(start + 1));
}

struct pipe_pair {
  int fds[2] = {-1, -1};
  ~pipe_pair() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void close_write() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

// $GPUSORT_PYTHON, else the interpreter CMake found if it is still there, else python3.
std::string interpreter() {
  std::string fallback = "python3";
#ifdef GPUSORT_CONFIGURED_PYTHON
  if (::access(GPUSORT_CONFIGURED_PYTHON, X_OK) == 0) fallback = GPUSORT_CONFIGURED_PYTHON;
#endif
  return env_or("GPUSORT_PYTHON", fallback);
}

}  // namespace

plot_outcome run_plotter(const std::string& csv_path, const std::string& dir) {
  plot_outcome outcome;
  const std::string python = interpreter();
  const std::string path_dir = package_dir();
  const std::string command = python + " -m gpusort.plot";
  const std::string hint =
      "; set GPUSORT_PYTHON to a Python 3 with matplotlib (Debian: apt-get install "
      "python3-matplotlib)";

  // The environment as it is, with the package on PYTHONPATH; no bytecode files written into
  // the source or install tree.
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view e = *entry;
    if (!e.starts_with("PYTHONDONTWRITEBYTECODE=") &&
        !(e.starts_with("PYTHONPATH=") && !path_dir.empty()))
      env.emplace_back(e);
  }
  env.emplace_back("PYTHONDONTWRITEBYTECODE=1");
  if (!path_dir.empty()) {
    const std::string old = env_or("PYTHONPATH", "");
    env.push_back("PYTHONPATH=" + path_dir + (old.empty() ? "" : ":" + old));
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::string module = "gpusort.plot", m = "-m", csv = csv_path, out_dir = dir;
  std::string program = python;
  std::array<char*, 6> argv{program.data(), m.data(), module.data(), csv.data(), out_dir.data(),
                            nullptr};

  // Its stdout (the paths) and stderr (messages) come back through pipes: bench reprints
  // the paths in its own words, and a failure to start is reported in ours.
  pipe_pair out, err;
  if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0) {
    outcome.error = "cannot run " + command + ": " + std::strerror(errno);
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    outcome.error = "cannot run " + command + ": " + std::strerror(spawned) + hint;
    return outcome;
  }
  out.close_write();
  err.close_write();

  // Both pipes are drained together, so that a child filling one never waits on the other.
  std::string stdout_text, stderr_text;
  std::array<pollfd, 2> polled{{{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}}};
  std::array<std::string*, 2> texts{&stdout_text, &stderr_text};
  for (int open = 2; open > 0;) {
    if (::poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].fd < 0 || polled[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = ::read(polled[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        texts[i]->append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        polled[i].fd = -1;  // poll skips negative descriptors
        --open;
      }
    }
  }
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }

  for (std::size_t start = 0; start < stdout_text.size();) {
    std::size_t end = stdout_text.find('\n', start);
    if (end == std::string::npos) end = stdout_text.size();
    if (end > start) outcome.figures.push_back(stdout_text.substr(start, end - start));
    start = end + 1;
  }
  if (WIFSIGNALED(wait_status)) {
    outcome.error = command + " ended by signal " + std::to_string(WTERMSIG(wait_status));
    return outcome;
  }
  const int status = WEXITSTATUS(wait_status);
  if (status == 0 || status == 2 || status == 3) {
    outcome.status = status;
    outcome.error = stderr_text;
    return outcome;
  }
  // Anything else is Python failing before the plotter ran (no such module: exit 1) or a
  // crash inside it; its last line says what.
  outcome.error = command + " failed (exit status " + std::to_string(status) +
                  (path_dir.empty() ? "" : ", PYTHONPATH " + path_dir) +
                  "): " + last_line(stderr_text);
  return outcome;
}

}  // namespace gpusort::tools
