// The exceptions of the library: `error` of the convenience layer (the core layer returns
// cudaError_t instead), and the failures of work on files (out of core, record files).
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace gpusort {

class error : public std::runtime_error {
 public:
  error(cudaError_t code, const std::string& message)
      : std::runtime_error(message + " (" + cudaGetErrorName(code) + ")"), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// A request that cannot be done as asked: an input that is missing, unreadable or malformed,
// an output that cannot be created, budgets too small. Raised before anything is written.
class invalid_request : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A read or write that failed midway (a full disk, an I/O error). The output is not replaced
// and the scratch files are removed.
class io_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A sort whose result failed the checks made before an output is written (records out of
// order, or not the input's records): nothing was written. A bug: please report it.
class wrong_result : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Work stopped because the caller asked (external_options::cancel): nothing was written and
// the scratch files are removed.
class cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpusort
