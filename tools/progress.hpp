// The progress line of the file commands (gen, sort, check) on stderr: the phase, then a bar
// and percent for work done in pieces (reading, writing) or a spinner for one long call
// (sorting), and the phase's time. Drawn only when stderr is a terminal and only once the
// command has run for a second, so that pipes, logs and quick commands see nothing; the
// line is erased when the command is done. GPUSORT_PROGRESS=0 turns it off, =1 draws it
// always and at once (the tests' way to see it).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "progress_sink.hpp"

namespace gpusort::tools {

// One frame of the line. `fraction` in [0, 1] draws a bar and percent; below 0 (work not
// counted) a spinner, turned by `frame`:
//   "reading  [###############...............]  50%  2.1 s"
//   "sorting  /  3.4 s"
inline std::string progress_line(std::string_view phase, double fraction, double seconds,
                                 unsigned frame) {
  constexpr std::size_t phase_width = 8, bar_width = 30;
  std::string line(phase);
  line.resize(std::max(line.size(), phase_width) + 1, ' ');
  if (fraction < 0) {
    line += "|/-\\"[frame % 4];
  } else {
    fraction = std::min(fraction, 1.0);
    const auto filled = static_cast<std::size_t>(fraction * bar_width);
    line += '[' + std::string(filled, '#') + std::string(bar_width - filled, '.') + ']';
    char percent[8];
    std::snprintf(percent, sizeof percent, " %3d%%", static_cast<int>(fraction * 100));
    line += percent;
  }
  char time[32];
  std::snprintf(time, sizeof time, "  %.1f s", seconds);
  return line + time;
}

struct progress_settings {
  bool enabled = false;
  std::chrono::milliseconds delay{1000};  // how long the command runs before the line shows
};

// The settings for a GPUSORT_PROGRESS value (null when unset) and stderr being a terminal.
inline progress_settings progress_settings_for(const char* env_value, bool stderr_is_terminal) {
  const std::string_view value = env_value ? env_value : "";
  if (value == "0") return {.enabled = false};
  if (value == "1") return {.enabled = true, .delay = std::chrono::milliseconds{0}};
  return {.enabled = stderr_is_terminal};
}

// A count in the environment variable `name`; 0 when unset or not a count.
inline std::uint64_t runs_from_environment(const char* name) {
  const char* value = std::getenv(name);
  std::uint64_t runs = 0;
  if (!value) return 0;
  const char* end = value + std::strlen(value);
  const auto [stop, ec] = std::from_chars(value, end, runs);
  return ec == std::errc{} && stop == end ? runs : 0;
}

inline progress_settings progress_settings_from_environment() {
  return progress_settings_for(std::getenv("GPUSORT_PROGRESS"), ::isatty(STDERR_FILENO) == 1);
}

// The line itself: the command names its phases and counts the work of counted ones; a
// ticker thread redraws every 100 ms once the delay has passed, so that a single long call
// still shows time passing. Disabled, it does nothing and starts no thread.
class progress final : public gpusort::detail::external::progress_sink {
 public:
  using clock = std::chrono::steady_clock;

  explicit progress(progress_settings settings = progress_settings_from_environment(),
                    std::FILE* out = stderr)
      : enabled_(settings.enabled),
        out_(out),
        shown_from_(clock::now() + settings.delay),
        interrupt_after_runs_(runs_from_environment("GPUSORT_TEST_INTERRUPT_AFTER_RUNS")),
        phase_start_(clock::now()) {
    if (!enabled_) return;
    ticker_ = std::thread([this] { tick(); });
    const std::lock_guard registry(registry_mutex_);
    active_ = this;
  }
  ~progress() override { finish(); }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  // A new phase: counted ones show a bar (from 0 until advance), others a spinner.
  void phase(std::string_view name, bool counted) override {
    if (!enabled_) return;
    const std::lock_guard lock(mutex_);
    phase_ = name;
    fraction_.store(counted ? 0.0 : -1.0, std::memory_order_relaxed);
    phase_start_ = clock::now();
    if (phase_start_ >= shown_from_) draw();
  }

  // Counted work: `done` of `total` units; drawn by the next tick.
  void advance(std::uint64_t done, std::uint64_t total) override {
    if (enabled_)
      fraction_.store(total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total),
                      std::memory_order_relaxed);
  }

  // The tests' fault: SIGINT once GPUSORT_TEST_INTERRUPT_AFTER_RUNS runs are written, to check
  // that an interruption leaves nothing behind. The tool's alone: the library reads no test
  // variable and only calls this hook.
  void run_written(std::uint64_t runs) override {
    if (runs == interrupt_after_runs_) std::raise(SIGINT);
  }

  // Stops the ticker and erases the line, so that what is printed next starts clean.
  void finish() override {
    if (!ticker_.joinable()) return;
    {
      const std::lock_guard registry(registry_mutex_);
      if (active_ == this) active_ = nullptr;
    }
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    ticker_.join();
    erase();
    std::fflush(out_);
  }

  // A line for the user on stderr (the library's notices) while a progress line may show: the
  // frame is erased first, and the next tick draws it again below the message.
  static void print_line(std::string_view text) {
    const std::lock_guard registry(registry_mutex_);
    std::FILE* out = stderr;
    std::unique_lock<std::mutex> drawing;
    if (active_) {
      drawing = std::unique_lock(active_->mutex_);
      active_->erase();
      out = active_->out_;
    }
    std::fprintf(out, "%.*s\n", static_cast<int>(text.size()), text.data());
    std::fflush(out);
  }

 private:
  void tick() {
    std::unique_lock lock(mutex_);
    if (wake_.wait_until(lock, shown_from_, [this] { return stopping_; })) return;
    do {
      draw();
    } while (!wake_.wait_for(lock, std::chrono::milliseconds{100}, [this] { return stopping_; }));
  }

  // Under mutex_: the frame, padded to cover a longer one drawn before. The cursor goes back
  // to the line's start, so that a message someone else prints meanwhile (the library's
  // notice that it sorts on the CPU) covers the frame instead of being appended to it.
  // Under mutex_ (or once the ticker stopped): blanks over the frame, the cursor at its start.
  void erase() {
    if (drawn_width_ > 0) std::fprintf(out_, "\r%s\r", std::string(drawn_width_, ' ').c_str());
  }

  void draw() {
    const std::chrono::duration<double> seconds = clock::now() - phase_start_;
    std::string line = progress_line(phase_, fraction_.load(std::memory_order_relaxed),
                                     seconds.count(), frame_++);
    drawn_width_ = std::max(drawn_width_, line.size());
    line.resize(drawn_width_, ' ');
    std::fprintf(out_, "\r%s\r", line.c_str());
    std::fflush(out_);
  }

  const bool enabled_;
  std::FILE* const out_;
  const clock::time_point shown_from_;
  const std::uint64_t interrupt_after_runs_;  // 0: never
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  clock::time_point phase_start_;
  std::atomic<double> fraction_{-1.0};
  unsigned frame_ = 0;
  std::size_t drawn_width_ = 0;
  bool stopping_ = false;
  std::thread ticker_;
  // The line drawn now, for print_line; one at a time (a command draws one).
  inline static std::mutex registry_mutex_;
  inline static progress* active_ = nullptr;
};

}  // namespace gpusort::tools
