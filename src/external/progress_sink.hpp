// How long file work reports progress: named phases, each counted (done of total units) or
// not (one long call). The tool draws its progress line from these calls; a library caller
// gets them through external_options' callback. The default sink reports nothing.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpusort::detail::external {

class progress_sink {
 public:
  virtual ~progress_sink() = default;
  // A new phase: counted ones report advance(done, total) as they go.
  virtual void phase(std::string_view /*name*/, bool /*counted*/) {}
  virtual void advance(std::uint64_t /*done*/, std::uint64_t /*total*/) {}
  // The work is over (or failed): nothing more will be reported.
  virtual void finish() {}
  // A run is sorted and stored: `runs` of them so far (possibly from a worker thread). The
  // point where a test injects a fault (the tool's GPUSORT_TEST_INTERRUPT_AFTER_RUNS).
  virtual void run_written(std::uint64_t /*runs*/) {}
};

// A sink for calls that report nothing.
inline progress_sink& silent_progress() {
  static progress_sink silent;
  return silent;
}

}  // namespace gpusort::detail::external
