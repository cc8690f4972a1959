// Offset validation and messages of the batched and segmented sorts (key-type independent).
#include <string>

#include "gpusort/segmented.hpp"

namespace gpusort::detail {
namespace {
constexpr int check_threads = 256;

__global__ void find_invalid_kernel(segment_list segs, std::uint64_t n,
                                    unsigned long long* first_invalid) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * check_threads + threadIdx.x;
  if (i < segs.count && !segs.valid(i, n)) atomicMin(first_invalid, i);
}
}  // namespace

cudaError_t find_invalid_segment(const segment_list& segs, std::uint64_t n, cudaStream_t stream,
                                 invalid_segment& found) {
  found = {segs.count, 0, 0};
  if (segs.batched() || segs.count == 0) return cudaSuccess;
  unsigned long long* d_first = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&d_first), sizeof(*d_first), stream);
  if (e != cudaSuccess) return e;
  const unsigned long long none = segs.count;
  unsigned long long first = none;
  e = cudaMemcpyAsync(d_first, &none, sizeof(none), cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) {
    const auto blocks = static_cast<unsigned>((segs.count + check_threads - 1) / check_threads);
    find_invalid_kernel<<<blocks, check_threads, 0, stream>>>(segs, n, d_first);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(&first, d_first, sizeof(first), cudaMemcpyDeviceToHost, stream);
  cudaFreeAsync(d_first, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess || first >= segs.count) return e;
  // Read the offending pair for the message.
  found.index = first;
  const auto* begin = static_cast<const char*>(segs.begin) + first * segs.offset_bytes;
  const auto* end = static_cast<const char*>(segs.end) + first * segs.offset_bytes;
  std::uint64_t b = 0, en = 0;  // little-endian: the low bytes hold a 4-byte offset
  e = cudaMemcpy(&b, begin, segs.offset_bytes, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(&en, end, segs.offset_bytes, cudaMemcpyDeviceToHost);
  found.begin = b;
  found.end = en;
  return e;
}

invalid_segment find_invalid_segment_host(const segment_list& segs, std::uint64_t n) {
  if (!segs.batched())
    for (std::uint64_t i = 0; i < segs.count; ++i)
      if (!segs.valid(i, n)) return {i, segs.first(i), segs.last(i)};
  return {segs.count, 0, 0};
}

[[noreturn]] void throw_invalid_segment(const std::string& call, const invalid_segment& bad,
                                        std::uint64_t n) {
  const std::string range =
      "[" + std::to_string(bad.begin) + ", " + std::to_string(bad.end) + ")";
  const std::string why = bad.end < bad.begin ? "ends before it begins"
                                              : "ends past the " + std::to_string(n) + " keys";
  throw_error(cudaErrorInvalidValue, call + ": segment " + std::to_string(bad.index) + " " +
                                         range + " " + why + "; no key was moved");
}

std::string describe_segments(const char* function, const options& opt,
                              std::string_view key_type, std::uint64_t n,
                              std::uint64_t segments) {
  return std::string(function) + "(" + std::string(to_string(opt.algo)) + ", " +
         std::string(key_type) + ", n = " + std::to_string(n) +
         ", segments = " + std::to_string(segments) + ")";
}

}  // namespace gpusort::detail
