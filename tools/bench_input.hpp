// The inputs of the benchmark's runs, and the device memory that holds them. A point's input
// arrays are generated on the host one after another; on a GPU each is copied once to pristine
// device buffers, and every run restores the work buffers from them (not timed), so that each
// run sorts the same records. Device memory may fail to come: then the point or the algorithm
// is skipped, with the reason, and the benchmark goes on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"  // the file machinery's names
#include "records.hpp"  // records, record_bytes

namespace gpusort::tools {

inline constexpr double mib = 1024.0 * 1024.0;

// Throws gpusort::error naming `what` if e is not cudaSuccess.
void cuda_check(cudaError_t e, const char* what);

// The current device's properties.
cudaDeviceProp device_properties();

// Device memory that may fail to come: then failed() and the point or algorithm is skipped.
class device_memory {
 public:
  explicit device_memory(std::size_t bytes);
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  bool failed() const { return failed_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  bool failed_ = false;
};

// Device buffers for `count` records: keys, and u32 values for pairs.
template <class K>
struct device_records {
  device_memory keys, values;
  device_records(std::uint64_t count, bool pairs)
      : keys(count * sizeof(K)), values(pairs ? count * 4 : 0) {}
  bool failed() const { return keys.failed() || values.failed(); }
};

template <class K>
records<K> copy_to_host(const device_memory& keys, const device_memory& values,
                        std::uint64_t count, bool pairs) {
  records<K> out{std::vector<K>(count), std::vector<std::uint32_t>(pairs ? count : 0), pairs};
  cuda_check(cudaMemcpy(out.keys.data(), keys.as<K>(), count * sizeof(K), cudaMemcpyDeviceToHost),
             "copy from the device");
  if (pairs)
    cuda_check(cudaMemcpy(out.values.data(), values.as<std::uint32_t>(), count * 4,
                          cudaMemcpyDeviceToHost),
               "copy from the device");
  return out;
}

// The seed of a point's input array: --seed itself for the first (so that one array is the
// input of earlier versions), then seeds drawn from it, one per array.
std::uint64_t array_seed(std::uint64_t seed, int array);

// The values of pairs: each key's original index.
std::vector<std::uint32_t> original_indices(std::uint64_t n);

// Below 2^32 keys the segment offsets go to the device as u32, else as u64.
inline constexpr std::uint64_t narrow_offsets_below = std::uint64_t{1} << 32;

// A point's input on the device (pristine), the work buffers each run sorts, and the offsets
// of the current segment layout.
template <class K>
class device_input {
 public:
  device_input(std::uint64_t n, bool pairs)
      : pristine_keys_(n * sizeof(K)),
        pristine_values_(pairs ? n * 4 : 0),
        keys_(n * sizeof(K)),
        values_(pairs ? n * 4 : 0),
        n_(n),
        pairs_(pairs) {}
  bool failed() const {
    return pristine_keys_.failed() || pristine_values_.failed() || keys_.failed() ||
           values_.failed();
  }

  // The work buffers: what each run sorts in place, or reads.
  K* keys() const { return keys_.template as<K>(); }
  std::uint32_t* values() const { return values_.template as<std::uint32_t>(); }

  // Makes `input` (n records) the pristine input.
  void upload(const records<K>& input) {
    cuda_check(cudaMemcpy(pristine_keys_.template as<K>(), input.keys.data(), n_ * sizeof(K),
                          cudaMemcpyHostToDevice),
               "copy to the device");
    if (pairs_)
      cuda_check(cudaMemcpy(pristine_values_.template as<std::uint32_t>(), input.values.data(),
                            n_ * 4, cudaMemcpyHostToDevice),
                 "copy to the device");
  }

  // The layout's offsets on the device, as u32 below 2^32 keys, else u64 (batches too:
  // sort_segmented_offsets sorts them through offsets). False if they do not fit.
  bool upload_offsets(const std::vector<std::uint64_t>& host_offsets) {
    const auto upload = [&](const auto& host) {
      const std::size_t bytes = host.size() * sizeof(host[0]);
      offsets_ = std::make_unique<device_memory>(bytes);
      if (!offsets_->failed())
        cuda_check(cudaMemcpy(offsets_->template as<void>(), host.data(), bytes,
                              cudaMemcpyHostToDevice),
                   "copy to the device");
    };
    offsets_.reset();  // the previous layout's first
    if (n_ < narrow_offsets_below)
      upload(std::vector<std::uint32_t>(host_offsets.begin(), host_offsets.end()));
    else
      upload(host_offsets);
    return !offsets_->failed();
  }

  // Calls f with the device offsets, typed as upload_offsets stored them.
  template <class F>
  auto with_offsets(F&& f) const {
    if (n_ < narrow_offsets_below) return f(offsets_->template as<const std::uint32_t>());
    return f(offsets_->template as<const std::uint64_t>());
  }

  // Queues the copy of the pristine input over the work buffers on `stream`.
  void restore(cudaStream_t stream) {
    cuda_check(cudaMemcpyAsync(keys(), pristine_keys_.template as<K>(), n_ * sizeof(K),
                               cudaMemcpyDeviceToDevice, stream),
               "restoring the input");
    if (pairs_)
      cuda_check(cudaMemcpyAsync(values(), pristine_values_.template as<std::uint32_t>(), n_ * 4,
                                 cudaMemcpyDeviceToDevice, stream),
                 "restoring the input");
  }

  // The work buffers on the host: what a sort in place made of the input.
  records<K> result() const { return copy_to_host<K>(keys_, values_, n_, pairs_); }

 private:
  device_memory pristine_keys_, pristine_values_, keys_, values_;
  std::unique_ptr<device_memory> offsets_;  // the layout's
  std::uint64_t n_;
  bool pairs_;
};

// The device buffers of a point of n records, or null and `why_not` says why they do not fit.
template <class K>
std::unique_ptr<device_input<K>> allocate_device_input(std::uint64_t n, bool pairs,
                                                       std::string& why_not) {
  std::size_t free_bytes = 0, total = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  const double need = 2.0 * static_cast<double>(n * record_bytes<K>(pairs));
  auto device = std::make_unique<device_input<K>>(n, pairs);
  if (!device->failed()) return device;
  char why[128];
  std::snprintf(why, sizeof why,
                "not enough device memory (%.0f MiB for input and work buffers, %.0f MiB free)",
                need / mib, static_cast<double>(free_bytes) / mib);
  why_not = why;
  return nullptr;
}

}  // namespace gpusort::tools
