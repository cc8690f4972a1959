// The exception of the convenience layer. The core layer returns cudaError_t instead.
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

}  // namespace gpusort
